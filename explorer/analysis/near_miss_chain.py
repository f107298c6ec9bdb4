"""Near-misses that follow a contraction: what stands between it (fused or not) and the pattern.

Unfused contractions: a bias written as a broadcast Add, a Reshape between the MatMul and its bias
(a Keras Dense on a 3-D input), an activation with no bias before it, the pattern itself left unfused (a dtype
not fused here), a dilated convolution written as space-to-batch, a Conv1D's activation after its Squeeze.
Fused contractions: a second bias, an activation or a GELU left outside. A batch norm after either is
``near_miss_batchnorm``'s; batched products (EinsumDense, attention's scores, Einsum) ``near_miss_matmul``'s.
"""

from __future__ import annotations

from ..model.chain import Chain
from ..model.graph import Graph, Node
from .fusion import canonical_op, fused_label
from .near_miss_batchnorm import FOLD_BN, batch_norm, batch_norm_miss
from .near_miss_matmul import batch_matmul, einsum
from .near_miss_rules import Where, record, rules

UNFUSED = frozenset({"MatMul", "Conv2D", "DepthwiseConv2dNative", "Conv3D"})
FUSED = frozenset({"_FusedMatMul", "_FusedConv2D", "_FusedDepthwiseConv2dNative", "_FusedConv3D"})
ACTIVATIONS = frozenset({"Relu", "Relu6", "Elu", "LeakyRelu", "Tanh", "Sigmoid"})
GELU_OPS = frozenset({"Mul", "AddV2", "Square", "Pow", "Neg", "RealDiv"})
CURVES = frozenset({"Erf", "Erfc", "Tanh"})  # what makes element-wise ops after a bias a GELU
DENSE_2D = "apply the Dense to a 2-D tensor (reshape to [batch × tokens, features] before it, back after)"


def after_contractions(graph: Graph, users: dict, where: Where, traced: Graph | None) -> list[dict]:
    found: list[dict] = []
    for node in graph.nodes:
        outs = [c for c in users.get(node.name, ()) if c.op != "_Retval"]
        if node.op == "Einsum":
            found.append(einsum(node))
        elif node.op in ("BatchMatMulV2", "BatchMatMul"):
            found += batch_matmul(node, outs, users, graph, where)
        elif node.op in UNFUSED:
            found += _unfused(node, outs, graph, users, where, traced)
        elif node.op in FUSED and node.fused_ops and node.fused_ops[-1] in ("BiasAdd", "FusedBatchNorm"):
            found += _after_fused(node, outs, graph, users, where)
    return found


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
    norm = batch_norm(node, graph, users)
    if norm:
        return [batch_norm_miss(node, norm, graph, where, False, users)]
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
    norm = batch_norm(back, graph, users) if len(after) == 1 and after[0].op == "Mul" else []
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
    norm = batch_norm(node, graph, users) if node.fused_ops == ("BiasAdd",) else []
    if norm:
        return [batch_norm_miss(node, norm, graph, where, True, users)]
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
