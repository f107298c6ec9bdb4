"""A whole model's fusion report: every fusion by pattern, the near-misses, and the totals.

For a model of hundreds of layers the per-pattern checklist of a preset does not apply; what a
person wants is: which fusions Grappler made (how many of each, in which layers), which chains
look like a catalogue pattern but reached the remapper in another form or under a failing
condition (a near-miss: the chain, the form it has, the form the pattern needs, and the fix), and
what it adds up to (ops before and after, fused kernels, intermediate tensors no longer written).

Near-misses come from ``near_miss`` (the finder, read off the graph after Grappler); their fixes
that are settings are settled by the engine's runs (``engine.fix_check``). Functions XLA must compile
inside the model (``result["xla_clusters"]`` of kind "must-compile") are counted with their ops.
"""

from __future__ import annotations

import os
import re
from collections import Counter, defaultdict
from collections.abc import Sequence

from ..model.graph import Graph, Node
from . import traffic
from .fusion import CONST_OPS, Fusion, is_fused_node
from .near_miss import Where, near_misses

CONTRACTIONS = frozenset({"MatMul", "BatchMatMulV2", "BatchMatMul", "Conv2D", "DepthwiseConv2dNative", "Conv3D",
                          "Einsum"})
ITEMSIZE = {"float64": 8, "float32": 4, "int64": 8, "int32": 4, "float16": 2, "bfloat16": 2, "int8": 1, "uint8": 1}


# A node of an inlined loop body or branch: TensorFlow names it "<loop>/body/_56/...", "<cond>/then/_33/..."
IN_BODY = re.compile(r"/(?:body|cond|then|else)/_\d+/")


def layer_of(name: str) -> str:
    """The name scope a node belongs to (a Keras layer, or the GELU's scope): all but its last part. A node of an
    inlined loop body or branch is named "<loop>/body/_56/<its own name>", its own name repeating the loop's path:
    "model/gru/while/body/_56/model/gru/while/gru_cell/MatMul" is in "model/gru/while/gru_cell"."""
    scope = name.rpartition("/")[0] or name
    while found := IN_BODY.search(scope + "/"):
        outer, rest = scope[:found.start()].split("/"), scope[found.end():]
        inner = rest.split("/") if rest else []
        same = next((k for k in range(len(outer)) if inner[:len(outer) - k] == outer[k:]), len(outer))
        scope = "/".join(outer + inner[len(outer) - same:])
    return scope


def _outermost(scopes: set[str], model: str) -> set[str]:
    """The scopes not inside another one of them deeper than ``model`` (the scope every fused op sits in): a
    Conv1D's convolution/Conv2D and its BiasAdd are one layer, a Dense's Gelu scope is its Dense's."""
    return {s for s in scopes if not any(s.startswith(t + "/") and len(t) > len(model) for t in scopes)}


def shared_scope(layers: list[str]) -> str:
    """The name scope every one of ``layers`` sits in ('StatefulPartitionedCall/functional_1/' for a Keras 3
    SavedModel), which tables and sentences leave out: each layer keeps its own last part. '' for one layer."""
    if len(set(layers)) < 2:
        return ""
    parts = [layer.split("/")[:-1] for layer in layers]
    common = []
    for column in zip(*parts):
        if len(set(column)) != 1:
            break
        common.append(column[0])
    return "/".join(common) + "/" if common else ""


def report_scope(report: dict) -> str:
    """The name scope every layer of a report shares, which tables and the command line leave out of layer names."""
    layers = [layer for r in report.get("fusions") or [] for layer in r["layers"]]
    return shared_scope(layers + [layer_of(m["nodes"][0]) for m in report.get("near_misses") or []])


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
    # The scope every fused op's layer sits in (a lone fusion's layer is inside it, not it: a Conv1D's Squeeze in
    # conv1d/convolution/ is its conv1d's)
    model = "/".join(os.path.commonprefix([layer_of(f.node).split("/")[:-1] for f in fusions]))
    rows = []
    for target, members in groups.items():
        absorbed = Counter(op for f in members for _, op in f.compute)
        layers = sorted({layer for f in members for layer in _outermost({layer_of(n) for n, _ in f.compute}, model)})
        rows.append({"fused": target, "count": len(members), "nodes": [f.node for f in members],
                     "absorbed_ops": dict(absorbed), "layers": layers})
    return sorted(rows, key=lambda r: (-r["count"], r["fused"]))


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


def report(graphs: dict[str, Graph], fusions: list[Fusion], where: Where | bool | None,
           clusters: Sequence[dict] = (), tensors: dict | None = None) -> dict:
    """The whole-model report of an inspect result's stages and its traced -> optimized fusions.

    ``where``: the configuration the rules read (``near_miss.Where``; a bare bool is oneDNN on a CPU).
    ``tensors``: both runs' executed tensors at the shapes that ran (``result["executed_tensors"]``): the
    intermediates no longer written are then ``traffic.saving``'s, the figure the benchmark's account shows;
    without them (the remapper off: no second run), the traced graph's absorbed nodes'."""
    if not isinstance(where, Where):
        where = Where(onednn=bool(where))
    optimized = graphs.get("optimized")
    traced = graphs.get("traced")
    totals: dict[str, object] = {f"ops_{stage}": len(g.compute_ops()) for stage, g in graphs.items()}
    if optimized is not None:
        totals["fused_kernels"] = sum(1 for n in optimized.nodes if is_fused_node(n))
        left = Counter(n.op for n in optimized.nodes if n.op in CONTRACTIONS)
        totals["contractions_unfused"] = dict(left)
    if tensors:
        saved = traffic.saving(tensors)
        totals["intermediate_bytes_saved"] = None if saved["unknown_tensors"] else saved["removed_bytes"]
        totals["unknown_tensors"] = saved["unknown_tensors"]
    else:
        totals["intermediate_bytes_saved"] = saved_bytes(fusions, traced) if traced is not None else None
    must = [c for c in clusters if c.get("kind") == "must-compile"]
    if must:
        totals["xla_must_compile"] = dict(Counter(op["op"] for c in must for op in c["ops"]))
    misses = near_misses(optimized, where, traced) if optimized is not None else []
    why = unfused_reasons(optimized, misses) if optimized is not None else {}
    if why:
        totals["contractions_unfused_why"] = why
    return {"fusions": fusion_rows(fusions), "near_misses": misses, "totals": totals}


# Why a contraction left unfused has no near-miss, where the graph says so: a form no remapper pattern takes and
# no rewrite here would gain from (measured: the fused form of a recurrent cell's sum, written with its bias first,
# ran slower with oneDNN; docs/real-models.md).
SUMMED = ("summed with another product before any bias (x·W + h·U + b, a recurrent cell's): no remapper pattern "
          "takes a sum of two products")


def unfused_reasons(graph: Graph, misses: list[dict]) -> dict[str, int]:
    """{reason: how many} over the contractions Grappler left unfused that no near-miss names."""
    named = {name for miss in misses for name in miss["nodes"]}
    users = graph.consumers()
    found: Counter = Counter()
    for node in graph.nodes:
        if node.op not in CONTRACTIONS or node.name in named:
            continue
        outs = [graph[name] for name, edge in users.get(node.name, ()) if not edge.control]
        if len(outs) == 1 and outs[0].op in ("AddV2", "Add"):
            other = [graph.get(e.src) for e in outs[0].data_inputs if e.src != node.name]
            if len(other) == 1 and other[0] is not None and other[0].op in CONTRACTIONS:
                found[SUMMED] += 1
    return dict(found)
