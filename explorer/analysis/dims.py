"""What fixing an imported model's unknown dimensions changed, against the model as TensorFlow serves it.

A served signature leaves the batch (and any other unknown dimension) unknown. Traced with them fixed,
constant folding can specialise the graph (a flatten's shape becomes a constant with a control input
from the layer before it, and the remapper refuses a node with a control edge), so the fixed graph
may fuse other chains than the served one. The worker sends the served graph's fused nodes
(``result["as_served"]``); this module sets them beside the fixed graph's.
"""

from __future__ import annotations

from collections import Counter
from typing import Any, Mapping

from ..model.graph import Graph
from .fusion import fused_label, is_fused_node


def fused_nodes(graph: Graph) -> dict[str, str]:
    """{node: "op [fused_ops]"} of a graph's fused nodes (the worker's ``fused_summary`` of a GraphDef)."""
    return {n.name: fused_label(n.op, n.fused_ops) for n in graph.nodes if is_fused_node(n)}


def compare(fixed: Graph, served: Mapping[str, Any], unknown_dim: int) -> dict:
    """The fixed graph's fusions against the served ones: the counts by fused op both ways, the nodes
    fused one way only, and a sentence saying whether fixing the dimensions changed what fused."""
    mine = fused_nodes(fixed)
    theirs = dict(served.get("fused") or {})
    counts_fixed, counts_served = Counter(mine.values()), Counter(theirs.values())
    differ = [{"node": name, "fixed": mine.get(name), "as_served": theirs.get(name)}
              for name in sorted(set(mine) | set(theirs)) if mine.get(name) != theirs.get(name)]
    changed = counts_fixed != counts_served or bool(differ)
    if not changed:
        summary = (f"Fixing the unknown dimensions to {unknown_dim} changed nothing that fused: the same "
                   f"{sum(counts_fixed.values())} fused nodes as the model traced as served.")
    else:
        parts = []
        for target in sorted(set(counts_fixed) | set(counts_served)):
            a, b = counts_fixed[target], counts_served[target]
            if a != b:
                parts.append(f"{target}: {a} with the dimensions fixed, {b} as served")
        shown = ", ".join(str(d["node"]) for d in differ[:3]) + (f" and {len(differ) - 3} more" if len(differ) > 3 else "")
        summary = (f"Fixing the unknown dimensions to {unknown_dim} changed what fused ({'; '.join(parts) or 'other nodes'}"
                   f"; nodes: {shown}). TensorFlow serving the model leaves them unknown: its fusions are the "
                   "served ones; constant folding specialised the fixed graph.")
    return {"changed": changed, "unknown_dim": unknown_dim, "fixed": dict(counts_fixed),
            "as_served": dict(counts_served), "nodes": differ, "summary": summary}
