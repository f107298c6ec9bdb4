"""Which nodes of one stage became which fused node of the next: an N:1 mapping read off the graphs.

Nothing here is typed in per pattern. The rules come from how Grappler's remapper rewrites:

* the fused node keeps the name of the chain's *root* (its last op: the Relu, the GELU's final
  Mul), so the before-node of that name, if its op changed, is the root;
* the fused node's data inputs are the chain's external inputs (x, w, b ...), so walking the
  root's ancestors in ``before`` and stopping at those inputs gives the chain;
* only nodes that vanished, or whose op changed, can have been absorbed.

Conv2D+Squeeze+BiasAdd breaks the first rule: the fused conv keeps the *Conv2D's* name and the
BiasAdd's name goes to a new Squeeze. The BiasAdd is found anyway because it consumed one of
the fused node's inputs (the bias) and its new namesake reads the fused node.

``absorbed`` lists constants too (the GELU's 0.5, 0.0447 ...): they vanish with the chain.
``Fusion.consts`` says which of them are constants and ``describe()`` leaves them out.
"""

from __future__ import annotations

import heapq
from collections import Counter
from dataclasses import dataclass
from typing import NamedTuple

from ..model.graph import Graph, Node

CONST_OPS = frozenset({"Const", "_HostConst"})

# Op-name prefixes of fused kernels, with what makes them. A node with a non-empty fused_ops
# attribute is fused whatever its op (see is_fused_node).
FUSED_OP_PREFIXES: tuple[tuple[str, str], ...] = (
    ("_Fused", "remapper: _FusedMatMul, _FusedConv2D, _FusedBatchNormEx ..."),
    ("_MklFused", "remapper (oneDNN): _MklFusedBatchMatMulV2, _MklFusedMish, _MklFusedInstanceNorm"),
    ("_MklNativeFused", "oneDNN layout pass: kernel for a remapper-fused op"),
    ("_MklNativeConv2DWithBias", "oneDNN layout pass: its own Conv2D+BiasAdd fusion"),
    ("_MklNativePadWith", "oneDNN layout pass: an explicit Pad folded into the convolution"),
    ("_MklPadWith", "oneDNN layout pass (older, blocked layout): Pad folded into the convolution"),
    ("_MklConv2DWithBias", "oneDNN layout pass (older, blocked layout): Conv2D+BiasAdd"),
    ("_MklSwish", "remapper (oneDNN): Sigmoid+Mul"),
    ("_MklLayerNorm", "remapper (oneDNN): layer normalisation sub-graph"),
    ("_TensorToHashBucketFast", "remapper: AsString+StringToHashBucketFast"),
)

# Stock ops whose own name starts with "Fused": their oneDNN kernels (_MklNativeFusedBatchNormV3)
# are renames, not fusions.
STOCK_FUSED_NAMES = frozenset({
    "FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3", "FusedBatchNormGrad",
    "FusedBatchNormGradV2", "FusedBatchNormGradV3", "FusedPadConv2D", "FusedResizeAndPadConv2D",
})

# Ops that head a remapper chain: what feeds them is the chain's input, never absorbed (a Pad folded
# into a convolution aside). Nodes that only pass a tensor on are removed by other passes (inlining,
# pruning), not by a fusion.
HEADS = frozenset({"Conv2D", "Conv3D", "DepthwiseConv2dNative", "MatMul", "BatchMatMul", "BatchMatMulV2"})
PASS_THROUGH = frozenset({"Identity", "IdentityN", "Snapshot", "StopGradient", "PreventGradient"})

# Internal kernel prefixes, longest first: what canonical_op strips.
_KERNEL_PREFIXES = ("_MklNative", "_Mkl", "_")


def canonical_op(op: str) -> str:
    """The op with oneDNN/internal prefixes removed: _MklNativeFusedMatMul -> FusedMatMul."""
    for prefix in _KERNEL_PREFIXES:
        if op.startswith(prefix) and len(op) > len(prefix):
            return op[len(prefix):]
    return op


def is_fused_op(op: str) -> bool:
    """True for op types that are fused kernels (by name alone)."""
    if canonical_op(op) in STOCK_FUSED_NAMES:
        return False
    return any(op.startswith(prefix) for prefix, _ in FUSED_OP_PREFIXES)


def is_fused_node(node: Node) -> bool:
    return bool(node.fused_ops) or is_fused_op(node.op)


def is_kernel_rename(old_op: str, new_op: str) -> bool:
    """Same computation under another kernel name: MatMul -> _MklMatMul, _FusedMatMul -> _MklNativeFusedMatMul."""
    return old_op != new_op and canonical_op(old_op) == canonical_op(new_op)


def fused_label(op: str, fused_ops=()) -> str:
    """A node as the explorer writes it: "_FusedMatMul [BiasAdd, Relu]", the op alone when it fused nothing."""
    return f"{op} [{', '.join(fused_ops)}]" if fused_ops else op


@dataclass(frozen=True)
class Fusion:
    node: str  # the fused node's name in `after`
    op: str
    fused_ops: tuple[str, ...]
    absorbed: tuple[str, ...]  # before-nodes folded into it, in topological order (constants included)
    absorbed_ops: tuple[str, ...]  # their op types, same order
    root: str | None  # the before-node whose name the fused node kept, if any

    @property
    def consts(self) -> tuple[str, ...]:
        return tuple(n for n, op in zip(self.absorbed, self.absorbed_ops) if op in CONST_OPS)

    @property
    def compute(self) -> tuple[tuple[str, str], ...]:
        """(name, op) of the absorbed nodes that are not constants."""
        return tuple((n, op) for n, op in zip(self.absorbed, self.absorbed_ops) if op not in CONST_OPS)

    def target(self) -> str:
        return fused_label(self.op, self.fused_ops)

    def describe(self, verbose: bool = False) -> str:
        """'Conv2D + BiasAdd + Relu → _FusedConv2D [BiasAdd, Relu]'.

        A name scope contributing four or more ops (a GELU) is shown as 'Gelu (8 ops: ...)'
        unless verbose; constants are counted, not listed.
        """
        parts = [op for _, op in self.compute] if verbose else _scope_groups(self.compute)
        if self.consts:
            parts.append(f"{len(self.consts)} const" + ("s" if len(self.consts) > 1 else ""))
        return f"{' + '.join(parts) or '(nothing)'} → {self.target()}"

    def to_dict(self) -> dict:
        return {
            "node": self.node, "op": self.op, "fused_ops": list(self.fused_ops),
            "absorbed": list(self.absorbed), "absorbed_ops": list(self.absorbed_ops),
            "root": self.root, "consts": list(self.consts), "describe": self.describe(),
        }


class Rename(NamedTuple):
    """A node that kept its name but changed op without absorbing anything."""

    name: str
    old_op: str
    new_op: str

    @property
    def kernel_swap(self) -> bool:
        """The same op under a oneDNN/internal kernel name (rather than an arithmetic rewrite such as Pow -> Mul)."""
        return is_kernel_rename(self.old_op, self.new_op)


def _scope_groups(compute: tuple[tuple[str, str], ...]) -> list[str]:
    scopes = [name.rpartition("/")[0] for name, _ in compute]
    # a sub-scope of four ops or more (a GELU's) is one part; the scope the chain starts in is the model's or the
    # layer's own ("StatefulPartitionedCall" for a tf.Module's function), whose ops are listed
    counts = Counter(s for s in scopes if s and s != scopes[0])
    parts: list[str] = []
    shown: set[str] = set()
    for (_, op), scope in zip(compute, scopes):
        if scope and counts[scope] >= 4:
            if scope not in shown:
                shown.add(scope)
                ops = [o for (_, o), s in zip(compute, scopes) if s == scope]
                parts.append(f"{scope} ({len(ops)} ops: {', '.join(ops)})")
        else:
            parts.append(op)
    return parts


def topological_order(graph: Graph) -> dict[str, int]:
    """Position of every node in a topological order that keeps graph order where it can.

    Edges from missing nodes are ignored; nodes on a cycle (not expected) keep graph order at the end.
    """
    index = {n.name: i for i, n in enumerate(graph.nodes)}
    indegree = {n.name: 0 for n in graph.nodes}
    consumers: dict[str, list[str]] = {n.name: [] for n in graph.nodes}
    for n in graph.nodes:
        for src in {e.src for e in n.inputs if e.src in index and e.src != n.name}:
            indegree[n.name] += 1
            consumers[src].append(n.name)
    ready = [(index[name], name) for name, d in indegree.items() if d == 0]
    heapq.heapify(ready)
    order: dict[str, int] = {}
    while ready:
        _, name = heapq.heappop(ready)
        order[name] = len(order)
        for c in consumers[name]:
            indegree[c] -= 1
            if indegree[c] == 0:
                heapq.heappush(ready, (index[c], c))
    for n in graph.nodes:
        order.setdefault(n.name, len(order))
    return order


def _gone_or_changed(name: str, before: Graph, after: Graph) -> bool:
    new = after.get(name)
    return new is None or new.op != before[name].op


def _ancestors(sinks: list[str], before: Graph, stop: set[str], eligible) -> set[str]:
    """Sinks plus their data ancestors in `before`, not crossing `stop` nor ineligible nodes, nor the
    inputs of a chain's head (a contraction reads the chain's inputs: what the arithmetic optimiser
    rewrote upstream of it, an AddV2 become AddN, is not part of the fusion), a Pad into it aside."""
    seen: set[str] = set()
    folded: dict[str, bool] = {}
    stack = [s for s in sinks if s in before and s not in stop and eligible(s)]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        op = before[name].op
        for e in before[name].data_inputs:
            if e.src not in before or e.src in stop or e.src in seen or not eligible(e.src):
                continue
            src_op = before[e.src].op
            if src_op not in CONST_OPS and _computed_from_constants(e.src, before, folded):
                continue  # a bias reshaped from a constant: constant folding's, not the fusion's
            if (op in HEADS and src_op not in CONST_OPS and src_op != "Pad") or (op == "Pad" and src_op not in CONST_OPS):
                continue
            stack.append(e.src)
    return seen


def _computed_from_constants(name: str, graph: Graph, memo: dict[str, bool]) -> bool:
    """Whether every data input of ``name``, all the way up, is a constant (what constant folding replaces)."""
    stack = [name]
    while stack:
        top = stack[-1]
        if top in memo:
            stack.pop()
            continue
        node = graph.get(top)
        if node is None or not node.data_inputs:
            memo[top] = node is not None and node.op in CONST_OPS
            stack.pop()
            continue
        todo = [e.src for e in node.data_inputs if e.src not in memo]
        if todo:
            memo.update({t: False for t in todo if t in stack})  # a cycle: not constant
            stack.extend(t for t in todo if t not in memo)
            continue
        memo[top] = all(memo[e.src] for e in node.data_inputs)
        stack.pop()
    return memo[name]


def _descendants(start: str, before: Graph, consumers: dict, eligible) -> set[str]:
    seen = {start}
    stack = [start]
    while stack:
        for child, edge in consumers.get(stack.pop(), ()):
            if not edge.control and child not in seen and eligible(child):
                seen.add(child)
                stack.append(child)
    return seen


def _vanished_tail(root: str, fused: str, before: Graph, after: Graph, before_consumers: dict, eligible) -> set[str]:
    """Chain nodes after a name-keeper that is the chain's *first* op (FusedBatchNorm+Add+Relu keeps
    the batch norm's name), which layout transposes around the fused node hide from the input
    rule: the nodes downstream of the root that vanished or changed op (a Relu left as Identity),
    provided that whatever read them now reads the fused node, through new nodes or through them."""
    def vanished(name: str) -> bool:  # a fused node of its own in ``after`` is no part of this chain
        return eligible(name) and not (name in after and is_fused_node(after[name]))

    tail = _descendants(root, before, before_consumers, vanished) - {root}
    readers = _past_pruned_identities({c for t in tail for c, e in before_consumers.get(t, ())
                                       if not e.control and c not in tail}, before, after, before_consumers)
    readers |= {t for t in tail if t in after}

    def passable(name: str) -> bool:
        return name not in before or name in tail

    if not readers or any(c not in after or not _reads_through(after[c], fused, after, passable) for c in readers):
        return set()
    return tail


def _past_pruned_identities(names: set[str], before: Graph, after: Graph, before_consumers: dict) -> set[str]:
    """``names`` with each pass-through node Grappler pruned (a model output's Identity chain) replaced by what
    read it, down to nodes ``after`` still has (the _Retval)."""
    out: set[str] = set()
    stack, seen = list(names), set()
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        if name not in after and name in before and before[name].op in PASS_THROUGH:
            stack.extend(c for c, e in before_consumers.get(name, ()) if not e.control)
        else:
            out.add(name)
    return out


def _reads_through(node: Node, target: str, after: Graph, passable) -> bool:
    """Whether ``node`` reads ``target`` in ``after``, directly or through ``passable`` nodes."""
    seen: set[str] = set()
    stack = [e.src for e in node.data_inputs]
    while stack:
        src = stack.pop()
        if src == target:
            return True
        if src in seen or src not in after or not passable(src):
            continue
        seen.add(src)
        stack.extend(e.src for e in after[src].data_inputs)
    return False


def _absorbed_by(fused: Node, before: Graph, after: Graph, claimed: set[str], consumers: tuple[dict, dict]) -> tuple[set[str], str | None]:
    inputs = {e.src for e in fused.data_inputs}
    before_consumers, all_after_consumers = consumers

    def eligible(name: str) -> bool:
        return (name not in claimed and name not in inputs and before[name].op not in PASS_THROUGH
                and _gone_or_changed(name, before, after))

    if fused.name in before and not eligible(fused.name):
        return set(), None  # already there with this op, or its namesake belongs to another fusion
    root = fused.name if fused.name in before else None
    after_consumers = {c for c, e in all_after_consumers.get(fused.name, ()) if not e.control}
    if root is not None:
        # Chain nodes downstream of the name-keeper (Conv2D+Squeeze+BiasAdd): they read one of the
        # fused node's inputs and their namesake now reads the fused node.
        candidates = [
            c for src in sorted(inputs) for c, e in before_consumers.get(src, ())
            if not e.control and c != root and c in after_consumers and eligible(c)
        ]
        reach = _descendants(root, before, before_consumers, eligible) if candidates else set()
        sinks = [root] + [c for c in candidates if c in reach]
        upstream = [e.src for e in before[root].data_inputs if e.src in before and before[e.src].op not in CONST_OPS]
        if not candidates and not any(eligible(src) for src in upstream):
            # Nothing upstream (constants aside, which Grappler merges) was absorbed: the root heads
            # the chain (see _vanished_tail).
            sinks += sorted(_vanished_tail(root, fused.name, before, after, before_consumers, eligible))
    else:
        # A fresh name: the chain ends in what the fused node's consumers used to read, and must
        # start at a consumer of one of its inputs. May take in a pass-through node that was pruned.
        starts = {c for src in inputs for c, e in before_consumers.get(src, ()) if not e.control and eligible(c)}
        if not starts:
            return set(), None
        downstream: set[str] = set()
        for s in starts:
            downstream |= _descendants(s, before, before_consumers, eligible)
        sinks = sorted(starts) + sorted(
            e.src for c in after_consumers if c in before for e in before[c].data_inputs
            if e.src in downstream and eligible(e.src)
        )
    return _ancestors(sinks, before, inputs, eligible), root


def find_fusions(before: Graph, after: Graph) -> list[Fusion]:
    """Fused nodes of `after` with the nodes of `before` they replaced, in `after`'s topological order.

    A fused node that absorbed nothing but its own namesake is a rename (see find_renames), and
    one that was already there with the same op is not new: neither is reported. Each before-node
    is absorbed by at most one fusion; control edges are not followed.
    """
    after_order = topological_order(after)
    before_order = topological_order(before)
    consumers = (before.consumers(), after.consumers())
    claimed: set[str] = set()
    fusions: list[Fusion] = []
    for fused in sorted((n for n in after.nodes if is_fused_node(n)), key=lambda n: after_order[n.name]):
        absorbed, root = _absorbed_by(fused, before, after, claimed, consumers)
        if {n for n in absorbed if before[n].op not in CONST_OPS} <= {fused.name}:
            continue  # nothing but its own namesake: a rename (_FusedMatMul -> _MklNativeFusedMatMul)
        claimed |= absorbed
        names = tuple(sorted(absorbed, key=before_order.__getitem__))
        fusions.append(Fusion(
            node=fused.name, op=fused.op, fused_ops=fused.fused_ops, absorbed=names,
            absorbed_ops=tuple(before[n].op for n in names), root=root,
        ))
    return fusions


def find_renames(before: Graph, after: Graph, fusions: list[Fusion] | None = None) -> list[Rename]:
    """Same-name nodes whose op changed and that are not fused nodes of `fusions`, in `after` order.

    Covers kernel swaps (MatMul -> _MklMatMul, _FusedMatMul -> _MklNativeFusedMatMul) and rewrites
    that kept the name (Pow -> Mul by the arithmetic optimiser; BiasAdd -> Squeeze in the
    Conv2D+Squeeze+BiasAdd fusion); ``Rename.kernel_swap`` tells them apart.
    """
    if fusions is None:
        fusions = find_fusions(before, after)
    fused = {f.node for f in fusions}
    return [
        Rename(n.name, before[n.name].op, n.op)
        for n in after.nodes
        if n.name in before and before[n.name].op != n.op and n.name not in fused
    ]
