"""Layer normalisation written as arithmetic where oneDNN's ``_MklLayerNorm`` would take it.

The remapper's rule (catalogue row 29, TF 2.21): oneDNN on a CPU; the mean and variance reduced with
``keep_dims=True`` over exactly one axis, rank−1 written as a non-negative number (``axes=[-1]`` does
not match); input of rank 2 or 3; in the spelling Keras 3 uses, gamma and beta constants. Each failing
condition is named; only the oneDNN switch is a setting, and the engine runs it before offering it. The same
arithmetic over axes other than the last ones (a GroupNormalization, an instance norm) is another normalisation:
no rewrite with the same maths makes it a layer norm, so it is no near-miss.
"""

from __future__ import annotations

from ..model.chain import Chain
from ..model.graph import Graph, Node
from .near_miss_rules import Where, record, rules

FIX = ("write it as tf.nn.moments(x, axes=[rank-1], keepdims=True) and tf.nn.batch_normalization with "
       "constant gamma and beta (a frozen graph), which oneDNN fuses into _MklLayerNorm; or XLA")
FIX_FLATTEN = ("reshape the normalised axes into one last axis ([batch, features]) and write it as "
               "tf.nn.moments(x, axes=[1], keepdims=True) and tf.nn.batch_normalization with constant gamma and "
               "beta (a frozen graph), which oneDNN fuses into _MklLayerNorm; or XLA")


def _rank(node: Node | None) -> int | None:
    if node is None or not node.shape.startswith("["):
        return None
    inner = node.shape.strip("[]")
    return inner.count(",") + 1 if inner else 0


def _axes(mean: Node, graph: Graph) -> list[int] | None:
    for edge in mean.data_inputs[1:]:
        const = graph.get(edge.src)
        value = const.attr.get("value") if const is not None else None
        if value is not None:
            try:
                return [int(v) for v in value.strip("[]").split(",") if v.strip()]
            except ValueError:
                return None
    return None


def layer_norms(graph: Graph, users: dict, where: Where, traced) -> list[dict]:
    found = []
    for node in graph.nodes:
        if node.op != "SquaredDifference":
            continue
        means = [graph.get(e.src) for e in node.data_inputs]
        mean = next((m for m in means if m is not None and m.op == "Mean"), None)
        source = next((m for m in means if m is not None and m.op != "Mean"), None)
        variance = next((c for c in users.get(node.name, ()) if c.op == "Mean"), None)
        if mean is None or variance is None:
            continue
        rank, axes = _rank(source), _axes(mean, graph)
        trailing = sorted(a % rank for a in axes) if rank and axes else []
        if rank and trailing and trailing != list(range(rank - len(trailing), rank)):
            # Not the last axes (a GroupNormalization's [1, 2, 4] of rank 5, an instance norm's [1, 2]): another
            # normalisation, which no rewrite into _MklLayerNorm's form computes
            continue
        needs, candidates, _ = rules(Chain(kind="layer_norm"), node, where)
        if axes is None or len(axes) != 1:
            needs.append(f"one reduction axis (here {axes if axes is not None else 'unknown'})")
        elif rank is not None and axes[0] != rank - 1:
            needs.append(f"the reduction axis written as rank−1 = {rank - 1}, a non-negative number (here {axes[0]})")
        if rank is not None and rank not in (2, 3):
            needs.append(f"an input of rank 2 or 3 (here {rank})")
        gamma = [n for n in graph.nodes if n.op == "ReadVariableOp" and n.name.startswith(_scope(node))]
        if gamma:
            needs.append("gamma and beta as constants (here variables)")
        found.append(record(
            "layernorm-as-arithmetic", [mean.name, node.name, variance.name],
            "LayerNormalization", "Mean, SquaredDifference, Mean, Rsqrt, Mul, Sub, AddV2 (as Keras 3's "
            "LayerNormalization writes it): no _MklLayerNorm", "for _MklLayerNorm: " + "; ".join(needs or ["oneDNN"]),
            FIX_FLATTEN if axes is not None and len(axes) > 1 else FIX, candidates))
    return found


def _scope(node: Node) -> str:
    """The layer's scope: the SquaredDifference sits in <layer>/moments/."""
    scope = node.name.rpartition("/")[0]
    return scope.rpartition("/")[0] + "/" if scope.endswith("moments") else scope + "/"
