"""The result of trying fixes on a model, assembled from plain data: what each fix rewrote and resolved,
the fusions before and after, the outputs' agreement, the speedups and the memory traffic saved.

Inputs (made by ``engine.fixes``): the model's inspect result with its per-op times, the worker's record
of each fixed copy, the inspect result of each copy, and the interleaved benchmark of all of them (one
list of samples per process). The speedup of a copy is the replicated method's (``replicated``): the
geometric mean over processes of median(as imported) / median(fixed), with its Student-t interval (or
the bootstrap interval of one process).
"""

from __future__ import annotations

from . import traffic
from .annotate import tf_failure_meanings
from .fix_plan import FIXES, advice, chain_of, resolved, scope_of
from .model_report import tensor_bytes
from .op_time import IDLE_OPS, ranked
from .replicated import replicated_speedup
from ..model.graph import Graph


def fusions(result: dict) -> list[dict]:
    """The report's fusions as fused op and count."""
    return [{"fused": r["fused"], "count": r["count"]} for r in (result.get("report") or {}).get("fusions") or []]


def fused_kernels(result: dict) -> int:
    return int(((result.get("report") or {}).get("totals") or {}).get("fused_kernels") or 0)


def bytes_written(result: dict, ran: bool = True) -> int | None:
    """Bytes the executed graph's ops write per call: the difference between two models is the memory traffic
    one saves. With ``ran``, from the tensors that ran (``traffic``'s account of the executed graph; None where a
    shape is not known). Otherwise, or for a result without them (the remapper off), each op's first output from
    the traced shapes, nodes Grappler made (no traced shape: shape arithmetic, folded constants) left out; None
    without an executed graph."""
    tensors = result.get("executed_tensors")
    if ran and tensors:
        account = traffic.variant_account(tensors["fused"])
        return None if account["unknown_tensors"] else account["writes"]
    executed = (result.get("stages") or {}).get("executed")
    if not executed:
        return None
    return sum(tensor_bytes(node) or 0 for node in Graph.from_dict(executed).nodes
               if node.op not in IDLE_OPS and node.op not in ("Placeholder", "ReadVariableOp", "VarHandleOp"))


def failed(result: dict) -> list[str]:
    """What TensorFlow admitted it dropped while optimising ``result``'s model (Grappler skipped, a pass failed), in
    words, without the log line's node names: one model's and another's compare."""
    return tf_failure_meanings((result.get("grappler") or {}).get("notable") or [])


def speedup(pairs: list[dict], name: str) -> dict:
    """The speedup of ``name`` over the model as imported, from its interleaved samples and the original's in
    each process: estimate, interval, processes (and how)."""
    sp = replicated_speedup({"fused": [p[name]["fixed"] for p in pairs], "unfused": [p[name]["original"] for p in pairs]})
    return {"estimate": sp["estimate"], "ci_low": sp.get("ci_low"), "ci_high": sp.get("ci_high"),
            "processes": sp.get("n_processes", 1), "mode": sp.get("mode")}


def assemble(before: dict, variants: list[dict], fixed: dict[str, dict], bench: dict, model_out: str | None) -> dict:
    """The fix result. ``variants``: the worker's records ({"name", "fixes", "records"}); ``fixed``: {variant
    name: its inspect result}; ``bench``: {"pairs": [{variant: {"fixed": ns, "original": ns}} per process],
    "agreement": {variant: agreement}}; its pairs None when nothing was timed."""
    misses = (before.get("report") or {}).get("near_misses") or []
    by_name = {v["name"]: v for v in variants}
    ran = all(r.get("executed_tensors") for r in (before, *fixed.values()))  # one way of counting for all
    written_before = bytes_written(before, ran)

    def entry(name: str) -> dict:
        result = fixed[name]
        gone = resolved(misses, (result.get("report") or {}).get("near_misses") or [], result.get("fusions") or [])
        after = bytes_written(result, ran)
        out = {"fixes": by_name[name]["fixes"], "fusions_after": fusions(result), "tensorflow_failed": failed(result),
               "fused_kernels_after": fused_kernels(result), "chains_resolved": [chain_of(m) for m in gone],
               "bytes_saved": written_before - after if written_before is not None and after is not None else None}
        agrees = bench["agreement"][name]
        out.update(max_abs_diff=agrees["max_abs"], max_rel_diff=agrees["max_rel"], tolerance=agrees["tolerance"],
                   within_tolerance=agrees["within_tolerance"],
                   speedup=speedup(bench["pairs"], name) if bench["pairs"] else None)
        return out

    together = entry("all")
    all_gone = resolved(misses, (fixed["all"].get("report") or {}).get("near_misses") or [],
                        fixed["all"].get("fusions") or [])
    scope = scope_of(misses)
    applied = []
    for record in by_name["all"]["records"]:
        alone = fixed[record["fix"]] if record["fix"] in fixed else fixed["all"]
        chains = resolved(misses, (alone.get("report") or {}).get("near_misses") or [], alone.get("fusions") or [])
        # a chain of two forms (``also``) that only the fixes together resolve counts for each of them
        kinds = set(FIXES.get(record["fix"], ()))
        shared = [m for m in all_gone if m.get("also") and m not in chains and {m["kind"], *m["also"]} & kinds]
        chains += shared
        nodes = sorted({n for site in record["sites"] for n in site["nodes"]})
        applied.append({"fix": record["fix"], "chains": [chain_of(m) for m in chains], "nodes": nodes,
                        "with_others": len(shared), "sites": len(record["sites"]), "left": record["left"],
                        "advice": advice(record["fix"], chains, scope) if record["sites"] else
                        "nothing of this form in the model"})
    per_fix = [dict(entry(v["name"]), fix=v["name"]) for v in variants if v["name"] != "all"]
    if not per_fix and variants[0]["fixes"]:  # one fix: alone is all together
        per_fix = [dict(together, fix=variants[0]["fixes"][0])]
    fixed_by: dict[tuple, list[str]] = {}
    for a in applied:
        for c in a["chains"]:
            fixed_by.setdefault(tuple(c["nodes"]), []).append(a["fix"])
    return {
        "applied": applied,
        "fusions_before": fusions(before),
        "fusions_after": together["fusions_after"],
        "fused_kernels_before": fused_kernels(before),
        "fused_kernels_after": together["fused_kernels_after"],
        # TensorFlow's own failures on the fixed model that the model as imported did not meet: the fix led to them
        "tensorflow_failed_after": [w for w in together["tensorflow_failed"] if w not in failed(before)],
        "max_abs_diff": together.get("max_abs_diff"),
        "max_rel_diff": together.get("max_rel_diff"),
        "tolerance": together.get("tolerance"),
        "within_tolerance": together.get("within_tolerance"),
        "speedup": together.get("speedup"),
        "bytes_saved": together["bytes_saved"],
        "bytes_written_before": written_before,
        "per_fix": per_fix,
        "near_misses_ranked": [dict(chain_of(m), fix=m.get("fix"), fixed_by=fixed_by.get(tuple(m["nodes"]), []))
                               for m in ranked(misses)],
        "near_misses_left": [chain_of(m) for m in (fixed["all"].get("report") or {}).get("near_misses") or []],
        "model_out": model_out,
    }
