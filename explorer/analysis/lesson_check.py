"""Does a lesson's step say what TensorFlow did? Its ``expect`` (model.lesson.Expect) against the inspect result.

A lesson is text about a real run: when TensorFlow does something else here (another version, another CPU's
oneDNN default), the page says so beside the text instead of letting the room believe the text.
"""

from __future__ import annotations

from ..model.graph import STAGES
from ..model.lesson import Expect
from .fusion import fused_label


def made_words(fusion: dict) -> str:
    """A fused node as the page writes it: "_FusedMatMul [BiasAdd, Relu]" ("_FusedConv2D" without fused ops)."""
    return fused_label(fusion["op"], fusion.get("fused_ops"))


def _ops(result: dict, stage: str) -> set[str] | None:
    stages = result.get("stages") or {}
    if stage == "any":
        found = [_ops(result, s) for s in stages]
        return set().union(*[f for f in found if f is not None]) if found else None
    graph = stages.get(stage)
    return None if graph is None else {n.get("op", "") for n in graph.get("nodes") or ()}


def _where(stage: str) -> str:
    return "in any graph" if stage == "any" else STAGES.get(stage, stage)


def mismatches(expect: Expect, result: dict) -> list[str]:
    """Sentences, one per claim of ``expect`` that ``result`` contradicts ([] when all hold)."""
    out = []
    fusions = result.get("fusions") or []
    if expect.fusions is not None and len(fusions) != expect.fusions:
        out.append(f"it says {expect.fusions} fusion{'s' if expect.fusions != 1 else ''}; Grappler made {len(fusions)}")
    made = [made_words(f) for f in fusions]
    for wanted in expect.made:
        if wanted not in made:
            out.append(f"it says Grappler makes {wanted}; it made {', '.join(made) or 'no fused node'}")
    for claims, present in ((expect.has, True), (expect.lacks, False)):
        for stage, ops in claims.items():
            found = _ops(result, stage)
            if found is None:
                out.append(f"it speaks of the graph {_where(stage)}, which this run does not have")
                continue
            for op in ops:
                if (op in found) != present:
                    out.append(f"it says the graph {_where(stage)} {'has' if present else 'has no'} {op}; "
                               f"it {'has none' if present else 'has one'}")
    verdict = (result.get("explanation") or {}).get("verdict")
    if expect.verdict and verdict != expect.verdict:
        out.append(f"it says \"{expect.verdict}\"; the verdict here is \"{verdict or 'none'}\"")
    return out
