"""The graph panel's controls for big graphs: which view, how deep the scope boxes go, which are
open, and the search that outlines matches on both sides.

The drawing itself is ``cached.stage_pair`` (views in present/scope_dot.py over analysis/scope.py);
this module only reads and draws widgets and says what the view shows.
"""

from __future__ import annotations

import streamlit as st

from ..model.experiment_parts import GRAPH_VIEWS
from ..present.dot import FOLDED_OPS
from ..present.dot_text import html_id
from ..present.scope_dot import LARGE
from . import state

VIEWS = dict(zip(GRAPH_VIEWS, ("automatic", "every node", "one box per layer", "fused regions only")))
VIEW_HELP = (f"automatic: every node, or one box per name scope (a Keras layer) when a side has more than {LARGE} "
             "nodes to draw. Every node: as TensorFlow has it. One box per layer: each name scope is a box with "
             "its op count, coloured by the most telling status inside (fused, absorbed, changed ...). Fused "
             "regions only: the nodes the fusions and renames involve, with their inputs and consumers dimmed.")
SEARCH_HELP = ("Part of a node's name or op type (case does not matter), e.g. 'conv2d_3' or 'Relu'. Matches are "
               "outlined in blue on both sides; a match inside a closed box outlines the box.")


def top_controls(view_col=None, find_col=None) -> tuple[str, str]:
    """The view choice and the search text (they do not depend on the drawing): on a row of their own, or in
    the columns given (the presenter view's one row of controls, where the view is a drop-down)."""
    if view_col is None:
        view_col, find_col = st.columns([7, 3], vertical_alignment="bottom")
        view = view_col.radio("View", list(VIEWS), key=state.GRAPH_VIEW, horizontal=True, format_func=VIEWS.get,
                              help=VIEW_HELP, persist_state=state.KEEP_HIDDEN)
    else:
        view = view_col.selectbox("View", list(VIEWS), key=state.GRAPH_VIEW, format_func=lambda v: f"view: {VIEWS[v]}",
                                  help=VIEW_HELP, label_visibility="collapsed", persist_state=state.KEEP_HIDDEN)
        return view, find_col.text_input("Find nodes", key=state.GRAPH_SEARCH, placeholder="Find nodes: name or op type",
                                         help=SEARCH_HELP, label_visibility="collapsed",
                                         persist_state=state.KEEP_HIDDEN)
    query = find_col.text_input("Find nodes", key=state.GRAPH_SEARCH, placeholder="name or op type, e.g. Conv2D",
                                help=SEARCH_HELP, persist_state=state.KEEP_HIDDEN)
    return view, query


def scope_settings() -> tuple[int, tuple[str, ...]]:
    """The depth and opened scopes as last set (their widgets are drawn after the drawing, by scope_controls)."""
    depth = int(st.session_state.get(state.GRAPH_DEPTH) or 1)
    opened = tuple(sorted(st.session_state.get(state.GRAPH_OPEN) or ()))
    return max(depth, 1), opened


def scope_controls(where, drawn: dict, auto: bool) -> None:
    """The depth slider, the scopes to open and the line that says what the boxes are."""
    counts = drawn["drawn"]
    boxes = dict(drawn["boxes"])
    opened = list(st.session_state.get(state.GRAPH_OPEN) or ())
    with where:
        why = (f"Large graph ({drawn['nodes']['before']} and {drawn['nodes']['after']} nodes), so " if auto else "")
        st.caption(f"{why}each name scope (a Keras layer) is drawn as one box ▸ with its op count: "
                   f"{counts['before']} shapes to draw before, {counts['after']} after. Open a box by picking it in "
                   "*Open scopes* (it shows what it holds, one level deeper), or choose *every node* above.")
        depth_col, open_col = st.columns([1, 3], vertical_alignment="bottom")
        if drawn["max_depth"] > 1:
            if st.session_state.get(state.GRAPH_DEPTH, 1) > drawn["max_depth"]:
                st.session_state[state.GRAPH_DEPTH] = drawn["max_depth"]
            depth_col.slider("Scope depth", 1, drawn["max_depth"], key=state.GRAPH_DEPTH,
                             persist_state=state.KEEP_HIDDEN,
                             help="1: one box per top-level scope under the model's own name (a Keras layer); "
                                  "more: smaller boxes, one per sub-scope.")
        options = sorted(set(boxes) | set(opened), key=lambda s: boxes.get(s, s))
        open_col.multiselect("Open scopes", options, key=state.GRAPH_OPEN, format_func=lambda s: boxes.get(s, s),
                             persist_state=state.KEEP_HIDDEN,
                             placeholder=f"pick one of the {len(boxes)} boxes to open it",
                             help="An opened scope shows its own nodes, and its sub-scopes as boxes.")


def fused_caption(drawn: dict) -> bool:
    """What the fused-regions view shows; False when there is nothing to show."""
    core = drawn["core"]
    if not core["before"] and not core["after"]:
        st.info("Nothing fused or renamed between these two stages, so the fused-regions view is empty: "
                "choose *every node* or *one box per layer*.")
        return False
    st.caption(f"Only the nodes the fusions and renames involve ({core['before']} before, {core['after']} after), "
               "with their immediate inputs and consumers dimmed; ⋯ N stands for N edges to nodes left out.")
    return True


def focus_marks(focus: dict, drawn: dict, fold: bool, pair: tuple[str, str]) -> list[str]:
    """Element ids of what a lesson's step points at: ``focus`` maps a stage ("traced", "optimized",
    "executed") or "any" to op types or node names, each matched exactly (``Pow`` is every Pow node, not
    ``Gelu/Pow/y``)."""
    marks = []
    for side, prefix, stage in (("before", "b-", pair[0]), ("after", "a-", pair[1])):
        wanted = set(focus.get(stage) or ()) | set(focus.get("any") or ())
        if not wanted:
            continue
        for name, op in drawn["names"][side].items():
            if name not in wanted and op not in wanted:
                continue
            target = drawn["drawn_of"][side].get(name, name)
            if target is not None and not (target == name and fold and op in FOLDED_OPS):
                marks.append(html_id(target, prefix))
    return list(dict.fromkeys(marks))


def search_marks(query: str, found: dict, drawn: dict, fold: bool, names: dict) -> list[str]:
    """Element ids to outline for the search, and a line with the count of matches per side."""
    if not query.strip():
        return []
    marks, notes = [], []
    for side, prefix in (("before", "b-"), ("after", "a-")):
        of = drawn["drawn_of"][side]
        shown = hidden = 0
        for name in found[side]:
            target = of.get(name, name)
            if target is None or (target == name and fold and names[side].get(name) in FOLDED_OPS):
                hidden += 1
                continue
            shown += 1
            marks.append(html_id(target, prefix))
        notes.append((len(found[side]), hidden))
    (nb, hb), (na, ha) = notes
    line = f"**“{query.strip()}”**: {nb} before, {na} after"
    if hb or ha:
        line += f" ({hb} and {ha} of them not drawn in this view: folded, or outside the fused regions)"
    if drawn["view"] == "scopes":
        line += ". A match inside a box outlines the box."
    st.caption(line)
    return list(dict.fromkeys(marks))
