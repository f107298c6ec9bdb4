"""dilated-conv: a dilated convolution written as space-to-batch, written as one Conv2D with ``dilations``.

tf.nn.convolution (which Keras 3 calls for dilation_rate > 1) computes a dilated convolution as

    SpaceToBatchND(x, block, paddings) → [ExpandDims →] Conv2D (VALID, no dilation) [→ Squeeze]
        → BatchToSpaceND(·, block, crops)

where ``paddings`` are the convolution's own padding (``base``, zero for VALID) plus what makes each spatial size
a multiple of the block, and ``crops`` take that extra off again. It is, element for element, the Conv2D on x with
``dilations`` = block and padding ``paddings − crops`` (VALID when that is zero, EXPLICIT otherwise): one Conv2D
that its bias then follows, which the remapper fuses. The Conv2D keeps its name; the two space-to-batch ops go.

Left alone: block shapes, paddings or crops that are not constants or do not agree; a padding the crops do not
leave non-negative; a strided or already dilated Conv2D; a channels-first one; an intermediate read by anything
else, or control edges.
"""

from __future__ import annotations

import numpy as np

from .fold_batchnorm import _only
from .model import Model, attr, each_site

NAME = "dilated-conv"


def find(model: Model) -> list[dict]:
    nodes, users = model.nodes(), model.consumers()
    sites = []
    for back in list(model.graph_def.node):
        if back.op != "BatchToSpaceND":
            continue
        conv, squeeze = _reads(nodes, back), None
        if conv is not None and conv.op == "Squeeze":  # a Conv1D's: its Conv2D is squeezed back to 1-D
            conv, squeeze = _reads(nodes, conv), conv
        if conv is None or conv.op != "Conv2D":
            continue
        space, expand = _reads(nodes, conv), None
        if space is not None and space.op == "ExpandDims":
            space, expand = _reads(nodes, space), space
        if space is None or space.op != "SpaceToBatchND":
            continue
        inner = [space] + ([expand] if expand else []) + [conv] + ([squeeze] if squeeze else [])
        site = {"nodes": [n.name for n in inner + [back]], "conv": conv.name, "space": space.name, "back": back.name,
                "expand": expand.name if expand else None, "why": None}
        site["why"] = _refusal(model, site, inner, back, users)
        sites.append(site)
    return sites


def _reads(nodes: dict, node):
    """The node whose output ``node`` reads first (its data input), or None."""
    return nodes.get(node.input[0].split(":")[0]) if node.input else None


def _refusal(model: Model, site: dict, inner: list, back, users: dict) -> str | None:
    nodes = model.nodes()
    conv, space = nodes[site["conv"]], nodes[site["space"]]
    constants = [space.input[1], space.input[2], back.input[1], back.input[2]]
    if not all(model.constant_valued(t) for t in constants):
        return "the block shape, paddings or crops are computed from the model's input"
    if attr(conv, "data_format").s not in (b"", b"NHWC"):
        return "the Conv2D is channels-first"
    if list(attr(conv, "strides").list.i or [1, 1, 1, 1]) != [1, 1, 1, 1] or \
            list(attr(conv, "dilations").list.i or [1, 1, 1, 1]) != [1, 1, 1, 1]:
        return "the Conv2D is strided or already dilated"
    if attr(conv, "padding").s != b"VALID":
        return "the Conv2D pads itself"
    for node in inner:  # each read by the next only
        if _only(users, node.name) is None:
            return f"{node.name} is read by more than the convolution's next op"
    if any(model.has_control_edges(n) for n in site["nodes"]):
        return "an op of it has control edges"
    return None


def apply(model: Model, targets: set[str] | None = None) -> tuple[list[dict], list[dict]]:
    sites = [s for s in find(model) if targets is None or s["conv"] in targets]
    for site in sites:
        if site["why"] is None:
            site["why"] = _plan(model, site)
    return each_site(sites, targets, "conv", lambda site: _rewrite(model, site))


def _plan(model: Model, site: dict) -> str | None:
    """The dilations and padding of the one Conv2D (kept in ``site``), or why the values do not make one."""
    nodes = model.nodes()
    space, back = nodes[site["space"]], nodes[site["back"]]
    tensors = [space.input[1], space.input[2], back.input[1], back.input[2]]
    values = model.values(tensors)  # one entry per tensor: a block shape both read is one
    block, paddings, block_back, crops = (np.asarray(values[t]) for t in tensors)
    if block.shape != block_back.shape or not np.array_equal(block, block_back) or block.ndim != 1 or \
            paddings.shape != (len(block), 2) or crops.shape != paddings.shape:
        return "the block shapes, paddings and crops do not agree"
    base = paddings - crops
    if (base < 0).any() or len(block) not in (1, 2):
        return f"the crops ({crops.tolist()}) take off more than the paddings ({paddings.tolist()}) put on"
    if len(block) == 2:
        if site["expand"]:
            return "a 2-D block around an expanded 1-D convolution"
        axes = (1, 2)
    else:  # a Conv1D: its 1-D spatial axis lands at 1 or 2 of the Conv2D's input, by ExpandDims' axis
        if not site["expand"]:
            return "a 1-D block around a 2-D convolution"
        axis = int(np.asarray(model.values([nodes[site["expand"]].input[1]])[nodes[site["expand"]].input[1]]))
        axes = (2,) if axis in (1, -3) else (1,) if axis in (2, -2) else ()
        if not axes:
            return f"the 1-D convolution is expanded at axis {axis}"
    dilations, explicit = [1, 1, 1, 1], [0] * 8
    for axis, rate, (start, end) in zip(axes, block.tolist(), base.tolist()):
        dilations[axis] = int(rate)
        explicit[2 * axis:2 * axis + 2] = [int(start), int(end)]
    site["dilations"], site["explicit"] = dilations, explicit
    return None


def _rewrite(model: Model, site: dict) -> list[str]:
    nodes = model.nodes()
    conv, space = nodes[site["conv"]], nodes[site["space"]]
    first = nodes[site["expand"]] if site["expand"] else conv
    first.input[0] = space.input[0]  # the convolution reads what the space-to-batch read
    conv.attr["dilations"].list.i[:] = site["dilations"]
    if any(site["explicit"]):
        conv.attr["padding"].s = b"EXPLICIT"
        conv.attr["explicit_paddings"].list.i[:] = site["explicit"]
    previous = nodes[site["nodes"][-2]]  # the Squeeze, or the Conv2D
    model.reroute(f"{site['back']}:0", f"{previous.name}:0")
    model.forget_shapes(site["nodes"][1:-1])  # recorded for the space-to-batch shapes
    model.remove([site["space"], site["back"]])
    return []
