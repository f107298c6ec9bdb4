"""bias-add: a 1-D bias added with AddV2 after a contraction, written as the BiasAdd the remapper fuses.

``AddV2(x ⊛ w, b)`` with b of shape [C] (C the last dimension of x ⊛ w) broadcasts b along the last
axis: it is ``BiasAdd(x ⊛ w, b)`` (NHWC) exactly, element for element. The node keeps its name and
inputs; only its op changes. Left alone: a bias of another shape (a broadcast over another axis would
change the result), a contraction read by anything else, a node with control edges.

A second such bias after the contraction's BiasAdd (``AddV2(BiasAdd(x ⊛ w, b1), b2)``) is merged into it:
the BiasAdd adds b1 + b2 (summed once, in float64, then held as b1 is) and what read the AddV2 reads the
BiasAdd, so the activation after it follows the bias directly. The sum rounds once where the model rounded
twice: the numbers agree to the last bit or two, which the check against the model measures.
"""

from __future__ import annotations

import numpy as np

from .fold_batchnorm import ADDS, CONTRACTIONS, _only, _other
from .model import Model, as_bias_add, attr, each_site
from .remapper_trap import trap

NAME = "bias-add"


def find(model: Model) -> list[dict]:
    users = model.consumers()
    sites = []
    for node in list(model.graph_def.node):
        if node.op not in CONTRACTIONS + ("Conv3D",):
            continue
        add = _only(users, node.name)
        if add is not None and add.op == "BiasAdd":
            sites += _second(model, users, node, add)
            continue
        if add is None or add.op not in ADDS:
            continue
        bias = _other(add, node)
        if bias is None or not model.constant_valued(bias):
            continue  # an add of two computed tensors (a residual), not a bias
        sites.append({"nodes": [node.name, add.name], "contraction": node.name, "add": add.name, "bias": bias,
                      "why": _why_not(model, node, bias, node, [add]) or trap(model, users, add.name, node.op)})
    return sites


def _why_not(model: Model, node, bias: str, layout, adds: list) -> str | None:
    """Why ``bias`` added after the contraction ``node`` is not a BiasAdd along its last axis (None: it is);
    ``layout``: the op whose data format that axis follows; ``adds``: the ops the rewrite touches."""
    out, shape = model.shape(node.name), model.shape(bias)
    if shape is None or len(shape) != 1 or not out or shape[0] != out[-1]:
        return f"the added tensor has shape {shape}, not [{out[-1] if out else 'C'}] along the last axis"
    if layout.op != "MatMul" and attr(layout, "data_format").s not in (b"", b"NHWC", b"NDHWC"):
        return f"{layout.name} is channels-first: a BiasAdd there reads another axis"
    if any(model.has_control_edges(a.name) for a in adds):
        return f"{' or '.join(a.name for a in adds)} has control edges"
    return None


def _second(model: Model, users: dict, node, bias_add) -> list[dict]:
    """The site of a second bias added after ``node``'s BiasAdd, or none."""
    add = _only(users, bias_add.name)
    bias = _other(add, bias_add) if add is not None and add.op in ADDS else None
    if bias is None or not model.constant_valued(bias):
        return []
    why = (f"{bias_add.name}'s own bias is computed from the model's inputs"
           if not model.constant_valued(bias_add.input[1]) else _why_not(model, node, bias, bias_add, [add, bias_add])
           or trap(model, users, add.name, node.op))
    return [{"nodes": [node.name, bias_add.name, add.name], "contraction": node.name, "add": add.name, "bias": bias,
             "bias_add": bias_add.name, "why": why}]


def _merge(model: Model, site: dict) -> list[str]:
    """The second bias summed into the BiasAdd's; the AddV2 dropped."""
    tf, bias_add = model.tf, model.nodes()[site["bias_add"]]
    first = bias_add.input[1]
    values = model.values([first, site["bias"]])
    dtype = tf.dtypes.as_dtype(bias_add.attr["T"].type)
    merged = values[first].astype(np.float64) + values[site["bias"]].astype(np.float64)
    bias_add.input[1] = model.weight(f"{site['bias_add']}/merged_bias", merged, dtype, like=first)
    model.reroute(f"{site['add']}:0", f"{site['bias_add']}:0")
    model.remove([site["add"]])
    return [bias_add.input[1]]


def apply(model: Model, targets: set[str] | None = None) -> tuple[list[dict], list[dict]]:
    def rewrite(site: dict):
        if "bias_add" in site:
            return _merge(model, site)
        return as_bias_add(model.nodes()[site["add"]], site["contraction"], site["bias"])

    return each_site(find(model), targets, "contraction", rewrite)
