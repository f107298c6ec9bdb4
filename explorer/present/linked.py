"""Two graphs side by side, linked: hover or click a node and its counterparts on the other side light up.

A fused node on the after side is linked to every node it absorbed on the before side (and its
cluster), a node that kept its name to its namesake. The drawings are Graphviz SVGs made by
``present.svg.to_svg`` from ``present.dot.to_dot`` with id prefixes "b-" (before) and "a-" (after), so a
node's element id is ``present.dot.html_id(name, prefix)``. The links travel as JSON of those ids
(ids are ``[A-Za-z0-9_-]`` only; labels are set with ``textContent``), with ``<``, ``>`` and
``&`` escaped so that nothing in it can close the script.

This module makes the view's data and its HTML document (CSS and JS inline), as text; ``ui.linked.show``
puts it on the page.
"""

from __future__ import annotations

import json
import re

from .dot_text import html_id

BEFORE, AFTER = "b-", "a-"
PANE_PX = 540  # the width one pane gets on a wide page; only used to guess the frame's height
MAX_HEIGHT = 2400
MIN_SCALE = 0.75  # below this a node's 8 pt detail line is under 8 px: stack the two sides instead

CSS = """
html, body { margin: 0; padding: 0; font-family: "Source Sans Pro", "Source Sans 3", sans-serif; color: #31333f; }
.fx-hint { font-size: 13px; color: #6b6f7b; margin: 0 0 6px 0; min-height: 18px; }
.fx-hint b { color: #31333f; }
.fx-panes { display: flex; gap: 24px; align-items: flex-start; }
.fx-pane { flex: 1 1 0; min-width: 0; text-align: center; overflow-x: auto; }
.fx-pane svg { height: auto; }
.fx-pane-title { display: none; font-size: 14px; font-weight: 600; text-align: left; margin: 4px 0; }
.fx-stacked { flex-direction: column; }
.fx-stacked .fx-pane { flex: none; width: 100%; }
.fx-stacked .fx-pane-title { display: block; }
.fx-note { font-size: 12px; color: #6b6f7b; margin: 2px 0 6px 0; }
.fx-pane g.node, .fx-pane g.cluster { cursor: pointer; }
.fx-active g.node:not(.fx-hl), .fx-active g.edge { opacity: 0.3; transition: opacity 0.12s; }
.fx-pane g.node.fx-hl path, .fx-pane g.node.fx-hl polygon, .fx-pane g.node.fx-hl ellipse {
  stroke: #e4572e !important; stroke-width: 3.5px !important; }
.fx-pane g.node.fx-linked path, .fx-pane g.node.fx-linked polygon, .fx-pane g.node.fx-linked ellipse {
  fill: #ffe3d6 !important; }
.fx-pane g.cluster.fx-hl > path, .fx-pane g.cluster.fx-hl > polygon {
  stroke: #e4572e !important; stroke-width: 2.5px !important; }
.fx-pane g.node.fx-match path, .fx-pane g.node.fx-match polygon, .fx-pane g.node.fx-match ellipse {
  stroke: #1c6dd0 !important; stroke-width: 4px !important; }
.fx-pane g.node.fx-match text { font-weight: 600; }
.fx-pinned .fx-hint::after { content: "  (pinned: click it again, or on empty space, to release)"; }
"""

JS = """
(() => {
  const groups = JSON.parse(document.getElementById("fx-links").textContent);
  const root = document.getElementById("fx-root");
  (root.dataset.marks || "").split(" ").filter(Boolean).forEach(id => {
    const el = document.getElementById(id);
    if (el) el.classList.add("fx-match");
  });
  const hint = document.getElementById("fx-hint");
  const note = document.getElementById("fx-note");
  const idle = hint.textContent;
  const byId = new Map();
  groups.forEach((g, i) => [...g.before, ...g.after].forEach(id => {
    if (!byId.has(id)) byId.set(id, []);
    byId.get(id).push(i);
  }));
  let pinned = null;
  const clear = () => {
    root.querySelectorAll(".fx-hl, .fx-linked").forEach(e => e.classList.remove("fx-hl", "fx-linked"));
    root.classList.remove("fx-active");
    hint.textContent = idle;
  };
  const light = (el) => {
    clear();
    const side = el.closest(".fx-pane").dataset.side;
    const hits = byId.get(el.id) || [];
    el.classList.add("fx-hl");
    root.classList.add("fx-active");
    const labels = [];
    for (const i of hits) {
      const g = groups[i];
      for (const s of ["before", "after"]) {
        for (const id of g[s]) {
          const other = document.getElementById(id);
          if (!other) continue;  // folded away (a constant) or not drawn
          other.classList.add("fx-hl");
          if (s !== side) other.classList.add("fx-linked");
        }
      }
      if (g.label) labels.push(g.label);
    }
    const shown = labels.length > 4 ? [...labels.slice(0, 4), `and ${labels.length - 4} more`] : labels;
    hint.textContent = labels.length ? shown.join("  ·  ") :
      (hits.length ? "" : "No counterpart on the other side: this node is new here, or gone there.");
  };
  // One scale for both sides, so that a node is the same size left and right (Graphviz sizes are in pt).
  // Below MIN_SCALE the labels are too small to read: draw one above the other instead, and scroll
  // sideways if even the full width is not enough.
  const MIN_SCALE = __MIN_SCALE__, GAP = 24;
  const svgs = [...root.querySelectorAll(".fx-pane svg")];
  const panes = root.querySelector(".fx-panes");
  const natural = svgs.map(svg => (parseFloat(svg.getAttribute("width")) || 400) * 4 / 3);
  const fitting = width => Math.min(1, ...natural.map(w => width / w));
  const rescale = () => {
    const width = panes.clientWidth;
    if (!width) return;
    const stacked = fitting((width - GAP) / 2) < MIN_SCALE;
    if (panes.classList.contains("fx-stacked") !== stacked) {
      panes.classList.toggle("fx-stacked", stacked);
      note.hidden = !stacked;
    }
    const k = Math.max(MIN_SCALE, fitting(stacked ? width : (width - GAP) / 2));
    svgs.forEach((svg, i) => { svg.style.width = (natural[i] * k) + "px"; svg.style.height = "auto"; });
  };
  rescale();
  new ResizeObserver(rescale).observe(root);
  const target = (ev) => ev.target.closest("g.node, g.cluster");
  root.addEventListener("mouseover", ev => { const el = target(ev); if (el && !pinned) light(el); });
  root.addEventListener("mouseout", ev => {
    const el = target(ev);
    if (el && !pinned && !(ev.relatedTarget && el.contains(ev.relatedTarget))) clear();
  });
  root.addEventListener("click", ev => {
    const el = target(ev);
    const release = !el || el === pinned;
    pinned = release ? null : el;
    root.classList.toggle("fx-pinned", !release);
    if (el) light(el); else clear();  // released over a node: it stays lit as hovered until the mouse leaves
  });
  const fit = () => {
    try {
      const frame = window.frameElement;
      if (frame) frame.style.height = Math.ceil(document.body.getBoundingClientRect().height + 4) + "px";
    } catch (e) { /* another origin: keep the height given */ }
  };
  if (root.dataset.fit === "1") {  // a frame of fixed height (components.html): grow it to the drawing
    window.addEventListener("load", fit);
    new ResizeObserver(fit).observe(document.body);
  }
})();
"""


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
            before.append(f"fx-{BEFORE}cluster-{i}")
            after.append(f"fx-{AFTER}cluster-{i}")
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
_SIZE = re.compile(r'<svg[^>]*?\bwidth="([\d.]+)pt"[^>]*?\bheight="([\d.]+)pt"', re.S)


def svg_element(svg: str) -> str:
    """The <svg> element of Graphviz output, without the XML prolog, doctype and comments before it."""
    return _PROLOG.sub("", svg, count=1).strip()


def svg_size_px(svg: str) -> tuple[float, float]:
    m = _SIZE.search(svg)
    if not m:
        return 400.0, 400.0
    return float(m.group(1)) * 4 / 3, float(m.group(2)) * 4 / 3


HINT = "Hover over a node, or click it to pin: its counterparts on the other side light up."
STACKED_NOTE = "Too wide to read side by side, so drawn one above the other."


def page_html(before_svg: str, after_svg: str, groups: list[dict], hint: str = HINT, fit: bool = False,
              titles: tuple[str, str] = ("Before", "After"), marks=()) -> str:
    """The whole document of the linked view: both SVGs, the links as JSON, the CSS and the JS.

    ``fit``: the script grows its frame to the drawing (for a frame of fixed height). ``titles`` name
    the sides when they are too wide to sit side by side and are drawn one above the other (the
    page's own headings then no longer sit over them). ``marks``: element ids outlined as search matches.
    """
    import html

    panes = "".join(
        f"<div class='fx-pane' data-side='{side}'><div class='fx-pane-title'>{html.escape(title)}</div>"
        f"{svg_element(svg)}</div>"
        for side, title, svg in (("before", titles[0], before_svg), ("after", titles[1], after_svg)))
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><style>" + CSS + "</style></head><body>"
        f"<div id='fx-root' data-fit='{1 if fit else 0}' data-marks='{html.escape(' '.join(marks), quote=True)}'><p id='fx-hint' class='fx-hint'>{html.escape(hint)}</p>"
        f"<p id='fx-note' class='fx-note' hidden>{html.escape(STACKED_NOTE)}</p>"
        f"<div class='fx-panes'>{panes}</div></div>"
        f"<script type='application/json' id='fx-links'>{script_json(groups)}</script>"
        f"<script>{JS.replace('__MIN_SCALE__', repr(MIN_SCALE))}</script></body></html>"
    )


def frame_height(before_svg: str, after_svg: str, pane_px: float = PANE_PX) -> int:
    """A first guess of the frame's height (the page corrects it once the browser has laid it out)."""
    heights = []
    for svg in (before_svg, after_svg):
        w, h = svg_size_px(svg)
        heights.append(h * min(1.0, pane_px / max(w, 1.0)))
    return int(min(max(heights) + 40, MAX_HEIGHT))
