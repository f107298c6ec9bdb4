"""Two graphs side by side, linked: hover or click a node and its counterparts on the other side light up.

A fused node on the after side is linked to every node it absorbed on the before side (and its
cluster), a node that kept its name to its namesake. The drawings are Graphviz SVGs made by
``present.svg.to_svg`` from ``present.dot.to_dot`` with id prefixes "b-" (before) and "a-" (after), so a
node's element id is ``present.dot.html_id(name, prefix)``. The links travel as JSON of those ids
(ids are ``[A-Za-z0-9_-]`` only; labels are set with ``textContent``), with ``<``, ``>`` and
``&`` escaped so that nothing in it can close the script.

This module makes the view's data and its HTML document (CSS and JS inline), as text; ``ui.linked.show``
puts it on the page. The document navigates itself: zoom (one scale for both sides), pan by dragging or
scrolling, fit to width or to the pane, step through search matches (each side centred on its match),
panes no taller than the browser's window so that nothing is out of reach.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from .dot_text import cluster_id, html_id
from .theme import dark_css

BEFORE, AFTER = "b-", "a-"
MIN_SCALE = 0.75  # below this a node's 8 pt detail line is under 8 px: stack the two sides instead

# The view's style and script live beside this module as plain files (read once): the script is tested in
# a real browser (tests/e2e/test_graph_navigation.py), not as a Python string.
_HERE = Path(__file__).resolve().parent
CSS = (_HERE / "linked_view.css").read_text(encoding="utf-8")
JS = (_HERE / "linked_view.js").read_text(encoding="utf-8")


def link_groups(fusions: list[dict], before_names, after_names, cluster_order: list[str] | None = None,
                drawn_of: tuple[dict, dict] | None = None) -> list[dict]:
    """What lights up together: each fusion (absorbed nodes ↔ fused node, with both clusters),
    then every name present on both sides (its namesake).

    ``fusions`` are fusion dicts (``node``, ``absorbed``, ``describe``); ``before_names`` and
    ``after_names`` are the names of each side, or dicts name -> op (the label then tells an op
    that changed); ``cluster_order`` lists the fused node of each cluster as present.dot.to_dot
    numbered them (``fx-<prefix>cluster-<i>``). ``drawn_of`` (before, after) maps a node that is
    not drawn as itself to what stands for it (a scope's box) or to None (left out): links then
    join the boxes, one group per pair of boxes.
    """
    ops_before = before_names if isinstance(before_names, dict) else {}
    ops_after = after_names if isinstance(after_names, dict) else {}
    before_names, after_names = set(before_names), set(after_names)
    of_before, of_after = drawn_of or ({}, {})
    cluster_of = {node: i for i, node in enumerate(cluster_order or [])}
    groups, taken, seen = [], set(), {}

    def ids(names, of, prefix):
        drawn = (of.get(n, n) for n in names)
        return list(dict.fromkeys(html_id(d, prefix) for d in drawn if d is not None))

    for f in fusions:
        before = ids([n for n in f["absorbed"] if n in before_names], of_before, BEFORE)
        after = ids([f["node"]] if f["node"] in after_names else [], of_after, AFTER)
        if f["node"] in cluster_of:
            i = cluster_of[f["node"]]
            before.append(cluster_id(i, BEFORE))
            after.append(cluster_id(i, AFTER))
        groups.append({"before": before, "after": after,
                       "label": f.get("describe") or f.get("description") or f"→ {f.get('op', '')}"})
        taken.update(f["absorbed"])
        taken.add(f["node"])
    for name in sorted((before_names & after_names) - taken):
        b, a = of_before.get(name, name), of_after.get(name, name)
        if b is None or a is None:
            continue
        if b != name or a != name:  # in a box on one side or both: one group per pair of boxes
            key = (b, a)
            if key not in seen:
                seen[key] = {"before": [html_id(b, BEFORE)], "after": [html_id(a, AFTER)], "label": "", "n": 0}
                groups.append(seen[key])
            seen[key]["n"] += 1
            continue
        old, new = ops_before.get(name), ops_after.get(name)
        label = f"{name}: {old} → {new}" if old and new and old != new else f"{name}: the same node on both sides"
        groups.append({"before": [html_id(name, BEFORE)], "after": [html_id(name, AFTER)], "label": label})
    for (b, a), g in seen.items():
        scope = (b if b.endswith("/") else a).rstrip("/")
        g["label"] = (f"scope {scope}: {g.pop('n')} node(s) kept their names; open it with 'Open scopes' "
                      "above the graphs")
    return groups


def script_json(data) -> str:
    """JSON that is safe inside <script>: no '<', '>' or '&' (so no '</script>'), no line separators."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    for char, code in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
                       ("\u2029", "\\u2029")):
        text = text.replace(char, code)
    return text


_PROLOG = re.compile(r"^.*?(?=<svg[\s>])", re.S)


def svg_element(svg: str) -> str:
    """The <svg> element of Graphviz output, without the XML prolog, doctype and comments before it."""
    return _PROLOG.sub("", svg, count=1).strip()


HINT = "Hover over a node, or click it to pin: its counterparts light up. Drag to pan, Ctrl + wheel to zoom."
STACKED_NOTE = "Too wide to read side by side, so drawn one above the other."

# The toolbar: (action, label, tooltip). The script (linked_view.js) binds each action and its key.
TOOLBAR = (
    ("out", "−", "Zoom out (−; or Ctrl + wheel over a graph)"),
    ("actual", "100%", "Actual size (1)"),
    ("in", "+", "Zoom in (+; or Ctrl + wheel over a graph)"),
    ("width", "Fit width", "Both graphs as wide as their panes (W)"),
    ("pane", "Fit pane", "Each whole graph in its pane (0)"),
    ("layout", "One above the other", "Side by side, or one above the other"),
)
# The presenter view's own: one graph at a time, the whole width for it (chosen by itself when two side by side
# would be too small to read from the back of a room).
PRESENT_TOOLBAR = (
    ("single", "One graph", "One graph at a time, or both side by side (G)"),
    ("swap", "Show the other", "Show the other graph (S)"),
)


def _toolbar(hint: str, present: bool = False) -> str:
    import html

    buttons = []
    for act, label, title in TOOLBAR + (PRESENT_TOOLBAR if present else ()):
        extra = " id='fx-zoom' class='fx-zoom'" if act == "actual" else " hidden" if act == "swap" else ""
        buttons.append(f"<button type='button' data-act='{act}'{extra} title='{html.escape(title, quote=True)}' "
                       f"aria-label='{html.escape(title.split(' (')[0], quote=True)}'>{html.escape(label)}</button>")
        if act in ("in", "pane"):
            buttons.append("<span class='fx-sep'></span>")
    find = ("<span id='fx-find' class='fx-find' hidden><button type='button' data-act='prev' title='Previous match (P)' "
            "aria-label='Previous match'>‹</button><span id='fx-find-count'></span><button type='button' "
            "data-act='next' title='Next match (N)' aria-label='Next match'>›</button></span>")
    return (f"<div class='fx-bar' role='toolbar' aria-label='Graph view'>{''.join(buttons)}{find}"
            f"<p id='fx-hint' class='fx-hint'>{html.escape(hint)}</p></div>")


def view_key(before_svg: str, after_svg: str) -> str:
    """What the browser keeps a drawing's zoom and scroll under, across the page's reruns."""
    return hashlib.sha256((before_svg + "\0" + after_svg).encode()).hexdigest()[:16]


def page_html(before_svg: str, after_svg: str, groups: list[dict], hint: str = HINT, fit: bool = False,
              titles: tuple[str, str] = ("Before", "After"), marks=(), focus=(), present: bool = False,
              theme: str = "light") -> str:
    """The whole document of the linked view: a toolbar, both SVGs in panes that zoom and pan, the links
    as JSON, the CSS and the JS.

    ``fit``: the script grows its frame to the drawing (for a frame of fixed height). ``titles`` name
    the sides when they are drawn one above the other or in the presenter view (the page's own
    headings then no longer sit over them). ``marks``: element ids outlined as search matches (the
    view centres each side on its first); ``focus``: element ids a lesson points at (outlined, and
    centred when the drawing opens). ``present``: the presenter view (larger type, always side by
    side). ``theme``: the page's theme when the document is made ("light" or "dark"); the script
    follows the page's own colours after that.
    """
    import html

    panes = "".join(
        f"<div class='fx-pane' data-side='{side}' data-title='{html.escape(title.split(' · ')[0], quote=True)}'>"
        f"<div class='fx-pane-title'>{html.escape(title)}</div>"
        f"<div class='fx-view'><div class='fx-canvas'>{svg_element(svg)}</div></div></div>"
        for side, title, svg in (("before", titles[0], before_svg), ("after", titles[1], after_svg)))
    data = {"fit": 1 if fit else 0, "marks": " ".join(marks), "focus": " ".join(focus),
            "present": 1 if present else 0, "theme": theme if theme in ("light", "dark") else "light",
            "min-scale": MIN_SCALE, "key": view_key(before_svg, after_svg) + ("-present" if present else "")}
    attrs = " ".join(f"data-{name}='{html.escape(str(value), quote=True)}'" for name, value in data.items())
    classes = "fx-root" + (" fx-present" if present else "") + (" fx-dark" if theme == "dark" else "")
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><style>" + CSS + dark_css(before_svg, after_svg)
        + "</style></head><body>"
        f"<div id='fx-root' class='{classes}' {attrs}>{_toolbar(hint, present)}"
        f"<p id='fx-note' class='fx-note' hidden>{html.escape(STACKED_NOTE)}</p>"
        f"<div class='fx-panes'>{panes}</div></div>"
        f"<script type='application/json' id='fx-links'>{script_json(groups)}</script>"
        f"<script>{JS}</script></body></html>"
    )
