"""fold-batchnorm: a batch norm after a contraction, folded into its weights and a BiasAdd.

In inference a batch norm is y = x·s + t with s = γ/√(σ²+ε) and t = β − μ·s, constants per channel
(Keras 3 writes it as Mul then AddV2, between a Cast to float32 and a Cast back under a mixed-precision policy;
a frozen graph as Mul by a Const then AddV2, or as one FusedBatchNorm op with is_training false, whose scale,
offset, mean and variance are its inputs). After a Conv2D,
DepthwiseConv2dNative or MatMul, with or without a bias b before it:

    (x ⊛ w + b)·s + t  =  x ⊛ (w·s) + (b·s + t)

per output channel. The rewrite scales the filter's output channels by s, writes b·s + t as the bias
of a BiasAdd (the layer's own, or a new one; of the convolution's layout, NHWC or NCHW), and reads the BiasAdd
where the batch norm's result was read: Conv2D + BiasAdd (+ Relu) is then a remapper pattern (an NCHW one on
CPU only with oneDNN). New weights are held as the layer held its
own (variables stay variables; a frozen graph's are Consts).

Left alone (the result would change, or the form is not the one described): a scale or shift that is
not per output channel, or that depends on the model's input (a batch norm in training); a contraction
or an intermediate read by anything else; a batch norm op of another layout than its convolution; a filter that
is not a weight.
"""

from __future__ import annotations

import numpy as np

from ...model.graph import channel_from_right
from .model import Model, as_bias_add, attr
from .remapper_trap import trap

NAME = "fold-batchnorm"
CONTRACTIONS = ("Conv2D", "DepthwiseConv2dNative", "MatMul")
ADDS = ("AddV2", "Add")
BATCH_NORMS = ("FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3")


def find(model: Model) -> list[dict]:
    """Every contraction [→ bias] → Mul → Add chain of the model's graph, each with why it cannot be folded
    (``why``) or what folding needs (the tensors of the filter, bias, scale and shift)."""
    nodes, users, controlled = model.nodes(), model.consumers(), model.controlled()
    sites = []
    for node in list(model.graph_def.node):
        if node.op not in CONTRACTIONS:
            continue
        chain = [node]
        nxt = _only(users, node.name)
        squeeze = None
        if nxt is not None and nxt.op == "Squeeze" and node.op == "Conv2D":  # a Conv1D's Conv2D, squeezed to 1-D
            squeeze = nxt
            chain.append(nxt)
            nxt = _only(users, nxt.name)
        bias_input = None
        if nxt is not None and (nxt.op == "BiasAdd" or nxt.op in ADDS and _other(nxt, chain[-1]) is not None):
            other = nxt.input[1] if nxt.op == "BiasAdd" else _other(nxt, chain[-1])
            if model.constant_valued(other, nodes) and _is_vector(model, other):
                bias_input = other
                chain.append(nxt)
                nxt = _only(users, nxt.name)
        if nxt is not None and nxt.op in BATCH_NORMS:
            if squeeze is not None:
                continue  # a FusedBatchNorm op reads 4-D data: not after a Squeeze
            site = _batch_norm_op(model, nodes, chain, nxt, bias_input)
            if site is not None:
                site["why"] = (site["why"] or _refusal(model, node, chain + [nxt], nodes, controlled)
                               or trap(model, users, nxt.name, node.op))
                sites.append(site)
            continue
        cast_in = cast_out = None
        if nxt is not None and nxt.op == "Cast" and _float_cast(model, nxt):
            cast_in = nxt  # a mixed-precision policy: Keras computes the batch norm in float32
            chain.append(nxt)
            nxt = _only(users, nxt.name)
        if nxt is None or nxt.op != "Mul":
            continue
        scale = _other(nxt, chain[-1])
        add = _only(users, nxt.name)
        if scale is None or add is None or add.op not in ADDS:
            continue
        shift = _other(add, nxt)
        if shift is None or not model.constant_valued(scale, nodes) or not model.constant_valued(shift, nodes):
            continue  # not a batch norm in inference (its statistics come from the input)
        chain += [nxt, add]
        if cast_in is not None:
            cast_out = _only(users, add.name)
            # the Cast back to the contraction's dtype (another dtype, or none: the Cast to float32 stays)
            cast_out = cast_out if cast_out is not None and cast_out.op == "Cast" and \
                attr(cast_out, "DstT").type == attr(node, "T").type else None
            chain += [cast_out] if cast_out is not None else []
        sites.append({"nodes": [n.name for n in chain], "contraction": node.name, "bias_node": chain[2 if squeeze else 1].name
                      if bias_input else None, "bias": bias_input, "scale": scale, "shift": shift,
                      "squeeze": squeeze.name if squeeze is not None else None,
                      "cast_in": cast_in.name if cast_in is not None else None,
                      "cast_out": cast_out.name if cast_out is not None else None,
                      "why": _refusal(model, node, chain, nodes, controlled) or trap(model, users, chain[-1].name, node.op)})
    return sites


def _batch_norm_op(model: Model, nodes: dict, chain: list, bn, bias_input: str | None) -> dict | None:
    """A FusedBatchNorm op reading the chain's output, with constant statistics: a site (``why`` set when it
    cannot be folded), or None when it is not an inference batch norm of that output."""
    if bn.input[0].split(":")[0] != chain[-1].name or bn.input[0].endswith((":1", ":2")):
        return None
    stats = list(bn.input[1:5])
    if len(stats) != 4 or not all(model.constant_valued(t, nodes) for t in stats):
        return None  # its statistics come from the input: a batch norm in training
    why = None
    others = [i for n in model.graph_def.node for i in n.input
              if i.split(":")[0].lstrip("^") == bn.name and i not in (bn.name, f"{bn.name}:0")]
    others += [t for t in model.outputs if t.split(":")[0] == bn.name and t not in (bn.name, f"{bn.name}:0")]
    if others:
        why = f"{bn.name}'s other outputs (its batch statistics) or a control edge are read"
    elif attr(bn, "is_training").b:
        why = f"{bn.name} normalises with the batch's own statistics (is_training)"
    elif _layout(bn) != _layout(chain[0]):
        why = f"{bn.name} normalises {_layout(bn)} data, its {chain[0].op} writes {_layout(chain[0])}"
    return {"nodes": [n.name for n in chain] + [bn.name], "contraction": chain[0].name,
            "bias_node": chain[1].name if bias_input else None, "bias": bias_input, "batch_norm": stats,
            "epsilon": attr(bn, "epsilon").f, "scale": None, "shift": None, "why": why}


def apply(model: Model, targets: set[str] | None = None) -> tuple[list[dict], list[dict]]:
    """Fold every foldable site (or those whose contraction is in ``targets``): (sites folded, sites left
    with the reason)."""
    sites = [s for s in find(model) if targets is None or s["contraction"] in targets]
    ready = [s for s in sites if s["why"] is None]
    tensors = [t for s in ready for t in (_filter(model, s), s["bias"], s["scale"], s["shift"], *s.get("batch_norm", ()))
               if t]
    values = model.values(tensors) if tensors else {}
    done, left = [], [s for s in sites if s["why"] is not None]
    for site in ready:
        why = _fold(model, site, values)
        (left if why else done).append(dict(site, why=why) if why else site)
    return [_public(s) for s in done], [_public(s) for s in left]


def _fold(model: Model, site: dict, values: dict) -> str | None:
    tf = model.tf
    nodes = model.nodes()
    conv = nodes[site["contraction"]]
    dtype = tf.dtypes.as_dtype(conv.attr["T"].type)
    filter_tensor = _filter(model, site)
    w = values[filter_tensor].astype(np.float64)
    channels, at = _channels(conv, w), channel_from_right(_layout(conv))
    if site.get("batch_norm"):  # a FusedBatchNorm op: s = γ/√(σ²+ε), t = β − μ·s
        gamma, beta, mean, variance = (_per_channel(values[t], channels) for t in site["batch_norm"])
        if gamma is None or beta is None or mean is None or variance is None:
            return "the batch norm's statistics are not one value per output channel"
        scale = gamma / np.sqrt(variance + site["epsilon"])
        shift = beta - mean * scale
    else:
        scale, shift = (_per_channel(values[site[k]], channels, at) for k in ("scale", "shift"))
    if scale is None or shift is None:
        return "the batch norm's scale or shift is not one value per output channel"
    # a BiasAdd's bias is [C] in either layout; an Add's broadcasts as the batch norm's scale does
    bias_at = 1 if site["bias_node"] and nodes[site["bias_node"]].op == "BiasAdd" else at
    bias = _per_channel(values[site["bias"]], channels, bias_at) if site["bias"] else np.zeros(channels)
    if bias is None:
        return "the bias is not one value per output channel"
    if conv.op == "Conv2D":
        folded = w * scale
    elif conv.op == "DepthwiseConv2dNative":
        folded = w * scale.reshape(w.shape[2], w.shape[3])
    else:
        folded = w * (scale[:, None] if attr(conv, "transpose_b").b else scale)
    weight = model.weight(f"{conv.name}/folded_filter", folded, dtype, like=filter_tensor)
    conv.input[1] = weight
    new_bias = model.weight(f"{conv.name}/folded_bias", bias * scale + shift, dtype, like=filter_tensor)
    # The op; or its Mul and Add; or, in mixed precision, the Casts around them too (the folded bias is added in
    # the contraction's dtype, so a Cast to float32 stays only where the batch norm's float32 result was read)
    replaced = (site["nodes"][-1:] if site.get("batch_norm") else site["nodes"][-4:] if site.get("cast_out")
                else site["nodes"][-2:])
    if site["bias_node"]:  # the layer's own bias (a BiasAdd, or an Add that becomes one) takes the folded bias
        node = model.nodes()[site["bias_node"]]
    else:
        node = model.graph_def.node.add(name=model.unique(f"{conv.name}/BiasAdd"))
        node.attr["T"].type = dtype.as_datatype_enum
    # after a Conv1D's Squeeze, as its own bias is (squeeze-after-activation then moves the Squeeze past both)
    as_bias_add(node, site.get("squeeze") or conv.name, new_bias, _layout(conv))
    result = node.name
    if site.get("cast_in") and not site.get("cast_out"):
        model.nodes()[site["cast_in"]].input[0] = node.name
        result = site["cast_in"]
    model.reroute(f"{replaced[-1]}:0", f"{result}:0")
    model.remove(replaced)
    return None


def _refusal(model: Model, conv, chain: list, nodes: dict, controlled: set) -> str | None:
    if _layout(conv) not in ("NHWC", "NCHW"):
        return f"{conv.op} writes {_layout(conv)} data"
    if conv.op == "MatMul" and attr(conv, "transpose_a").b:
        return "the MatMul transposes its input"
    if not model.constant_valued(conv.input[1], nodes) or model.weight_of(conv.input[1]) is None:
        return f"the {conv.op}'s filter is not a weight (a constant or a variable read)"
    if model.constant_valued(conv.input[0], nodes):
        return f"the {conv.op} computes on constants only"
    for node in chain:
        if model.has_control_edges(node.name, nodes, controlled):
            return f"{node.name} has control edges"
    return None


def _float_cast(model: Model, cast) -> bool:
    """A Cast between floating-point types (an integer one would truncate what the fold computes exactly)."""
    types = [attr(cast, a).type for a in ("SrcT", "DstT")]
    return all(t and model.tf.dtypes.as_dtype(t).is_floating for t in types)


def _filter(model: Model, site: dict) -> str:
    return model.nodes()[site["contraction"]].input[1]


def _channels(conv, w: np.ndarray) -> int:
    if conv.op == "Conv2D":
        return w.shape[-1]
    if conv.op == "DepthwiseConv2dNative":
        return w.shape[2] * w.shape[3]
    return w.shape[0] if attr(conv, "transpose_b").b else w.shape[-1]


def _layout(node) -> str:
    """A convolution's or batch norm's data layout; a MatMul's output holds its channels last, as NHWC does."""
    if node.op == "MatMul":
        return "NHWC"
    return attr(node, "data_format").s.decode() or "NHWC"


def _per_channel(value: np.ndarray, channels: int, from_right: int = 1) -> np.ndarray | None:
    """A value broadcast along the channel axis only, as a [C] vector: a scalar; [C] or [1, 1, 1, C] channels last
    (``from_right`` 1); [C, 1, 1] or [1, C, 1, 1] channels first (3)."""
    value = np.asarray(value, dtype=np.float64)
    if value.ndim == 0 or value.size == 1:
        return np.full(channels, float(value.reshape(-1)[0]))
    if value.size == channels and value.ndim >= from_right and value.shape[value.ndim - from_right] == channels:
        return value.reshape(channels)
    return None


def _is_vector(model: Model, tensor: str) -> bool:
    shape = model.shape(tensor)
    return shape is None or len([d for d in shape if d != 1]) <= 1


def _only(users: dict, name: str):
    """The one consumer of ``name``'s output, or None (several, none, or the model's output)."""
    found = users.get(name) or []
    return found[0][0] if len(found) == 1 and found[0][0] is not None else None


def _other(node, source) -> str | None:
    """The input of a binary op ``node`` that is not ``source``'s output (None if both are, or neither)."""
    data = [i for i in node.input if not i.startswith("^")]
    if len(data) != 2:
        return None
    own = [i for i in data if i.split(":")[0] == source.name and (":" not in i or i.endswith(":0"))]
    if len(own) != 1:
        return None
    return data[1] if data[0] == own[0] else data[0]


def _public(site: dict) -> dict:
    return {"nodes": site["nodes"], "why": site.get("why")}
