"""Near-misses of a batch norm written as arithmetic after a contraction: Keras 3's BatchNormalization in inference
(Mul by its scale, Add of its shift, each one value per channel), after a Conv1D's Squeeze or a bias, and between
Casts under a mixed-precision policy. No remapper pattern takes it; folding it into the contraction does.
"""

from __future__ import annotations

from ..model.chain import Chain
from ..model.graph import Graph, Node, channel_from_right
from .fusion import canonical_op, fused_label
from .near_miss_rules import Where, record, rules
from .preconditions import STOCK_ACTS

FOLD_BN = ("for inference, fold the batch norm into the layer's weights and bias (or call "
           "tf.compat.v1.nn.fused_batch_norm after a convolution without bias)")


def _per_channel(node: Node | None, graph: Graph, from_right: int = 1) -> bool:
    """A batch norm's scale or shift: a constant, a tensor of one value per channel, or something read off an
    Rsqrt: Keras 3's shift is β − μ·(γ·rsqrt(σ²+ε)), three ops from it (the way to tell where a graph records no
    shapes, as a simulated GPU's does)."""
    if node is None:
        return False
    if node.op in ("Const", "Rsqrt") or _channel_shaped(node, from_right):
        return True
    if node.dims is not None:
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
    dims = node.dims or []
    if len(dims) < from_right:
        return False
    return all(d == "1" for i, d in enumerate(dims) if i != len(dims) - from_right)


def batch_norm(start: Node, graph: Graph, users: dict) -> list[str]:
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


def batch_norm_miss(node: Node, norm: list[str], graph: Graph, where: Where, fused: bool, users: dict) -> dict:
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
    after: list[Node] = list(users.get(norm[-1], ())) if norm else []
    if squeezed and len(after) == 1 and after[0].op in STOCK_ACTS:
        miss["also"] = ["activation-after-squeeze"]
    return miss
