"""The graph panel: two stages side by side, coloured by the diff, with the fusions and downloads.

It is a fragment: choosing the stage pair or folding constants reruns only this panel.
"""

from __future__ import annotations

from collections import Counter

import streamlit as st

from ..model.graph import STAGES
from ..model.sources import source_for_data
from ..present.dot import EDGE_LEGEND, LEGEND
from ..present.linked import link_groups
from ..present.theme import dark
from . import cached, graph_views, link, linked, state

PAIRS = {
    "traced->optimized": "traced → after Grappler",
    "optimized->executed": "after Grappler → executed",
    "traced->executed": "traced → executed",
}
PAIR_HELP = ("traced: the graph tf.function built. after Grappler: what the optimiser (remapper included) made "
             "of it. executed: the partition graph that ran, after the device's own rewrites (oneDNN renames "
             "fused ops to _MklNative*).")


@st.fragment
def panel(result: dict, focus: dict | None = None) -> None:
    """Both stages of ``result`` drawn side by side. ``focus``: what a lesson's step points at (op types or node
    names per stage, ``graph_views.focus_marks``), outlined in the drawing and centred when it opens."""
    stages = result.get("stages") or {}
    pairs = [p for p in PAIRS if all(s in stages for s in p.split("->"))] or list(PAIRS)
    if st.session_state.get(state.STAGE_PAIR) not in pairs:
        st.session_state[state.STAGE_PAIR] = pairs[0]  # e.g. a simulated GPU has no executed stage
    presenting = state.presenting()
    # The presenter view puts every control on one line, so that the graphs start within a projector's screen.
    if presenting:
        top_left, view_col, top_right, find_col = st.columns([2.2, 1.6, 1.5, 1.7], vertical_alignment="bottom")
    else:
        top_left, top_right = st.columns([7, 3], vertical_alignment="bottom")  # the stage pairs on one line at 1280 px
        view_col = find_col = None
    if len(pairs) > 1:
        pair = _pick(top_left, "Stages to compare", pairs, state.STAGE_PAIR, PAIRS.get, PAIR_HELP, presenting)
    else:  # a radio with one option reads as a broken control
        pair = pairs[0]
        top_left.markdown((PAIRS[pair] if presenting else f"**Stages compared:** {PAIRS[pair]}") + (
            (" (nothing ran)" if presenting else " (nothing ran, so there is no executed stage)")
            if "executed" not in stages else ""))
    fold = top_right.toggle("Fold constants and plumbing" if not presenting else "Fold consts", key=state.FOLD,
                            persist_state=state.KEEP_HIDDEN,
                            help="Hide Const, Identity, ReadVariableOp and NoOp nodes: constants become '+N const' "
                                 "on their consumer. Keeps graphs of a few hundred nodes readable.")
    # a fragment's run: the link is written from here (the view's widget comes later; its value is in the state)
    link.write_view(stages=pair, fold=bool(fold), graph_view=st.session_state.get(state.GRAPH_VIEW) or "auto")
    before, after = pair.split("->")
    if before not in stages or after not in stages:
        st.info(f"This result has no {STAGES.get(before, before)} or {STAGES.get(after, after)} graph.")
        return
    view, query = graph_views.top_controls(view_col, find_col)
    depth, opened = graph_views.scope_settings()
    scope_row = st.container()
    drawn = cached.stage_pair(result["key"], before, after, fold, result, view, depth, opened)
    if drawn["view"] == "scopes":
        graph_views.scope_controls(scope_row, drawn, auto=view == "auto")
    elif drawn["view"] == "fused" and not graph_views.fused_caption(drawn):
        return
    found_names = cached.stage_search(result["key"], before, after, query, result) if query.strip() else {}
    marks = graph_views.search_marks(query, found_names, drawn, fold, drawn["names"])
    looked_at = graph_views.focus_marks(focus or {}, drawn, fold, (before, after))
    if not presenting:
        left, right = st.columns(2, gap="medium")
        for col, side, stage in ((left, "before", before), (right, "after", after)):
            with col:
                _graph_head(stage, side, drawn, result)
    groups = groups_of(drawn)
    titles = tuple(f"{_stage_title(s)} · {drawn['nodes'][side]} nodes" for side, s in (("before", before), ("after", after)))
    if not linked.show(drawn["before"], drawn["after"], groups, titles=titles, marks=marks, focus=looked_at):
        # No Graphviz binary here: the browser draws the DOT itself, without the linking.
        left, right = st.columns(2, gap="medium")
        for col, side in ((left, "before"), (right, "after")):
            col.graphviz_chart(drawn[side], width="stretch")
    _fusions_and_legend(drawn, pair)  # below the graphs: the first screen is theirs (a laptop's, a projector's)


def _fusions_and_legend(drawn: dict, pair: str) -> None:
    found, legend = st.columns([3, 2], gap="medium")
    with found:
        _fusions(drawn, pair)
    with legend:
        _legend()


def _pick(where, label: str, options: list, key: str, format_func, help: str, compact: bool):
    """A choice among a few options: a row of radio buttons, or a drop-down where a row does not fit."""
    if compact:
        return where.selectbox(label, options, key=key, format_func=format_func, help=help,
                               label_visibility="collapsed", persist_state=state.KEEP_HIDDEN)
    return where.radio(label, options, key=key, horizontal=True, persist_state=state.KEEP_HIDDEN,
                       format_func=format_func, help=help)


def groups_of(drawn: dict) -> list[dict]:
    """What the linked view lights up together: the drawing's own diff is the one source of what went where
    (its clusters are numbered in its order)."""
    fusions = drawn["diff"]["fusions"]
    return link_groups(fusions, drawn["names"]["before"], drawn["names"]["after"], [f["node"] for f in fusions],
                       (drawn["drawn_of"]["before"], drawn["drawn_of"]["after"]))


def _fusions(drawn: dict, pair: str) -> None:
    diff = drawn["diff"]
    fusions = diff["fusions"]
    kernel = [r for r in diff["renames"] if r["kernel_swap"]]
    rewrites = [r for r in diff["renames"] if not r["kernel_swap"]]
    c = drawn["counts"]
    with st.container(border=True):
        if fusions:
            st.markdown(f"**Fused in {PAIRS[pair]}**")
            if len(fusions) <= 8:
                for f in fusions:
                    st.markdown(f"- `{f['describe']}`")
            else:  # a real network repeats a few patterns dozens of times: one line per pattern, with its count
                for describe, count in Counter(f["describe"] for f in fusions).most_common():
                    st.markdown(f"- `{describe}`" + (f" × {count}" if count > 1 else ""))
        else:
            st.markdown(f"**Nothing fused in {PAIRS[pair]}.**")
        lines = []
        if kernel:
            lines.append("renamed to oneDNN kernels: " + ", ".join(f"`{r['old_op']} → {r['new_op']}`" for r in kernel))
        if 0 < len(rewrites) <= 8:
            lines.append("rewritten in place: " + ", ".join(f"`{r['name']}: {r['old_op']} → {r['new_op']}`"
                                                             for r in rewrites))
        elif rewrites:  # e.g. constant folding turns hundreds of a network's ops into Const: one entry per kind
            kinds = Counter(f"{r['old_op']} → {r['new_op']}" for r in rewrites)
            lines.append("rewritten in place: " + ", ".join(f"`{k}` × {n}" for k, n in kinds.most_common()))
        lines.append(f"{c['absorbed']} nodes absorbed, {c['removed']} removed, {c['added']} added, "
                     f"{c['changed']} changed, {c['unchanged']} unchanged")
        st.caption("  \n".join(lines))


def _legend() -> None:
    """What the colours and edge styles mean (present.dot.LEGEND), as small swatches."""
    rows = []
    colour = dark if linked.page_theme() == "dark" else (lambda c: c)  # the swatches as the drawing shows them
    for s in LEGEND:
        border = (f"{2 if s.status == 'fused' else 1}px {'dashed' if s.status == 'absorbed' else 'solid'} "
                  f"{colour(s.border)}")
        rows.append(f'<div title="{s.meaning}"><span style="display:inline-block;width:0.9em;height:0.9em;'
                    f'vertical-align:-0.1em;border-radius:3px;background:{colour(s.fill)};border:{border}"></span> '
                    f'<b>{s.status}</b>: {s.meaning}</div>')
    edges = {name: meaning for name, _, meaning in EDGE_LEGEND}
    rows.append(f'<div>→ data edge · ⇢ <b>dashed</b>: {edges.get("control", "control dependency")} · '
                f'<b>:1</b>: output port</div>')
    st.markdown(f'<div style="font-size:0.78rem;line-height:1.55">{"".join(rows)}</div>', unsafe_allow_html=True)


def _stage_title(stage: str) -> str:
    return STAGES[stage][0].upper() + STAGES[stage][1:]


def _graph_head(stage: str, side: str, drawn: dict, result: dict) -> None:
    """The title of one side and its downloads (the drawing itself is the linked view below both)."""
    dot = drawn[side]
    head, buttons = st.columns([2, 1], vertical_alignment="center")
    head.markdown(f"**{_stage_title(stage)}** · {drawn['nodes'][side]} nodes")
    spec = result.get("spec") or {}
    source = source_for_data(spec)
    name = f"{source.stem(spec) if source else 'model'}-{stage}"
    pbtxt = (result.get("pbtxt") or {}).get(stage, "")
    with buttons.popover("Download", icon=":material/download:", width="stretch"):
        # The linked view has already laid this DOT out: its cached SVG, not a second run of dot.
        st.download_button("SVG (drawing)", data=lambda d=dot: cached.svg(d), file_name=f"{name}.svg",
                           mime="image/svg+xml", on_click="ignore", key=f"graphs.svg.{side}", width="stretch")
        st.download_button("DOT (Graphviz source)", data=lambda d=dot: d, file_name=f"{name}.dot",
                           mime="text/vnd.graphviz", on_click="ignore", key=f"graphs.dot.{side}", width="stretch")
        st.download_button("pbtxt (TensorFlow GraphDef)", data=lambda t=pbtxt: t, file_name=f"{name}.pbtxt",
                           mime="text/plain", on_click="ignore", key=f"graphs.pbtxt.{side}", disabled=not pbtxt,
                           width="stretch")
