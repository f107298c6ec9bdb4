"""The verdict on a model: what TensorFlow fused, set against what the rules predicted, with the reasons.

``explain(result)`` reads an inspect result (spec, configuration, fingerprint, graphs) and returns
the pattern, the verdict taken from the graph after Grappler (fused, partly fused, not fused), the
checklist, the failing conditions as reasons, the fixes as words and as settings, and, where the
rules and the graph disagree, both (the graph is what happened).
"""

from __future__ import annotations

from typing import TypedDict

from ..model.graph import Graph
from ..model.results import Explanation, InspectResult, SettingDict
from ..model.spec import resolve
from .fusion import fused_label, is_fused_node
from .prediction import Prediction, predict
from .preconditions import Context


def observed_fusions(optimized: Graph, traced: Graph | None = None) -> list[tuple[str, tuple[str, ...]]]:
    """The fused nodes of a graph as (op, what it holds); _FusedBatchNormEx spells it in attributes.

    A plain LeakyRelu counts when the traced graph had none (the remapper made it from Mul+Maximum).
    """
    found: list[tuple[str, tuple[str, ...]]] = []
    made_leaky = traced is not None and "LeakyRelu" not in traced.ops
    for n in optimized.nodes:
        if n.op == "LeakyRelu" and made_leaky:
            found.append((n.op, ()))
            continue
        if n.op in ("_FusedBatchNormEx", "_FusedBatchNormGradEx"):
            attrs = n.attr
            side = attrs.get("num_side_inputs", "0") not in ("0", "")
            found.append((n.op, (("Add",) if side else ()) + ((attrs["activation_mode"],)
                                                              if attrs.get("activation_mode", "Identity") != "Identity" else ())))
        elif is_fused_node(n):
            found.append((n.op, tuple(n.fused_ops)))
    return found


def explain(result: InspectResult) -> Explanation:
    """Prediction, checklist and verdict for the model of an inspect result."""
    spec = resolve(result["spec"])
    config = result.get("config") or {}
    fp = result.get("fingerprint") or {}
    ctx = Context(spec.chain, spec.p, config.get("device", "cpu"), bool(fp.get("onednn")),
                  config.get("env") or {}, config.get("grappler") or {}, set(fp.get("cpu_flags") or ()))
    pred = predict(ctx)
    if spec.chain.kind == "batchnorm_fold":
        return _explain_decomposition(result, pred)
    observed = observed_fusions(Graph.from_dict(result["stages"]["optimized"]),
                                Graph.from_dict(result["stages"]["traced"]) if "traced" in result["stages"] else None)
    if pred.full and pred.full in observed:
        verdict = "fused"
    elif observed:
        verdict = "partly fused" if pred.full else "fused"
    else:
        verdict = "not fused"
    agrees = sorted(pred.fusions) == sorted(observed)
    failing = [ch for ch in pred.checks if ch.ok is False]
    if verdict == "fused":
        reasons = ["every condition of the pattern holds"]
    elif failing:
        reasons = list(dict.fromkeys(ch.detail for ch in failing))
    else:
        reasons = ["no rule the explorer knows explains it" if ctx.on_cpu else "the rules cannot tell on this machine"]
    why = "; ".join(reasons)
    if not agrees:
        why += (f" — note: the rules predicted {_fmt(pred.fusions)} but TensorFlow made {_fmt(observed)}; "
                "the graph is what happened")
    return {
        "pattern": pred.pattern,
        "verdict": verdict,
        "full": {"op": pred.full[0], "fused_ops": list(pred.full[1])} if pred.full else None,
        "observed": [{"op": op, "fused_ops": list(ops)} for op, ops in observed],
        "predicted": [{"op": op, "fused_ops": list(ops)} for op, ops in pred.fusions],
        "agrees": agrees,
        "certain": pred.certain,
        "why": why,
        **_remedies(failing),
        "reasons": reasons,
        "checks": [ch.to_dict() for ch in pred.checks],
        "notes": pred.notes,
    }


class _Remedies(TypedDict):
    fixes: list[str]
    changes: list[list[SettingDict]]


def _remedies(failing: list) -> _Remedies:
    """The failing checks' fixes: as words ("fixes", one per fix) and as settings ("changes", one list of
    settings per way to make a check pass, each way once)."""
    fixes = [ch.fix for ch in failing if ch.fix]
    changes: list[list[SettingDict]] = []
    for f in fixes:
        for alternative in f.changes():
            if alternative not in changes:
                changes.append(alternative)
    return {"fixes": list(dict.fromkeys(f.text for f in fixes)), "changes": changes}


def _fmt(fusions) -> str:
    if not fusions:
        return "no fusion"
    return ", ".join(fused_label(op, ops) for op, ops in fusions)


def _explain_decomposition(result: InspectResult, pred: Prediction) -> Explanation:
    """The constant batch norm: success is the FusedBatchNorm being gone, not a fused node appearing."""
    optimized = Graph.from_dict(result["stages"]["optimized"])
    gone = not any(op.startswith("FusedBatchNorm") for op in optimized.ops)
    failing = [ch for ch in pred.checks if ch.ok is False]
    expected_gone = not failing
    reasons = (["the batch norm became Mul/Add primitives"] if gone else
               list(dict.fromkeys(ch.detail for ch in failing)) or ["no rule the explorer knows explains it"])
    return {
        "pattern": pred.pattern, "verdict": "decomposed" if gone else "not decomposed", "full": None,
        "observed": [], "predicted": [], "agrees": gone == expected_gone, "certain": pred.certain,
        "why": "; ".join(reasons), **_remedies(failing), "reasons": reasons,
        "checks": [ch.to_dict() for ch in pred.checks], "notes": pred.notes,
    }
