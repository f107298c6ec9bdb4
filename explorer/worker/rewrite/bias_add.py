"""bias-add: a 1-D bias added with AddV2 after a contraction, written as the BiasAdd the remapper fuses.

``AddV2(x ⊛ w, b)`` with b of shape [C] (C the last dimension of x ⊛ w) broadcasts b along the last
axis: it is ``BiasAdd(x ⊛ w, b)`` (NHWC) exactly, element for element. The node keeps its name and
inputs; only its op changes. Left alone: a bias of another shape (a broadcast over another axis would
change the result), a contraction read by anything else, a node with control edges.
"""

from __future__ import annotations

from .fold_batchnorm import ADDS, CONTRACTIONS, _only, _other
from .model import Model, as_bias_add, attr, each_site

NAME = "bias-add"


def find(model: Model) -> list[dict]:
    users = model.consumers()
    sites = []
    for node in list(model.graph_def.node):
        if node.op not in CONTRACTIONS + ("Conv3D",):
            continue
        add = _only(users, node.name)
        if add is None or add.op not in ADDS:
            continue
        bias = _other(add, node)
        if bias is None:
            continue
        out, shape = model.shape(node.name), model.shape(bias)
        why = None
        if not model.constant_valued(bias):
            continue  # an add of two computed tensors (a residual), not a bias
        if shape is None or len(shape) != 1 or out is None or not out or shape[0] != out[-1]:
            why = f"the added tensor has shape {shape}, not [{out[-1] if out else 'C'}] along the last axis"
        elif node.op != "MatMul" and attr(node, "data_format").s not in (b"", b"NHWC", b"NDHWC"):
            why = f"{node.op} is channels-first: a BiasAdd there reads another axis"
        elif model.has_control_edges(add.name):
            why = f"{add.name} has control edges"
        sites.append({"nodes": [node.name, add.name], "contraction": node.name, "add": add.name, "bias": bias,
                      "why": why})
    return sites


def apply(model: Model, targets: set[str] | None = None) -> tuple[list[dict], list[dict]]:
    return each_site(find(model), targets, "contraction",
                     lambda site: as_bias_add(model.nodes()[site["add"]], site["contraction"], site["bias"]))
