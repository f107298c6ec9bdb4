"""XLA's optimised HLO module (the worker's plain dict) -> DOT, one cluster per fusion.

The entry computation's instructions are nodes; a fusion is drawn as a box holding its fused
computation's instructions, wired to the entry through its parameters (fused parameter k is the
fusion's operand k). Scalar constants, and broadcasts of them, are counted on their consumer
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
    """DOT of the entry computation, each fusion (and custom fusion) a cluster of its fused instructions.

    ``groups`` are ``analysis.xla_fusion.xla_fusions`` entries: their order numbers the clusters
    and their ``words`` label them.
    """
    comps = {c["name"]: c for c in module["computations"]}
    entry = next(c for c in module["computations"] if c["is_entry"])
    group_index = {g["node"]: i for i, g in enumerate(groups)}
    group_of = {g["node"]: g for g in groups}
    dot = new_dot(title)
    dot.set("compound", "true")
    ids: dict[str, str] = {}  # instruction name -> DOT id
    edges: list[tuple[str, str]] = []
    # the node an entry instruction's result comes from (a fusion: its body's root)
    source: dict[str, str] = {}
    entry_folded = _folded(entry["instructions"])
    const_counts: dict[str, int] = {}

    def add(target, ins: dict, consts: int = 0) -> None:
        ids[ins["name"]] = f"h{len(ids)}"
        style = PARAM_STYLE if ins["opcode"] == "parameter" else NODE_STYLE
        target.add_node(pydot.Node(ids[ins["name"]], label=_label(ins, consts), tooltip=quoted(_tooltip(ins)),
                                   id=quoted(instruction_id(ins["name"])), **style))

    for ins in entry["instructions"]:
        for op in ins["operands"]:
            if op in entry_folded:
                const_counts[ins["name"]] = const_counts.get(ins["name"], 0) + 1
    for ins in entry["instructions"]:
        if ins["name"] in entry_folded:
            continue
        body = comps.get(ins["called_computations"][0]) if ins["opcode"] == "fusion" and ins["called_computations"] else None
        if body is None:
            add(dot, ins, const_counts.get(ins["name"], 0))
            source[ins["name"]] = ins["name"]
            edges += [(op, ins["name"]) for op in ins["operands"] if op not in entry_folded]
            continue
        group = group_of.get(ins["name"])
        category = group["category"] if group else "fusion"
        fill, border = KIND_COLOURS.get(category, KIND_COLOURS["fusion"])
        index = group_index.get(ins["name"], len(groups) + len(source))
        words = group["words"] if group else f"{ins.get('fusion_kind')} fusion"
        sub = fusion_box(index, f"<<i>{html_text(words)}</i><br/>{html_text(ins['name'])}>", PREFIX, fill, border,
                         tooltip=quoted(_tooltip(ins)))
        folded = _folded(body["instructions"])
        params = {i["name"]: i["parameter_number"] for i in body["instructions"] if i["opcode"] == "parameter"}
        inner_consts: dict[str, int] = {}
        for inner in body["instructions"]:
            inner_consts[inner["name"]] = sum(1 for op in inner["operands"] if op in folded)
        for inner in body["instructions"]:
            if inner["name"] in folded or inner["name"] in params:
                continue
            add(sub, inner, inner_consts[inner["name"]])
            for op in inner["operands"]:
                if op in params:  # fused parameter k <- the fusion's operand k
                    k = params[op]
                    if k is not None and k < len(ins["operands"]) and ins["operands"][k] not in entry_folded:
                        edges.append((ins["operands"][k], inner["name"]))
                elif op not in folded:
                    edges.append((op, inner["name"]))
            if inner.get("is_root"):
                source[ins["name"]] = inner["name"]
        dot.add_subgraph(sub)
    for src, dst in edges:
        src = source.get(src, src)
        if src in ids and dst in ids:
            dot.add_edge(pydot.Edge(ids[src], ids[dst]))
    return dot.to_string()


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
