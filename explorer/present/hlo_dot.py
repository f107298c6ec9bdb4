"""XLA's optimised HLO module (the worker's plain dict) -> DOT, one cluster per fusion.

The entry computation's instructions are nodes; a fusion is drawn as a box holding its fused
computation's instructions, wired to the entry through its parameters (fused parameter k is the
fusion's operand k). A loop's body and a conditional's branches are dashed boxes beside their instruction, drawn
the same way inside. Scalar constants, and broadcasts of them, are counted on their consumer
("+2 const") instead of drawn. Each node shows its opcode, shape and the TF op its metadata names.
Labels are escaped as in ``dot``; element ids come from ``dot.html_id`` so that the linked view can
light an XLA node and the TF ops it computes together.
"""

from __future__ import annotations

import pydot

from .dot import FUSION_BORDER, FUSION_FILL, fusion_box, new_dot
from .dot_text import cluster_id as _cluster_id, html_id, html_text, quoted, shorten

PREFIX = "x-"
KIND_COLOURS = {"fusion": (FUSION_FILL, FUSION_BORDER), "library": ("#e6f1fb", "#3b7dc4")}
NODE_STYLE = {"style": quoted("rounded,filled"), "fillcolor": quoted("#ffffff"), "color": quoted("#777777")}
PARAM_STYLE = {"shape": "ellipse", "style": quoted("filled"), "fillcolor": quoted("#eeeeee"),
               "color": quoted("#999999")}


def cluster_id(index: int) -> str:
    return _cluster_id(index, PREFIX)


def instruction_id(name: str) -> str:
    return html_id(name, PREFIX)


def _label(ins: dict, consts: int) -> str:
    lines = [f"<b>{html_text(ins['opcode'])}</b> {html_text(shorten(ins['name'], 32))}",
             f"<font point-size='8'>{html_text(ins['shape'])}</font>"]
    if ins.get("op_name") and ins["op_name"] not in ("XLA_Args", "XLA_Retvals"):
        lines.append(f"<font point-size='8' color='#5b2c9f'>TF {html_text(shorten(ins['op_name'], 40))}</font>")
    if consts:
        lines.append(f"<font point-size='8' color='#777777'>+{consts} const</font>")
    return "<" + "<br/>".join(lines) + ">"


def _tooltip(ins: dict) -> str:
    tf = f"\nTF op: {ins['op_type']} {ins['op_name']}" if ins.get("op_type") else ""
    kind = f" ({ins['fusion_kind']})" if ins.get("fusion_kind") else ""
    return f"{ins['name']} = {ins['opcode']}{kind} {ins['shape']}{tf}"


def _folded(instructions: list[dict]) -> set[str]:
    """Constants and broadcasts of constants: counted on their consumers, not drawn."""
    consts = {i["name"] for i in instructions if i["opcode"] == "constant"}
    return consts | {i["name"] for i in instructions
                     if i["opcode"] == "broadcast" and i["operands"] and set(i["operands"]) <= consts}


def to_dot(module: dict, groups: list[dict], title: str = "") -> str:
    """DOT of the entry computation, each fusion (and custom fusion) a cluster of its fused instructions; a loop's
    body and a conditional's branches are drawn beside their ``while`` or ``conditional`` as clusters of their own
    (their fusions in them, as in the entry), wired from it by a dashed edge to their parameter.

    ``groups`` are ``analysis.xla_fusion.xla_fusions`` entries: their order numbers the clusters
    and their ``words`` label them.
    """
    drawing = _Drawing(module, groups, new_dot(title))
    drawing.dot.set("compound", "true")
    entry = next(c for c in module["computations"] if c["is_entry"])
    drawing.computation(drawing.dot, entry, {}, 0)
    for src, dst, style in drawing.edges:
        src = drawing.source.get(src, src)
        if src in drawing.ids and dst in drawing.ids:
            dot_edge = pydot.Edge(drawing.ids[src], drawing.ids[dst])
            if style:
                dot_edge.set("style", style)
            drawing.dot.add_edge(dot_edge)
    return drawing.dot.to_string()


MAX_DEPTH = 3  # loops within loops drawn this deep; deeper ones stay one node each
BODY_STYLE = {"style": quoted("rounded,dashed"), "color": quoted("#888888"), "fontsize": "9"}


class _Drawing:
    """One module's DOT as it is drawn: the nodes' DOT ids, the edges (drawn last, between drawn nodes), and the node
    an instruction's result comes from (a fusion's: its body's root)."""

    def __init__(self, module: dict, groups: list[dict], dot):
        self.comps = {c["name"]: c for c in module["computations"]}
        self.group_index = {g["node"]: i for i, g in enumerate(groups)}
        self.group_of = {g["node"]: g for g in groups}
        self.groups, self.dot = groups, dot
        self.ids: dict[str, str] = {}
        self.edges: list[tuple[str, str, str]] = []
        self.source: dict[str, str] = {}
        self.bodies = 0

    def add(self, target, ins: dict, consts: int = 0) -> None:
        self.ids[ins["name"]] = f"h{len(self.ids)}"
        style = PARAM_STYLE if ins["opcode"] == "parameter" else NODE_STYLE
        target.add_node(pydot.Node(self.ids[ins["name"]], label=_label(ins, consts), tooltip=quoted(_tooltip(ins)),
                                   id=quoted(instruction_id(ins["name"])), **style))

    def computation(self, target, comp: dict, wired: dict[str, str], depth: int) -> None:
        """Every instruction of ``comp`` into ``target``; ``wired``: {parameter: the instruction outside that feeds
        it} for a loop's body or a branch (drawn with a dashed edge from it)."""
        folded = _folded(comp["instructions"])
        consts: dict[str, int] = {}
        for ins in comp["instructions"]:
            consts[ins["name"]] = sum(1 for op in ins["operands"] if op in folded)
        for ins in comp["instructions"]:
            if ins["name"] in folded:
                continue
            called = [self.comps[c] for c in ins["called_computations"] if c in self.comps]
            if ins["opcode"] == "fusion" and called:
                self.fusion(target, ins, called[0], folded)
                continue
            self.add(target, ins, consts[ins["name"]])
            self.source[ins["name"]] = ins["name"]
            if ins["name"] in wired:
                self.edges.append((wired[ins["name"]], ins["name"], "dashed"))
            self.edges += [(op, ins["name"], "") for op in ins["operands"] if op not in folded]
            if depth < MAX_DEPTH and ins["opcode"] in ("while", "conditional"):
                self.control(target, ins, called, depth)

    def control(self, target, ins: dict, called: list[dict], depth: int) -> None:
        """A loop's body (not its condition, a comparison) or a conditional's branches, each a dashed box whose
        parameters the ``while`` or ``conditional`` feeds."""
        parts = called[:1] if ins["opcode"] == "while" else called
        for k, comp in enumerate(parts):
            where = ins.get("op_name") or ins["name"]
            words = f"body of {where}" if ins["opcode"] == "while" else f"branch {k} of {where}"
            box = pydot.Cluster(f"body{self.bodies}", label=f"<<i>{html_text(shorten(words, 60))}</i>>", **BODY_STYLE)
            box.set("id", quoted(f"{PREFIX}body-{self.bodies}"))
            self.bodies += 1
            params = [i["name"] for i in comp["instructions"] if i["opcode"] == "parameter"]
            self.computation(box, comp, {p: ins["name"] for p in params}, depth + 1)
            target.add_subgraph(box)

    def fusion(self, target, ins: dict, body: dict, outer_folded: set[str]) -> None:
        group = self.group_of.get(ins["name"])
        category = group["category"] if group else "fusion"
        fill, border = KIND_COLOURS.get(category, KIND_COLOURS["fusion"])
        index = self.group_index.get(ins["name"], len(self.groups) + len(self.source))
        words = group["words"] if group else f"{ins.get('fusion_kind')} fusion"
        sub = fusion_box(index, f"<<i>{html_text(words)}</i><br/>{html_text(ins['name'])}>", PREFIX, fill, border,
                         tooltip=quoted(_tooltip(ins)))
        folded = _folded(body["instructions"])
        params = {i["name"]: i["parameter_number"] for i in body["instructions"] if i["opcode"] == "parameter"}
        for inner in body["instructions"]:
            if inner["name"] in folded or inner["name"] in params:
                continue
            self.add(sub, inner, sum(1 for op in inner["operands"] if op in folded))
            for op in inner["operands"]:
                if op in params:  # fused parameter k <- the fusion's operand k
                    k = params[op]
                    if k is not None and k < len(ins["operands"]) and ins["operands"][k] not in outer_folded:
                        self.edges.append((ins["operands"][k], inner["name"], ""))
                elif op not in folded:
                    self.edges.append((op, inner["name"], ""))
            if inner.get("is_root"):
                self.source[ins["name"]] = inner["name"]
        target.add_subgraph(sub)


def link_groups(groups: list[dict], grappler_fusions: list[dict], grappler_names, prefix: str) -> list[dict]:
    """What lights up together in the linked view: Grappler's graph (element ids with ``prefix``) on
    one side, XLA's on the other, joined by the TF ops each XLA group computes.

    A TF op Grappler absorbed into a fused node is found as that fused node.
    """
    names = set(grappler_names)
    holder = {op: f["node"] for f in grappler_fusions for op in f["absorbed"]}
    out = []
    for i, g in enumerate(groups):
        grappler = []
        for op in g["tf_ops"]:
            node = op if op in names else holder.get(op)
            if node and html_id(node, prefix) not in grappler:
                grappler.append(html_id(node, prefix))
        xla = [cluster_id(i)] if g["opcode"] == "fusion" else [instruction_id(g["node"])]
        out.append({"before": grappler, "after": xla, "label": g["description"]})
    return out
