"""A whole model's fusion report: every fusion by pattern, the near-misses, and the totals.

For a model of hundreds of layers the per-pattern checklist of a preset does not apply; what a
person wants is: which fusions Grappler made (how many of each, in which layers), which chains
look like a catalogue pattern but reached the remapper in another form or under a failing
condition (a near-miss: the chain, the form it has, the form the pattern needs, and the fix), and
what it adds up to (ops before and after, fused kernels, intermediate tensors no longer written).

Near-misses are read off the graph after Grappler, where what did not fuse is still in place:

* a contraction left unfused with a bias after it as a broadcast Add, behind a Reshape (a Keras
  Dense on a 3-D input), or with a batch norm written as arithmetic after it (Keras 3's
  BatchNormalization in inference);
* a fused contraction whose activation stayed outside it (Tanh or a GELU without oneDNN ...).
"""

from __future__ import annotations

from collections import Counter, defaultdict

from ..model.graph import Graph, Node
from .fusion import CONST_OPS, Fusion, is_fused_node
from .preconditions import NO_FIX, ONEDNN_ON, Fix, chain, env, fix

CONTRACTIONS = frozenset({"MatMul", "BatchMatMulV2", "BatchMatMul", "Conv2D", "DepthwiseConv2dNative", "Conv3D"})
ACTIVATIONS = frozenset({"Relu", "Relu6", "Elu", "LeakyRelu", "Tanh", "Sigmoid"})
# Where an activation joins a fused contraction on a CPU (the remapper, TF 2.21).
JOINS = {"Relu": "always", "Relu6": "always", "Elu": "always", "LeakyRelu": "always (not after a depthwise convolution)",
         "Tanh": "after MatMul, with oneDNN", "Sigmoid": "after MatMul, with oneDNN"}
ITEMSIZE = {"float64": 8, "float32": 4, "int64": 8, "int32": 4, "float16": 2, "bfloat16": 2, "int8": 1, "uint8": 1}
ARITHMETIC = frozenset({"Mul", "AddV2", "Add", "Sub", "Rsqrt", "RealDiv"})


def layer_of(name: str) -> str:
    """The name scope a node belongs to (a Keras layer, or the GELU's scope): all but its last part."""
    scope = name.rpartition("/")[0]
    return scope or name


def tensor_bytes(node: Node | None) -> int | None:
    """Bytes of a node's first output from its recorded shape and dtype; None when either is unknown."""
    if node is None or not node.shape.startswith("[") or node.dtype not in ITEMSIZE:
        return None
    dims = [int(d) for d in node.shape.strip("[]").split(",") if d.strip()]
    if any(d < 0 for d in dims):
        return None
    size = ITEMSIZE[node.dtype]
    for d in dims:
        size *= d
    return size


def fusion_rows(fusions: list[Fusion]) -> list[dict]:
    """One row per fused pattern: the fused op, how many, the ops it replaced, the layers involved."""
    groups: dict[str, list[Fusion]] = defaultdict(list)
    for f in fusions:
        groups[f.target()].append(f)
    rows = []
    for target, members in groups.items():
        absorbed = Counter(op for f in members for _, op in f.compute)
        layers = sorted({layer_of(name) for f in members for name, _ in f.compute})
        rows.append({"fused": target, "count": len(members), "nodes": [f.node for f in members],
                     "absorbed_ops": dict(absorbed), "layers": layers})
    return sorted(rows, key=lambda r: (-r["count"], r["fused"]))


def _consumers(graph: Graph) -> dict[str, list[Node]]:
    out: dict[str, list[Node]] = defaultdict(list)
    for node in graph.nodes:
        for edge in node.data_inputs:
            out[edge.src].append(node)
    return out


def _near_miss(kind: str, nodes: list[str], chain_text: str, form: str, needs: str, remedy: Fix) -> dict:
    return {"kind": kind, "nodes": nodes, "chain": chain_text, "form": form, "needs": needs,
            "fix": remedy.text, "changes": remedy.changes()}


def _is_bias_shaped(node: Node | None) -> bool:
    return node is not None and node.shape.startswith("[") and node.shape.count(",") == 0 and node.shape != "[]"


def _reads_rsqrt(node: Node, graph: Graph, depth: int = 2) -> bool:
    """Whether an Rsqrt feeds ``node`` within ``depth`` steps (the 1/sqrt(variance + eps) of a batch norm)."""
    frontier = [node]
    for _ in range(depth):
        frontier = [graph[e.src] for n in frontier for e in n.data_inputs if e.src in graph]
        if any(n.op == "Rsqrt" for n in frontier):
            return True
    return False


def _arithmetic_batch_norm(start: Node, graph: Graph, consumers: dict) -> list[str]:
    """The Mul/Add/Sub nodes right after ``start`` when they read an Rsqrt (a batch norm written as arithmetic)."""
    found: list[str] = []
    frontier = [start.name]
    for _ in range(3):
        frontier = [c.name for name in frontier for c in consumers.get(name, ())
                    if c.op in ARITHMETIC and c.name not in found]
        found += frontier
    return found if any(_reads_rsqrt(graph[name], graph) for name in found) else []


def near_misses(optimized: Graph, onednn: bool | None) -> list[dict]:
    consumers = _consumers(optimized)
    found: list[dict] = []
    for node in optimized.nodes:
        outs = [c for c in consumers.get(node.name, ()) if c.op != "_Retval"]
        if node.op in CONTRACTIONS:
            found += _unfused_contraction(node, outs, optimized, consumers)
        elif is_fused_node(node) and node.fused_ops and node.fused_ops[-1] in ("BiasAdd", "FusedBatchNorm") \
                and len(outs) >= 1:
            found += _activation_left_out(node, outs, onednn, consumers)
    return found


def _unfused_contraction(node: Node, outs: list[Node], graph: Graph, consumers: dict) -> list[dict]:
    if len(outs) != 1:
        return []
    nxt = outs[0]
    if nxt.op == "Reshape":
        after = [c for c in consumers.get(nxt.name, ()) if c.op == "BiasAdd"]
        if after:
            return [_near_miss(
                "reshape-before-bias", [node.name, nxt.name, after[0].name], f"{node.op} + BiasAdd",
                f"{node.op} → Reshape → BiasAdd (a Keras Dense applied to a 3-D or larger input)",
                "BiasAdd directly on the contraction's output",
                fix("apply the Dense to a 2-D tensor (reshape to [batch × tokens, features] before it, back after)"))]
    if nxt.op in ("AddV2", "Add"):
        other = [graph.get(e.src) for e in nxt.data_inputs if e.src != node.name]
        if other and _is_bias_shaped(other[0]):
            return [_near_miss(
                "bias-as-add", [node.name, nxt.name], f"{node.op} + BiasAdd",
                f"{node.op} → {nxt.op} of a 1-D bias (a broadcast add)",
                "a BiasAdd (tf.nn.bias_add); only oneDNN reads a per-channel Add as a bias (channels-last)",
                fix("use tf.nn.bias_add", [chain("bias", "BiasAdd")], [env("TF_ENABLE_ONEDNN_OPTS", "1")]))]
    norm = _arithmetic_batch_norm(node, graph, consumers)
    if norm and node.op in ("Conv2D", "DepthwiseConv2dNative", "Conv3D"):
        return [_near_miss(
            "batchnorm-as-arithmetic", [node.name, *norm], f"{node.op} + FusedBatchNorm",
            f"{node.op} → batch norm written as arithmetic ({', '.join(sorted({graph[n].op for n in norm}))} with Rsqrt): "
            "Keras 3's BatchNormalization in inference",
            "a FusedBatchNormV3 node (tf.compat.v1.nn.fused_batch_norm), or the batch norm folded into the weights",
            fix("for inference, fold the batch norm into the convolution's weights and bias (or call "
                "tf.compat.v1.nn.fused_batch_norm)"))]
    if nxt.op in ACTIVATIONS:
        return [_near_miss(
            "activation-without-bias", [node.name, nxt.name], f"{node.op} + BiasAdd + {nxt.op}",
            f"{node.op} → {nxt.op} with no bias between them",
            "a BiasAdd between the contraction and the activation (the remapper fuses an activation after a bias)",
            fix("give the layer a bias (use_bias=True)"))]
    return []


def _activation_left_out(node: Node, outs: list[Node], onednn: bool | None, consumers: dict) -> list[dict]:
    found = []
    for nxt in outs:
        if nxt.op in ACTIVATIONS and nxt.op not in node.fused_ops:
            needs_onednn = nxt.op in ("Tanh", "Sigmoid")
            remedy = ONEDNN_ON if needs_onednn and not onednn else NO_FIX
            found.append(_near_miss(
                "activation-left-out", [node.name, nxt.name], f"{node.op} [{', '.join(node.fused_ops)}] + {nxt.op}",
                f"{nxt.op} after the fused {node.op}, outside it",
                f"{nxt.op} in the fused op's list: it joins {JOINS[nxt.op]}", remedy))
        elif nxt.op in ("Mul", "AddV2", "Square", "Pow", "Neg", "RealDiv") and "Gelu" not in node.fused_ops:
            names = {c.name for c in consumers.get(node.name, ())}
            ops = {c.op for name in names for c in consumers.get(name, ())} | {nxt.op}
            if "Erfc" in ops or "Erf" in ops or "Tanh" in ops or any("Gelu" in n or "gelu" in n for n in names):
                form = "exact (Erfc)" if ("Erfc" in ops or "Erf" in ops) else "approximate (Tanh)"
                found.append(_near_miss(
                    "gelu-left-out", [node.name, nxt.name], f"{node.op} [{', '.join(node.fused_ops)}] + GELU",
                    f"a GELU, {form}, written as element-wise ops after the fused {node.op}",
                    "the GELU sub-graph after a MatMul+BiasAdd; the CPU fuses it only with oneDNN",
                    ONEDNN_ON if not onednn else NO_FIX))
                break
    return found


def saved_bytes(fusions: list[Fusion], traced: Graph) -> int | None:
    """Bytes of the intermediate tensors the fused kernels no longer write: every absorbed compute node's
    output except the root's (whose output the fused node writes). None when a shape is unknown."""
    total = 0
    for f in fusions:
        for name, op in f.compute:
            if name == f.node or op in CONST_OPS:
                continue
            size = tensor_bytes(traced.get(name))
            if size is None:
                return None
            total += size
    return total


def report(graphs: dict[str, Graph], fusions: list[Fusion], onednn: bool | None) -> dict:
    """The whole-model report of an inspect result's stages and its traced -> optimized fusions."""
    optimized = graphs.get("optimized")
    traced = graphs.get("traced")
    totals = {f"ops_{stage}": len(g.compute_ops()) for stage, g in graphs.items()}
    if optimized is not None:
        totals["fused_kernels"] = sum(1 for n in optimized.nodes if is_fused_node(n))
        left = Counter(n.op for n in optimized.nodes if n.op in CONTRACTIONS)
        totals["contractions_unfused"] = dict(left)
    totals["intermediate_bytes_saved"] = saved_bytes(fusions, traced) if traced is not None else None
    return {
        "fusions": fusion_rows(fusions),
        "near_misses": near_misses(optimized, onednn) if optimized is not None else [],
        "totals": totals,
    }
