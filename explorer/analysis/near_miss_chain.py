"""Near-misses that follow a contraction: what stands between it (fused or not) and the pattern.

Unfused contractions: a bias written as a broadcast Add, a Reshape between the MatMul and its bias
(a Keras Dense on a 3-D input), a batch norm written as arithmetic, an activation with no bias before
it, the pattern itself left unfused (a dtype not fused here), a dilated convolution written as space-to-batch,
EinsumDense's BatchMatMulV2 paths and Einsum (no remapper pattern at all). Fused contractions: a
batch norm written as arithmetic after them, an activation or a GELU left outside.
"""

from __future__ import annotations

from ..model.chain import Chain
from ..model.graph import Graph, Node, channel_from_right
from .fusion import canonical_op, fused_label
from .near_miss_rules import Where, record, rules
from .preconditions import STOCK_ACTS

UNFUSED = frozenset({"MatMul", "Conv2D", "DepthwiseConv2dNative", "Conv3D"})
FUSED = frozenset({"_FusedMatMul", "_FusedConv2D", "_FusedDepthwiseConv2dNative", "_FusedConv3D"})
ACTIVATIONS = frozenset({"Relu", "Relu6", "Elu", "LeakyRelu", "Tanh", "Sigmoid"})
GELU_OPS = frozenset({"Mul", "AddV2", "Square", "Pow", "Neg", "RealDiv"})
CURVES = frozenset({"Erf", "Erfc", "Tanh"})  # what makes element-wise ops after a bias a GELU
FOLD_BN = ("for inference, fold the batch norm into the layer's weights and bias (or call "
           "tf.compat.v1.nn.fused_batch_norm after a convolution without bias)")
DENSE_2D = "apply the Dense to a 2-D tensor (reshape to [batch × tokens, features] before it, back after)"


def after_contractions(graph: Graph, users: dict, where: Where, traced: Graph | None) -> list[dict]:
    found: list[dict] = []
    for node in graph.nodes:
        outs = [c for c in users.get(node.name, ()) if c.op != "_Retval"]
        if node.op == "Einsum":
            found.append(_einsum(node))
        elif node.op in ("BatchMatMulV2", "BatchMatMul"):
            found += _batch_matmul(node, outs, users, graph, where)
        elif node.op in UNFUSED:
            found += _unfused(node, outs, graph, users, where, traced)
        elif node.op in FUSED and node.fused_ops and node.fused_ops[-1] in ("BiasAdd", "FusedBatchNorm"):
            found += _after_fused(node, outs, graph, users, where)
    return found


def _per_channel(node: Node | None, graph: Graph, from_right: int = 1) -> bool:
    """A batch norm's scale or shift: a constant, a tensor of one value per channel, or something read off an
    Rsqrt: Keras 3's shift is β − μ·(γ·rsqrt(σ²+ε)), three ops from it (the way to tell where a graph records no
    shapes, as a simulated GPU's does)."""
    if node is None:
        return False
    if node.op in ("Const", "Rsqrt") or _channel_shaped(node, from_right):
        return True
    if _dims(node.shape) is not None:
        return False  # a recorded shape, and not one value per channel (a batch norm along another axis)
    frontier = [node]
    for _ in range(3):
        frontier = [graph[e.src] for n in frontier for e in n.data_inputs if e.src in graph]
        if any(n.op == "Rsqrt" for n in frontier):
            return True
    return False


def _channel_shaped(node: Node, from_right: int = 1) -> bool:
    """One value per channel, broadcast over the rest: [C] or [1, ..., 1, C] (channels last, ``from_right`` 1);
    [C, 1, 1] or [1, C, 1, 1] (channels first: 3)."""
    dims = _dims(node.shape) or []
    if len(dims) < from_right:
        return False
    return all(d == "1" for i, d in enumerate(dims) if i != len(dims) - from_right)


def _batch_norm(start: Node, graph: Graph, users: dict) -> list[str]:
    """[Mul, Add] right after ``start`` (through a Conv1D's Squeeze, a BiasAdd) when they scale and shift per channel.
    Under a mixed-precision policy Keras computes a batch norm in float32: [Cast, Mul, Add, Cast back] then."""
    node, names = start, []
    axis = channel_from_right(start.attr.get("data_format") or "")
    outs = users.get(node.name, ())
    for op in ("Squeeze", "BiasAdd", "Cast"):
        if len(outs) == 1 and outs[0].op == op:
            node = outs[0]
            names.append(node.name)
            outs = users.get(node.name, ())
    if len(outs) != 1 or outs[0].op != "Mul":
        return []
    mul = outs[0]
    if not any(_per_channel(graph.get(e.src), graph, axis) for e in mul.data_inputs if e.src != node.name):
        return []
    adds = users.get(mul.name, ())
    # AddN: the arithmetic optimiser merges the shift with a residual add that follows (ResNet's blocks).
    if len(adds) != 1 or adds[0].op not in ("AddV2", "Add", "Sub", "AddN"):
        return []
    # An AddN may carry the shift folded together with others' (the optimiser hoists constants): the
    # per-channel scale straight after the contraction already says batch norm.
    if adds[0].op != "AddN" and not any(_per_channel(graph.get(e.src), graph, axis)
                                        for e in adds[0].data_inputs if e.src != mul.name):
        return []
    back = users.get(adds[0].name, ())
    cast_back = [back[0].name] if node.op == "Cast" and len(back) == 1 and back[0].op == "Cast" else []
    return names + [mul.name, adds[0].name] + cast_back


def _batch_norm_miss(node: Node, norm: list[str], graph: Graph, where: Where, fused: bool, users: dict) -> dict:
    base = canonical_op(node.op).removeprefix("Fused") if fused else node.op
    label = fused_label(node.op, node.fused_ops) if fused else node.op
    if base == "Conv2D":
        needs, _, _ = rules(Chain("Conv2D", bias="none", norm="FusedBatchNorm"), node, where, graph)
        needs = ["a FusedBatchNormV3 node (inference) right after the Conv2D, with no bias between "
                 "(Conv2D+FusedBatchNorm, CPU)"] + needs
    else:
        needs = [f"a Conv2D: the remapper has no {base}+batch-norm pattern (only a Conv2D takes a FusedBatchNorm)"]
    ops = ", ".join(sorted({graph[n].op for n in norm if n in graph} - {"Cast", "Squeeze", "BiasAdd"}))
    casts = [graph[n] for n in norm if n in graph and graph[n].op == "Cast"]
    squeezed = any(graph[n].op == "Squeeze" for n in norm if n in graph)  # a Conv1D's Conv2D, squeezed to 1-D
    label_to = f"{label} → Squeeze" if squeezed else label
    if casts:
        needs.append(f"no Cast between the {base} and the batch norm (the remapper fuses ops of one dtype)")
        to = casts[0].dtype or "float32"
        form = (f"{label_to} → Cast to {to} → batch norm written as arithmetic ({ops})"
                + (f" → Cast back to {casts[1].dtype or node.dtype}" if len(casts) > 1 else "")
                + f": a BatchNormalization under a mixed-precision policy (Keras computes it in {to})")
    else:
        form = (f"{label_to} → batch norm written as arithmetic ({ops}): Keras 3's BatchNormalization in "
                "inference, or a batch norm folded into constants" + (" (after a Conv1D)" if squeezed else ""))
    miss = record("batchnorm-as-arithmetic", [node.name, *norm], f"{label} + batch norm", form, "; ".join(needs),
                  FOLD_BN, after_fused=fused)
    # a Conv1D's: once folded, its bias follows the Squeeze, and so does the activation after it
    act = _activation_after(graph[norm[-1]], users) if norm and norm[-1] in graph else None
    if squeezed and act is not None and act.op in STOCK_ACTS:
        miss["also"] = ["activation-after-squeeze"]
    return miss


def _unfused(node: Node, outs: list[Node], graph: Graph, users: dict, where: Where, traced) -> list[dict]:
    if len(outs) != 1:
        return []
    nxt = outs[0]
    if nxt.op == "Reshape":
        after = [c for c in users.get(nxt.name, ()) if c.op in ("BiasAdd", "AddV2", "Add")]
        if after:
            tail, act = _tail(after[0], graph, users)
            shown = ("GELU" if act.startswith("Gelu") else act) if act else ""
            return [record("reshape-before-bias", [node.name, nxt.name, after[0].name, *tail],
                           f"{node.op} + BiasAdd" + (f" + {shown}" if act else ""),
                           f"{node.op} → Reshape → {after[0].op}"
                           + (f" → {_act_words(act)} ({', '.join(tail)}), left outside as well" if act else "")
                           + " (a Keras Dense applied to a 3-D or larger input)",
                           "BiasAdd directly on the contraction's output (a 2-D MatMul)"
                           + (f", and the {shown} straight after the BiasAdd" if act else ""),
                           DENSE_2D + (f"; its {shown} then follows the bias (apply it before reshaping back)"
                                       if act else ""))]
    if nxt.op == "BatchToSpaceND" or nxt.op == "Squeeze" and [c.op for c in users.get(nxt.name, ())] == [
            "BatchToSpaceND"]:
        return _space_to_batch(node, nxt, graph, users, where)
    if node.op == "Conv2D" and nxt.op == "Squeeze" and [c.op for c in users.get(nxt.name, ())] == ["BiasAdd"]:
        squeezed = _squeezed(node, nxt, users[nxt.name][0], users, where, graph)
        if squeezed:
            return squeezed
    norm = _batch_norm(node, graph, users)
    if norm:
        return [_batch_norm_miss(node, norm, graph, where, False, users)]
    if nxt.op == "BiasAdd":
        return _not_fused_here(node, nxt, users, where, graph)
    if nxt.op in ("AddV2", "Add"):
        if _is_bias(nxt, node, graph):
            needs, candidates, code = rules(Chain(node.op, bias="Add"), node, where, graph)
            return [record("bias-as-add", [node.name, nxt.name], f"{node.op} + BiasAdd",
                           f"{node.op} → {nxt.op} of a 1-D bias (a broadcast add)",
                           "; ".join(needs) or "a BiasAdd (tf.nn.bias_add)", "; ".join(code) or "use tf.nn.bias_add",
                           candidates)]
    if nxt.op in ACTIVATIONS:
        return [_activation_without_bias(node, nxt, traced)]
    return []


def _space_to_batch(node: Node, nxt: Node, graph: Graph, users: dict, where: Where) -> list[dict]:
    """A dilated convolution as tf.nn.convolution writes it (Keras's dilation_rate > 1): SpaceToBatchND → Conv2D
    [→ Squeeze] → BatchToSpaceND → bias, or a batch norm (``also`` names its kind: folding it makes the bias). The
    BatchToSpaceND stands between the Conv2D and its bias; one Conv2D with ``dilations`` computes the same and fuses
    (measured: tf.nn.conv2d(..., dilations) → _FusedConv2D, stock and oneDNN)."""
    back = nxt if nxt.op == "BatchToSpaceND" else users[nxt.name][0]
    after = users.get(back.name, ())
    # What the Conv2D's bias would be: its own, or a batch norm to fold into one (DeepLab's atrous Conv2D without
    # bias, then BatchNormalization)
    norm = _batch_norm(back, graph, users) if len(after) == 1 and after[0].op == "Mul" else []
    if not norm and (len(after) != 1 or not _is_bias(after[0], back, graph)):
        return []
    shift = graph[norm[-1]] if norm else after[0]
    act = _activation_after(shift, users)
    needs, candidates, code = rules(Chain(node.op, bias="BiasAdd", activation=act.op if act else "none"), node, where, graph)
    between = back.op if nxt is back else f"{nxt.op} → {back.op}"
    chain = f"{node.op} + " + ("batch norm" if norm else "BiasAdd") + (f" + {act.op}" if act else "")
    call = "tf.nn.conv1d" if nxt.op == "Squeeze" else "tf.nn.conv2d"  # a Conv1D's Conv2D is squeezed back to 1-D
    squeezed_act = nxt.op == "Squeeze" and act is not None and not norm and not needs
    then = (f"batch norm written as arithmetic ({', '.join(sorted({graph[n].op for n in norm}))})" if norm
            else shift.op)
    miss = record("dilated-as-space-to-batch", [node.name, nxt.name] + ([back.name] if back is not nxt else [])
                  + (norm or [shift.name]) + ([act.name] if act else []), chain,
                  f"SpaceToBatchND → {node.op} → {between} → {then}" + (f" → {act.op}" if act else "")
                  + " (a dilated convolution as tf.nn.convolution writes it: Keras's dilation_rate > 1)",
                  "; ".join([f"a bias directly on the {node.op}'s output: one {node.op} with dilations, not "
                             "space-to-batch around it"] + (["the batch norm folded into that bias"] if norm else [])
                            + needs),
                  "; ".join(code + [f"write the convolution as {call}(x, filters, strides, padding, dilations=rate): "
                                    "one Conv2D with dilations, which takes its bias"
                                    + (" (its activation too once applied before the Squeeze, as for any Conv1D)"
                                       if squeezed_act else " and activation")]
                            + ([FOLD_BN] if norm else [])), candidates)
    # a Conv1D's activation stays after its Squeeze even once the convolution is one Conv2D: that fix too
    also = (["batchnorm-as-arithmetic"] if norm else []) + (["activation-after-squeeze"] if squeezed_act else [])
    return [dict(miss, also=also) if also else miss]


def _activation_after(node: Node, users: dict) -> Node | None:
    """The activation op that alone reads ``node`` (a bias), or None."""
    outs = users.get(node.name, ())
    return outs[0] if len(outs) == 1 and outs[0].op in ACTIVATIONS else None


def _is_bias(add: Node, source: Node, graph: Graph) -> bool:
    """A BiasAdd, or an Add of a 1-D tensor to ``source`` (a broadcast bias; a residual add of two tensors is not)."""
    if add.op == "BiasAdd":
        return True
    other = [graph.get(e.src) for e in add.data_inputs if e.src != source.name]
    return add.op in ("AddV2", "Add") and len(other) == 1 and other[0] is not None and \
        other[0].shape.startswith("[") and other[0].shape.count(",") == 0 and other[0].shape != "[]"


def _not_fused_here(node: Node, bias: Node, users: dict, where: Where, graph: Graph) -> list[dict]:
    """The remapper's own pattern (contraction → BiasAdd [→ activation]) left unfused for a reason the rules name:
    a dtype this CPU, oneDNN or the stock kernels do not fuse (Keras's mixed_float16 policy on a CPU), a device.
    Nothing when the rules see no reason, or when the remapper is switched off (nothing fuses then, by choice)."""
    act = _activation_after(bias, users)
    needs, candidates, code = rules(Chain(node.op, bias="BiasAdd", activation=act.op if act else "none"), node, where, graph)
    if not needs or any(n.startswith("remapper enabled") for n in needs):
        return []
    chain = f"{node.op} + BiasAdd" + (f" + {act.op}" if act else "")
    return [record("unfused-pattern", [node.name, bias.name] + ([act.name] if act else []), chain,
                   f"{chain.replace(' + ', ' → ')} in {node.dtype or 'its dtype'}: the remapper's own pattern, "
                   "left unfused here", "; ".join(needs), "; ".join(code) or "none in this configuration",
                   candidates)]


def _tail(bias: Node, graph: Graph, users: dict) -> tuple[list[str], str]:
    """The activation after a bias, every op of it (a GELU written as element-wise ops is several), and its name
    for the remapper ("Relu", "GeluExact", "GeluApproximate"); ([], "") when none follows. A GELU's ops compute
    from the bias's output and constants alone: what also reads another tensor (a residual add after the GELU, a
    layer norm) is not part of it."""
    act = _activation_after(bias, users)
    if act is not None:
        return [act.name], act.op
    found: list = []  # graph nodes
    inside, frontier = {bias.name}, [bias.name]
    while frontier and len(found) < 12:  # a GELU is 5-8 element-wise ops
        for user in users.get(frontier.pop(0), ()):
            if user.name in inside or user.op not in GELU_OPS | CURVES:
                continue
            if all(e.src in inside or getattr(graph.get(e.src), "op", "") == "Const" for e in user.data_inputs):
                inside.add(user.name)  # reached again from its other input once that is inside, if not now
                found.append(user)
                frontier.append(user.name)
    ops = {n.op for n in found}
    if not ops & CURVES:
        return [], ""
    return [n.name for n in found], "GeluExact" if ops & {"Erf", "Erfc"} else "GeluApproximate"


def _act_words(act: str) -> str:
    return {"GeluExact": "a GELU, exact (Erf), written as element-wise ops",
            "GeluApproximate": "a GELU, approximate (Tanh), written as element-wise ops"}.get(act, act)


def _activation_without_bias(node: Node, act: Node, traced: Graph | None) -> dict:
    """An activation straight after the contraction. A bias that was there when traced and is gone now
    was all zeros (constant folding removed the add): the layer has one, it is the values."""
    folded = None
    if traced is not None and node.name in traced:
        folded = next((c for c in traced.nodes if c.op in ("BiasAdd", "AddV2", "Add")
                       and any(e.src == node.name for e in c.data_inputs)
                       and any(e.src == c.name for e in traced[act.name].data_inputs)), None) \
            if act.name in traced else None
    if folded is not None:
        return record("activation-without-bias", [node.name, act.name], f"{node.op} + BiasAdd + {act.op}",
                      f"{node.op} → {act.op}: the layer's bias ({folded.name}) is all zeros and constant folding "
                      "removed it", "a BiasAdd between the contraction and the activation",
                      "give the bias its trained (non-zero) values: a zero bias is folded away, and the "
                      "remapper fuses an activation only after a bias")
    return record("activation-without-bias", [node.name, act.name], f"{node.op} + BiasAdd + {act.op}",
                  f"{node.op} → {act.op} with no bias between them",
                  "a BiasAdd between the contraction and the activation (the remapper fuses an activation after a bias)",
                  "give the layer a bias (use_bias=True)")


def _after_fused(node: Node, outs: list[Node], graph: Graph, users: dict, where: Where) -> list[dict]:
    norm = _batch_norm(node, graph, users) if node.fused_ops == ("BiasAdd",) else []
    if norm:
        return [_batch_norm_miss(node, norm, graph, where, True, users)]
    if node.fused_ops == ("BiasAdd",) and len(outs) == 1 and outs[0].op in ("AddV2", "Add") \
            and _is_bias(outs[0], node, graph):
        return _second_bias(node, outs[0], graph, users, where)
    if node.op == "_FusedConv2D" and node.fused_ops == ("BiasAdd",) and len(outs) == 1 and outs[0].op == "Squeeze":
        return _squeezed(node, outs[0], None, users, where, graph)
    base = canonical_op(node.op).removeprefix("Fused")
    label = fused_label(node.op, node.fused_ops)
    ops = {c.op for c in outs}
    if "Sigmoid" in ops and "Mul" in ops:  # x * sigmoid(x): Swish
        sigmoid = next(c for c in outs if c.op == "Sigmoid")
        mul = next(c for c in outs if c.op == "Mul")
        if any(e.src == sigmoid.name for e in mul.data_inputs):
            return [_left_out(node, [sigmoid.name, mul.name], "Swish", label, base, outs, where,
                              "Sigmoid and Mul (x·sigmoid(x)) after", graph)]
    for nxt in outs:
        if nxt.op in ACTIVATIONS and nxt.op not in node.fused_ops:
            return [_left_out(node, [nxt.name], nxt.op, label, base, outs, where, f"{nxt.op} after", graph)]
    for nxt in outs:
        if nxt.op in GELU_OPS and base == "MatMul" and not any("Gelu" in f for f in node.fused_ops):
            near = [c for o in outs for c in users.get(o.name, ())] + outs
            second = {c.op for c in near}
            if {"Erf", "Erfc", "Tanh"} & second or any("gelu" in c.name.lower() for c in near):
                exact = bool({"Erf", "Erfc"} & second) or (
                    "Tanh" not in second and not any("Square" == c.op or "Pow" == c.op for c in near))
                act = "GeluExact" if exact else "GeluApproximate"
                return [_left_out(node, [nxt.name], act, label, base, outs, where,
                                  f"a GELU, {'exact (Erfc)' if act == 'GeluExact' else 'approximate (Tanh)'}, "
                                  "written as element-wise ops after", graph)]
    return []


def _second_bias(node: Node, add: Node, graph: Graph, users: dict, where: Where) -> list[dict]:
    """A second 1-D bias added after the fused op's own (x ⊛ w + b1 + b2): the activation after it stays outside,
    since the remapper fuses an activation only straight after the contraction's BiasAdd. Nothing when no
    activation follows (the contraction and its bias fused: there is no fusion to gain)."""
    tail, act = _tail(add, graph, users)
    if not act:
        return []
    base = canonical_op(node.op).removeprefix("Fused")
    shown = "GELU" if act.startswith("Gelu") else act
    needs, _, _ = rules(Chain(base, bias="BiasAdd", activation=act), node, where, graph)
    return [record("second-bias", [node.name, add.name, *tail], f"{base} + BiasAdd + {shown}",
                   f"{fused_label(node.op, node.fused_ops)} → {add.op} of a 1-D tensor (a second bias) → "
                   f"{_act_words(act)}, left outside the fused op",
                   "; ".join(["one bias: the remapper fuses an activation only straight after the contraction's "
                              "BiasAdd, and this Add stands between them", *needs]),
                   "add the two biases into one before the model runs (tf.nn.bias_add(x, b1 + b2))",
                   after_fused=True)]


def _squeezed(node: Node, squeeze: Node, bias: Node | None, users: dict, where: Where, graph: Graph
              ) -> list[dict]:
    """A Conv1D (a Conv2D squeezed back to 1-D) whose activation follows the Squeeze and its bias: the remapper's
    Conv2D + Squeeze + BiasAdd pattern (CPU) takes no activation, and without it (a GPU) nothing fuses. Named where
    the rules fuse that activation after a Conv2D + BiasAdd: applied before the Squeeze, it would join them."""
    act = _activation_after(bias or squeeze, users)
    if act is None:
        return []
    needs, candidates, _ = rules(Chain("Conv2D", bias="BiasAdd", activation=act.op), node, where, graph)
    if needs:
        return []
    label = fused_label(node.op, node.fused_ops) if bias is None else node.op
    between = "Squeeze" if bias is None else "Squeeze → BiasAdd"
    return [record("activation-after-squeeze", [node.name, squeeze.name] + ([bias.name] if bias else []) + [act.name],
                   f"Conv2D + BiasAdd + {act.op}",
                   f"{label} → {between} → {act.op}: a Conv1D (its Conv2D squeezed back to 1-D), whose {act.op} is "
                   "left outside (the remapper's Conv2D + Squeeze + BiasAdd pattern takes no activation)",
                   f"the {act.op} straight after the BiasAdd, before the Squeeze (Conv2D → BiasAdd → {act.op} is the "
                   "remapper's own pattern)",
                   "squeeze after the activation: write the Conv1D as a Conv2D with a (1, k) kernel on a [batch, 1, "
                   "steps, channels] tensor and squeeze once after its activation (or keep the model 4-D through "
                   "its Conv1D layers)", candidates, after_fused=bias is None)]


def _left_out(node: Node, names: list[str], act: str, label: str, base: str, outs: list[Node], where: Where,
              form: str, graph: Graph | None = None) -> dict:
    kind = "gelu-left-out" if act.startswith("Gelu") else "activation-left-out"
    needs, candidates, code = rules(Chain(base, bias="BiasAdd", activation=act), node, where, graph)
    if not needs:
        extra = len(outs) - len(names)
        needs = [f"the fused op's output has {extra} more consumer(s), so it must stay a tensor of its own"
                 if extra > 0 else "the remapper's rules say it fuses here; TensorFlow did not fuse it"]
    shown = "GELU" if act.startswith("Gelu") else act
    # a model's own Sigmoid after a convolution (a squeeze-and-excitation gate) keeps its maths: "use MatMul or Relu"
    # is the checklist's what-if, not a change for this model
    change = _code_for(act, base) if base != "MatMul" and act in ("Sigmoid", "Tanh") else "; ".join(code)
    return record(kind, [node.name, *names], f"{label} + {shown}", f"{form} the fused {node.op}, outside it",
                  "; ".join(needs), change or _code_for(act, base), candidates)


def _code_for(act: str, base: str) -> str:
    if base != "MatMul" and act in ("Sigmoid", "Tanh"):
        return (f"none in TensorFlow's remapper for a {base}: {act} joins a MatMul only; XLA (jit_compile=True) fuses "
                f"it, or a model with Relu, Relu6 or Elu there instead would")
    return "none the remapper offers for this chain; XLA (jit_compile=True) fuses element-wise tails"


def _batch_matmul(node: Node, outs: list[Node], users: dict, graph: Graph, where: Where) -> list[dict]:
    if len(outs) != 1:
        return []
    nxt, names = outs[0], [node.name, outs[0].name]
    if nxt.op == "Mul":
        return _attention_scores(node, nxt, users, graph, where)
    if nxt.op == "Reshape":
        after = [c for c in users.get(nxt.name, ()) if c.op in ("BiasAdd", "AddV2", "Add")]
        if not after:
            return []
        names.append(after[0].name)
        form = f"{node.op} → Reshape → {after[0].op} (EinsumDense: a projection with a bias)"
    elif nxt.op in ("BiasAdd", "AddV2", "Add"):
        form = f"{node.op} → {nxt.op} (EinsumDense: a projection with a bias)"
    else:
        return []
    return [record("einsumdense-batchmatmul", names, f"{node.op} + bias", form,
                   "a 2-D MatMul directly followed by BiasAdd: the remapper fuses no bias into BatchMatMulV2 "
                   "(oneDNN's _MklFusedBatchMatMulV2 takes BatchMatMulV2×scale + a rank-4 addend only)",
                   "write the projection as a Dense on a 2-D tensor (reshape to [batch × tokens, features]), "
                   "whose MatMul+BiasAdd fuses")]


def _dims(shape: str) -> list[str] | None:
    """'[2,4,16,16]' as its dimensions ('-1' where unknown); None when TensorFlow recorded no shape."""
    if not shape.startswith("["):
        return None
    return [d.strip() for d in shape.strip("[]").split(",")] if shape != "[]" else []


def _other(node: Node, source: str, graph: Graph) -> Node | None:
    """The other input of a binary op ``node`` than ``source``'s output."""
    others = [graph.get(e.src) for e in node.data_inputs if e.src != source]
    return others[0] if len(others) == 1 else None


def _attention_scores(node: Node, mul: Node, users: dict, graph: Graph, where: Where) -> list[dict]:
    """BatchMatMulV2 × scale + addend (attention's scores and their mask), left unfused: oneDNN's
    _MklFusedBatchMatMulV2 [Mul, Add] takes a scalar scale, a rank-4 product and a rank-4 addend whose second
    dimension is 1 (a mask broadcast over the heads). Named only where a condition read here fails."""
    after = users.get(mul.name, ())
    scale, add = _other(mul, node.name, graph), after[0] if len(after) == 1 else None
    if scale is None or add is None or add.op not in ("AddV2", "Add"):
        return []
    addend = _other(add, mul.name, graph)
    needs, candidates, code = rules(Chain(kind="batch_matmul_scale_add"), node, where, graph)
    addend_shape = addend.shape if addend is not None else ""
    product, factor, added = _dims(node.shape), _dims(scale.shape), _dims(addend_shape)
    if factor and any(d != "1" for d in factor):
        needs.append(f"a scalar scale (here {scale.shape})")
        code.append("scale by a scalar")
    if product is not None and len(product) != 4:
        needs.append(f"a rank-4 product, [batch, heads, queries, keys] (here {node.shape})")
        code.append("compute the scores as a rank-4 tf.matmul, [batch, heads, queries, keys]")
    if added is not None and (len(added) != 4 or added[1] != "1"):
        needs.append(f"an addend of rank 4 whose second dimension is 1, [batch, 1, queries, keys] (here {addend_shape})")
        code.append("give the mask the shape [batch or 1, 1, queries, keys] before the add (tf.reshape(mask, "
                    "[1, 1, queries, keys]) for a [queries, keys] one), so one mask serves every head")
    if not needs:
        return []  # every condition read here holds: nothing to name
    return [record("attention-scores", [node.name, mul.name, add.name], f"{node.op} × scale + mask",
                   f"{node.op} → Mul (scale) → {add.op} (attention's scores and mask)", "; ".join(needs),
                   "; ".join(code) or "none in this configuration", candidates)]


def _einsum(node: Node) -> dict:
    return record("einsum", [node.name], "Einsum", f"Einsum ({node.attr.get('equation', 'a contraction')})",
                  "a MatMul or BatchMatMulV2: the remapper has no pattern for Einsum, which stays unfused "
                  "(counted with the unfused contractions)",
                  "write it as tf.matmul (attention: BatchMatMulV2 × scale + mask fuses into "
                  "_MklFusedBatchMatMulV2 with oneDNN)")
