"""Fusion-aware diff of two neutral graphs (two stages, or two pass dumps): pure data, no drawing.

Nodes are matched by name, which is what Grappler preserves: a fused node keeps the name of the
chain's root, and the oneDNN layout pass keeps every name. A node's *status* on one side is what
the page colours it by:

    before side: absorbed (folded into a fusion), removed, changed, unchanged
    after side:  fused (a new fused node), added, changed, unchanged
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model.graph import Graph, Node
from .fusion import Fusion, Rename, find_fusions, find_renames

STATUSES = ("removed", "added", "changed", "fused", "absorbed", "unchanged")
SIDES = ("before", "after")


@dataclass(frozen=True)
class Change:
    name: str
    reasons: tuple[str, ...]  # short phrases: "op Pow → Mul", "inputs Identity → Gelu/mul_3"

    @property
    def reason(self) -> str:
        return "; ".join(self.reasons)


@dataclass(frozen=True)
class GraphDiff:
    removed: tuple[str, ...]  # only in before, not absorbed by a fusion; before order
    added: tuple[str, ...]  # only in after, not a fused node; after order
    changed: tuple[Change, ...]  # in both, with a different op, fused_ops or inputs; after order
    unchanged: tuple[str, ...]  # in both, same; after order
    fusions: tuple[Fusion, ...]
    renames: tuple[Rename, ...]
    _index: dict = field(default_factory=dict, compare=False, repr=False, hash=False)  # lookups, built once

    def __post_init__(self):
        before: dict[str, str] = {}
        after: dict[str, str] = {}
        for c in self.changed:
            before[c.name] = after[c.name] = "changed"
        for name in self.unchanged:
            before[name] = after[name] = "unchanged"
        for name in self.removed:
            before[name] = "removed"
        for name in self.added:
            after[name] = "added"
        for f in self.fusions:
            for name in f.absorbed:
                before[name] = "absorbed"
            after[f.node] = "fused"
        fusion_of: dict[str, Fusion] = {}
        for f in self.fusions:
            fusion_of[f.node] = f
            for name in f.absorbed:
                fusion_of.setdefault(name, f)
        object.__setattr__(self, "_index", {
            "before": before, "after": after, "reason": {c.name: c.reason for c in self.changed}, "fusion": fusion_of,
        })

    def status(self, name: str, side: str) -> str:
        """removed|added|changed|fused|absorbed|unchanged of a node on one side ("before" or "after")."""
        if side not in SIDES:
            raise ValueError(f"side must be one of {SIDES}, not {side!r}")
        try:
            return self._index[side][name]
        except KeyError:
            raise KeyError(f"no node {name!r} on the {side} side") from None

    def overlay(self, side: str) -> dict[str, str]:
        """Status of every node on one side: what present.dot.to_dot colours by."""
        if side not in SIDES:
            raise ValueError(f"side must be one of {SIDES}, not {side!r}")
        return dict(self._index[side])

    def reason(self, name: str) -> str:
        """Why a node counts as changed ("" if it does not)."""
        return self._index["reason"].get(name, "")

    def fusion_of(self, name: str) -> Fusion | None:
        """The fusion a node belongs to: as the fused node (after) or an absorbed one (before)."""
        return self._index["fusion"].get(name)

    def clusters(self, side: str = "before") -> dict[str, list[str]]:
        """One group per fusion, for present.dot.to_dot(clusters=...): the absorbed nodes (before) or the fused node (after).

        Keys name the fused node, so two fusions into the same op stay apart.
        """
        if side not in SIDES:
            raise ValueError(f"side must be one of {SIDES}, not {side!r}")
        return {f"→ {f.target()} ({f.node})": list(f.absorbed) if side == "before" else [f.node] for f in self.fusions}

    def counts(self) -> dict[str, int]:
        return {
            "removed": len(self.removed), "added": len(self.added), "changed": len(self.changed),
            "unchanged": len(self.unchanged), "fusions": len(self.fusions),
            "absorbed": sum(len(f.absorbed) for f in self.fusions), "renames": len(self.renames),
        }

    def summary(self) -> list[str]:
        """One line per fusion and per rename, then the counts: for a caption or the CLI."""
        lines = [f"fused: {f.describe()}" for f in self.fusions]
        lines += [f"renamed: {r.name}: {r.old_op} → {r.new_op}" for r in self.renames if r.kernel_swap]
        lines += [f"rewritten: {r.name}: {r.old_op} → {r.new_op}" for r in self.renames if not r.kernel_swap]
        c = self.counts()
        # The same counts as the graph tab's caption, so the pass table and the graphs agree.
        lines.append(f"{c['absorbed']} nodes absorbed, {c['removed']} removed, {c['added']} added, "
                     f"{c['changed']} changed, {c['unchanged']} unchanged")
        return lines

    def to_dict(self) -> dict:
        return {
            "removed": list(self.removed), "added": list(self.added),
            "changed": [{"name": c.name, "reasons": list(c.reasons)} for c in self.changed],
            "unchanged": list(self.unchanged), "fusions": [f.to_dict() for f in self.fusions],
            "renames": [{"name": r.name, "old_op": r.old_op, "new_op": r.new_op, "kernel_swap": r.kernel_swap}
                        for r in self.renames],
        }


def _edge_text(e) -> str:
    text = e.src if e.port == 0 else f"{e.src}:{e.port}"
    return "^" + text if e.control else text


def _list(items) -> str:
    return ", ".join(items) if items else "(none)"


def change_reasons(old: Node, new: Node) -> tuple[str, ...]:
    """What differs between two versions of a node; device, dtype and attrs are not compared."""
    reasons = []
    if old.op != new.op:
        reasons.append(f"op {old.op} → {new.op}")
    if old.fused_ops != new.fused_ops:
        reasons.append(f"fused_ops [{', '.join(old.fused_ops)}] → [{', '.join(new.fused_ops)}]")
    old_data = [_edge_text(e) for e in old.data_inputs]
    new_data = [_edge_text(e) for e in new.data_inputs]
    if old_data != new_data:
        if sorted(old_data) == sorted(new_data):
            reasons.append("inputs reordered")  # the arithmetic optimiser canonicalises commutative ops
        else:
            reasons.append(f"inputs {_list(old_data)} → {_list(new_data)}")
    # Control inputs have no order that matters.
    old_ctrl = {e.src for e in old.inputs if e.control}
    new_ctrl = {e.src for e in new.inputs if e.control}
    if old_ctrl != new_ctrl:
        parts = [f"+^{s}" for s in sorted(new_ctrl - old_ctrl)] + [f"-^{s}" for s in sorted(old_ctrl - new_ctrl)]
        reasons.append("control " + " ".join(parts))
    return tuple(reasons)


def diff_graphs(before: Graph, after: Graph) -> GraphDiff:
    """Match two graphs by node name and explain the differences, fusions first."""
    fusions = find_fusions(before, after)
    renames = find_renames(before, after, fusions)
    absorbed = {name for f in fusions for name in f.absorbed}
    fused = {f.node for f in fusions}
    removed = tuple(n.name for n in before.nodes if n.name not in after and n.name not in absorbed)
    added = tuple(n.name for n in after.nodes if n.name not in before and n.name not in fused)
    changed: list[Change] = []
    unchanged: list[str] = []
    for n in after.nodes:
        if n.name not in before or n.name in fused:
            continue
        reasons = change_reasons(before[n.name], n)
        if reasons:
            changed.append(Change(n.name, reasons))
        else:
            unchanged.append(n.name)
    return GraphDiff(removed, added, tuple(changed), tuple(unchanged), tuple(fusions), tuple(renames))
