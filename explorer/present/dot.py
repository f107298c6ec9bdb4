"""Neutral graph (+ a diff overlay) -> DOT text (``svg.to_svg`` lays it out).

DOT ids are synthetic (n0, n1 ... in graph order; m0 ... for inputs that name a missing node):
TF names never reach DOT as ids, because pydot reads ``a:1`` as a node:port reference and
``^a`` as a name. Names appear only inside HTML-like labels (escaped here) and tooltips.
Every string attribute is quoted here rather than by pydot, which does not escape backslashes.

``to_dot`` needs no Graphviz binary (the page can render DOT in the browser).
"""

from __future__ import annotations

from dataclasses import dataclass

import pydot

from ..analysis.fusion import CONST_OPS, is_fused_node
from ..model.graph import BOILERPLATE_OPS, INPUT_OPS, TRANSFER_OPS, Edge, Graph, Node
from .dot_text import cluster_id, css_name, html_id, html_text, quoted, shorten, visible

# Folded by fold_boilerplate. _Arg and _Retval stay: they are the function's inputs and outputs,
# few, and they anchor the picture.
FOLDED_OPS = BOILERPLATE_OPS - INPUT_OPS - {"_Retval"}
# Folded by wiring their input to their consumers (a _Recv's input is its _Send, joined by the worker).
PASS_THROUGH_OPS = frozenset({"Identity", "ReadVariableOp"}) | TRANSFER_OPS

# Fused kernels without a fused_ops attribute: what their name implies.
IMPLIED_FUSED_OPS = {
    "_MklNativeConv2DWithBias": ("BiasAdd",),
    "_MklConv2DWithBias": ("BiasAdd",),
}

FONT = "Helvetica"
FUSION_FILL, FUSION_BORDER = "#f3effc", "#9b7fd4"  # the box round a fused group's nodes
# More control inputs than this on one node (tf.function's NoOp waits for every variable read) are
# counted on it, not drawn: hundreds of converging edges make Graphviz's layout take minutes.
MAX_CONTROL_FANIN = 16
HIGHLIGHT_COLOR = "#e4572e"


@dataclass(frozen=True)
class Style:
    status: str
    fill: str
    border: str
    style: str  # Graphviz node style
    penwidth: float
    meaning: str


LEGEND: tuple[Style, ...] = (
    Style("fused", "#ddd3f7", "#5b2c9f", "rounded,filled,bold", 2.5, "a fused node made by this step"),
    Style("absorbed", "#ececec", "#8a8a8a", "rounded,filled,dashed", 1.2, "folded into a fused node by this step"),
    Style("removed", "#f9d4d0", "#c0392b", "rounded,filled", 1.2, "gone after this step"),
    Style("added", "#d5f2d8", "#2e8b45", "rounded,filled", 1.2, "new after this step"),
    Style("changed", "#fde8b5", "#c98a0b", "rounded,filled", 1.2, "same name; op, fused ops or inputs differ"),
    Style("unchanged", "#ffffff", "#555555", "rounded,filled", 1.0, "same before and after"),
)
PALETTE: dict[str, Style] = {s.status: s for s in LEGEND}
# A fused node that was already there (e.g. in a diff of two later stages): tinted, not bold.
KEPT_FUSED = Style("unchanged", "#f4f0fd", "#5b2c9f", "rounded,filled", 1.6, "a fused op that this step did not make")
MISSING = Style("missing", "#ffffff", "#b0b0b0", "dotted", 1.0, "an input that names no node of this graph")

EDGE_LEGEND = (
    ("data", "solid", "a tensor flows from producer to consumer"),
    ("control", "dashed", "a control dependency (^name): runs after, no data"),
    (":1", "solid", "the producer's output port, when it is not 0"),
)


# ---- labels --------------------------------------------------------------------------------

def fused_ops_of(node: Node) -> tuple[str, ...]:
    return node.fused_ops or IMPLIED_FUSED_OPS.get(node.op, ())


def _attr_note(node: Node) -> str:
    a = node.attr
    notes = []
    if node.op in CONST_OPS and "value" in a:
        notes.append(f"= {a['value']}")
    notes += [a[key] for key in ("data_format", "padding") if a.get(key)]
    if a.get("approximate"):
        notes.append(f"approximate={a['approximate']}")
    for key, short in (("transpose_a", "Tᵃ"), ("transpose_b", "Tᵇ"), ("adj_x", "adj_x"), ("adj_y", "adj_y")):
        if a.get(key) == "True":
            notes.append(short)
    return " ".join(notes)


NO_OP = "(no op)"


def node_label(node: Node, folded_consts: int = 0, hidden_control: int = 0) -> str:
    """The HTML-like label: op (bold), fused ops, name, then dtype · device (· shape for inputs and constants)."""
    # A node TensorFlow left without an op (a remapper defect) must still be drawn: Graphviz
    # rejects an empty bold label.
    rows = [f"<b>{html_text(node.op or NO_OP)}</b>"]
    fused = fused_ops_of(node)
    if fused:
        implied = "" if node.fused_ops else " (by op name)"
        rows.append(f'<font point-size="9" color="#4b2a8a">[{html_text(", ".join(fused))}]{implied}</font>')
    rows.append(f'<font point-size="9">{html_text(shorten(node.name))}</font>')
    # Inputs and constants show their shape; every other node's is in its tooltip (a shape on every
    # node widens a graph past what fits beside another).
    shape = node.shape if node.op in INPUT_OPS | CONST_OPS else ""
    details = " · ".join(x for x in (node.dtype, node.device, shape) if x)
    if details:
        rows.append(small_row(details))
    note = _attr_note(node)
    if note:
        rows.append(small_row(note))
    if folded_consts:
        rows.append(small_row(f"+{folded_consts} const", COUNTED))
    if hidden_control:
        rows.append(small_row(f"+{hidden_control} control inputs (not drawn)", COUNTED))
    return rows_label(rows)


DETAIL, COUNTED, FUSED_TEXT = "#555555", "#777777", "#4b2a8a"  # label text: details, what is counted not drawn, fused ops


def small_row(text: str, color: str = DETAIL) -> str:
    """One small line of a node or box label (escaped here)."""
    return f'<font point-size="8" color="{color}">{html_text(text)}</font>'


def rows_label(rows: list[str]) -> str:
    """A Graphviz HTML label: one row per (already escaped) line."""
    cells = "".join(f"<tr><td>{r}</td></tr>" for r in rows)
    return f'<<table border="0" cellborder="0" cellspacing="0" cellpadding="1">{cells}</table>>'


def node_tooltip(node: Node, status: str = "", folded: list[str] | None = None) -> str:
    """Plain text, one fact per line (newlines inside names are shown as ␊, not as breaks)."""
    fused = fused_ops_of(node)
    lines = [node.name, f"op: {node.op}"]
    if fused:
        lines.append(f"fused_ops: {', '.join(fused)}")
    for key, value in (("status", status), ("dtype", node.dtype), ("device", node.device), ("shape", node.shape)):
        if value:
            lines.append(f"{key}: {value}")
    lines += [f"{key}: {value}" for key, value in node.attrs]
    lines += [f"in: {'^' if e.control else ''}{e.src}{f':{e.port}' if e.port else ''}" for e in node.inputs]
    if folded:
        lines.append(f"folded: {', '.join(folded)}")
    return "\n".join(visible(line) for line in lines)


# ---- folding -------------------------------------------------------------------------------

def _resolve(edge: Edge, graph: Graph, folded: set[str]) -> tuple[str, Edge | None]:
    """Where an edge into a shown node really comes from once folded nodes are hidden.

    Returns ("edge", edge) for a shown or missing producer, ("const", edge) for a folded constant
    and ("drop", None) for anything else (NoOp, a control edge from a constant).
    """
    seen = set()
    control = edge.control
    while edge.src in folded and edge.src not in seen:
        seen.add(edge.src)
        producer = graph[edge.src]
        if producer.op in CONST_OPS:
            return ("drop", None) if control else ("const", edge)
        if producer.op in PASS_THROUGH_OPS and producer.data_inputs:
            inner = producer.data_inputs[0]
            edge = Edge(inner.src, inner.port, control)
            continue
        return "drop", None
    if edge.src in folded:  # a cycle of pass-throughs
        return "drop", None
    return "edge", edge


# ---- DOT -----------------------------------------------------------------------------------

def _style_attrs(style: Style) -> dict[str, str]:
    return {
        "style": quoted(style.style), "fillcolor": quoted(style.fill), "color": quoted(style.border),
        "penwidth": str(style.penwidth),
    }


def new_dot(title: str) -> pydot.Dot:
    dot = pydot.Dot(graph_type="digraph")
    dot.set("rankdir", "TB")
    dot.set("nodesep", "0.25")
    dot.set("ranksep", "0.35")
    dot.set("fontname", quoted(FONT))
    if title:
        dot.set("label", f"<<b>{html_text(title)}</b>>")
        dot.set("labelloc", "t")
    dot.set_node_defaults(shape="box", fontname=quoted(FONT), fontsize="10", margin=quoted("0.08,0.04"))
    dot.set_edge_defaults(fontname=quoted(FONT), fontsize="8", arrowsize="0.6", color=quoted("#444444"))
    return dot


@dataclass
class _Wiring:
    """What a graph's drawing connects, once folded nodes are hidden: the edges to draw (producer name,
    consumer name, edge), the constants folded onto each consumer, inputs that name no node (drawn as
    "missing" with an id of their own), and control inputs counted instead of drawn."""

    edges: list[tuple[str, str, Edge]]
    consts: dict[str, list[str]]
    missing: dict[str, str]
    hidden_control: dict[str, int]


def to_dot(
    graph: Graph,
    overlay: dict[str, str] | None = None,
    *,
    title: str = "",
    fold_boilerplate: bool = False,
    clusters: dict[str, list[str]] | None = None,
    highlight: set[str] | None = None,
    id_prefix: str = "",
    node_attrs: dict[str, dict[str, str]] | None = None,
    edge_attrs: dict[tuple[str, str], dict[str, str]] | None = None,
) -> str:
    """DOT text for a graph, nodes coloured by ``overlay`` (name -> status, see LEGEND).

    fold_boilerplate hides FOLDED_OPS: constants become "+N const" on their consumer, Identity and
    ReadVariableOp are bridged, NoOp and control edges from constants are dropped. ``clusters``
    (label -> node names; a node goes in the first that lists it) draws each group in one box.
    ``highlight`` outlines nodes; ``id_prefix`` keeps element ids unique when two graphs share a page.
    ``node_attrs`` (name -> DOT attributes, values already quoted) and ``edge_attrs`` ((producer,
    consumer) -> attributes) replace the defaults of some nodes and edges; a "class" is added to theirs.
    """
    folded = {n.name for n in graph.nodes if n.op in FOLDED_OPS} if fold_boilerplate else set()
    shown = [n for n in graph.nodes if n.name not in folded]
    ids = {n.name: f"n{i}" for i, n in enumerate(shown)}
    wiring = _wire(graph, shown, folded)
    dot = new_dot(title)
    boxes, membership = _cluster_boxes(clusters or {}, ids, id_prefix)
    _add_nodes(dot, shown, ids, wiring, boxes, membership, overlay or {}, highlight or set(), id_prefix, node_attrs)
    _add_missing(dot, wiring.missing, id_prefix)
    for i in sorted(boxes):
        dot.add_subgraph(boxes[i])
    _add_edges(dot, wiring, ids, edge_attrs)
    return dot.to_string()


def _wire(graph: Graph, shown: list[Node], folded: set[str]) -> _Wiring:
    """Step 1: the edges into the shown nodes, in consumer order, through folded nodes (constants are
    counted on their consumers); then a node's control inputs beyond MAX_CONTROL_FANIN are counted, not drawn."""
    edges: list[tuple[str, str, Edge]] = []
    consts: dict[str, list[str]] = {}
    missing: dict[str, str] = {}
    for n in shown:
        for e in n.inputs:
            kind, resolved = _resolve(e, graph, folded)
            if kind == "const":
                value = graph[resolved.src].attr.get("value") or graph[resolved.src].shape
                consts.setdefault(n.name, []).append(f"{resolved.src} = {value}" if value else resolved.src)
            elif kind == "edge":
                if resolved.src not in graph and resolved.src not in missing:
                    missing[resolved.src] = f"m{len(missing)}"
                edges.append((resolved.src, n.name, resolved))
    fanin: dict[str, int] = {}
    for _, dst, e in edges:
        fanin[dst] = fanin.get(dst, 0) + e.control
    hidden = {dst: k for dst, k in fanin.items() if k > MAX_CONTROL_FANIN}
    edges = [(src, dst, e) for src, dst, e in edges if not (e.control and dst in hidden)]
    return _Wiring(edges, consts, missing, hidden)


def _cluster_boxes(clusters: dict[str, list[str]], ids: dict[str, str], id_prefix: str):
    """Step 2: one box per cluster that holds a shown node (numbered in ``clusters``' order, which the
    page's links name), and which box each node goes in (the first that lists it)."""
    membership: dict[str, int] = {}
    cluster_list = list(clusters.items())
    for i, (_, names) in enumerate(cluster_list):
        for name in names:
            if name in ids:
                membership.setdefault(name, i)
    boxes = {i: fusion_box(i, f"<<i>{html_text(label)}</i>>", id_prefix)
             for i, (label, _) in enumerate(cluster_list) if i in membership.values()}
    return boxes, membership


def fusion_box(index: int, label: str, id_prefix: str, fill: str = FUSION_FILL, border: str = FUSION_BORDER,
               **attrs) -> pydot.Cluster:
    """The box round the ``index``-th fused group's nodes, with the element id the page's links name it by."""
    box = pydot.Cluster(f"fusion{index}", label=label, style=quoted("rounded,filled"), fillcolor=quoted(fill),
                        color=quoted(border), fontsize="9", fontname=quoted(FONT), **attrs)
    box.set("id", quoted(cluster_id(index, id_prefix)))
    return box


def _add_nodes(dot, shown, ids, wiring: _Wiring, boxes, membership, overlay, highlight, id_prefix, node_attrs) -> None:
    """Step 3: each shown node, styled by its status, with its label and tooltip, in its box if it has one."""
    for n in shown:
        status = overlay.get(n.name, "unchanged")
        style = PALETTE.get(status, PALETTE["unchanged"])
        if status == "unchanged" and is_fused_node(n):
            style = KEPT_FUSED
        consts = wiring.consts.get(n.name, [])
        attrs = {
            "label": node_label(n, len(consts), wiring.hidden_control.get(n.name, 0)),
            "tooltip": quoted(node_tooltip(n, overlay.get(n.name, ""), consts)),
            "id": quoted(html_id(n.name, id_prefix)),
            "class": quoted(f"fx-node fx-{css_name(status)} fx-op-{css_name(n.op)}" + (" fx-highlight" if n.name in highlight else "")),
            **_style_attrs(style),
        }
        _merge(attrs, (node_attrs or {}).get(n.name))
        if n.name in highlight:
            attrs["color"] = quoted(HIGHLIGHT_COLOR)
            attrs["penwidth"] = "3.5"
        target = boxes.get(membership.get(n.name, -1), dot)
        target.add_node(pydot.Node(ids[n.name], **attrs))


def _add_missing(dot, missing: dict[str, str], id_prefix: str) -> None:
    """Step 4: an input that names no node of this graph, as a dotted ellipse."""
    for name, mid in missing.items():
        dot.add_node(pydot.Node(
            mid, label=f"<<i>missing</i><br/>{html_text(shorten(name))}>", shape="ellipse",
            tooltip=quoted(f"{visible(name)}\nnot a node of this graph"), id=quoted(html_id(name, id_prefix + "missing-")),
            **{"class": quoted("fx-node fx-missing")}, **_style_attrs(MISSING),
        ))


def _add_edges(dot, wiring: _Wiring, ids: dict[str, str], edge_attrs) -> None:
    """Step 5: the edges, control ones dashed, an output port other than 0 written at the tail."""
    for src, dst, e in wiring.edges:
        attrs = {"class": quoted("fx-edge fx-control" if e.control else "fx-edge")}
        if e.control:
            attrs.update(style="dashed", color=quoted("#8a8a8a"), arrowhead="odot")
        if e.port:
            attrs["taillabel"] = quoted(f":{e.port}")
        tip = f"{'^' if e.control else ''}{src}{f':{e.port}' if e.port else ''} → {dst}"
        attrs["tooltip"] = quoted(tip)
        _merge(attrs, (edge_attrs or {}).get((src, dst)))
        dot.add_edge(pydot.Edge(ids.get(src) or wiring.missing[src], ids[dst], **attrs))


def _merge(attrs: dict[str, str], extra: dict[str, str] | None) -> None:
    """Overrides win, except "class", whose names are added to the defaults'."""
    if not extra:
        return
    extra = dict(extra)
    if "class" in extra:
        attrs["class"] = attrs["class"][:-1] + " " + extra.pop("class").strip('"') + '"'
    attrs.update(extra)


def legend() -> list[dict[str, str]]:
    """LEGEND as plain rows (status, fill, border, meaning) for a table or markdown."""
    return [{"status": s.status, "fill": s.fill, "border": s.border, "meaning": s.meaning} for s in LEGEND]
