"""What the parent works out from a worker's plain result, without TensorFlow.

``annotate`` adds the fusions found between stages and warnings about things TensorFlow did
that the graphs alone would hide; ``annotate_bench`` adds the statistics of a benchmark.
"""

from __future__ import annotations

from typing import Any, Mapping, cast

from ..model.graph import Graph
from ..model.results import BenchResult, FusionDict, InspectResult, SweepResult
from ..model.sources import source_for_data
from .dims import compare as compare_dims
from .fusion import find_fusions, find_renames
from .grappler_log import REMAPPER_DROPPED, REMAPPER_FAILED
from .grappler_passes import expand_pass_graphs
from .model_report import report
from .near_miss import Where
from .stats import bench_summary, fusion_pays_from, judged_by_outputs, sweep_table
from .replicated import QUICK_MODE, pooled_interval, quick, replicated_speedup
from .verdict import explain

STAGE_PAIRS = (("traced", "optimized"), ("optimized", "executed"), ("traced", "executed"))

# Log lines by which TensorFlow admits it gave up on optimising, and what they mean for a person.
SKIPPED_GRAPPLER = "Ignoring multi-device function optimization failure"
SKIPPED_MEANING = ("Grappler failed on this function and TensorFlow silently ran it with no Grappler optimisation "
                   "at all: the graph 'after Grappler' is the traced graph.")
REMAPPER_MEANING = ("Grappler's remapper failed on this graph (a TensorFlow defect), and TensorFlow dropped every change "
                    "it made: none of the fusions its log lists were kept, though the other passes' work was.")
TF_FAILURES = (
    (SKIPPED_GRAPPLER, SKIPPED_MEANING),
    ("does not specify an operation",
     "The remapper produced a node with no op (a TensorFlow defect), which made Grappler give up."),
    ("Fusion is not implemented",
     "The remapper made a fused node whose kernel does not implement that combination (a TensorFlow defect)."),
    (REMAPPER_FAILED, REMAPPER_MEANING),  # as TensorFlow logs it (once in a process)
    (REMAPPER_DROPPED, REMAPPER_MEANING),  # as grappler_log sees it after that
)


def graphs_of(result: InspectResult) -> dict[str, Graph]:
    return {name: Graph.from_dict(g) for name, g in result.get("stages", {}).items()}


def fusion_dict(fusion) -> FusionDict:
    # "description" repeats "describe" for scripts that read inspect --json's older key.
    return cast(FusionDict, dict(fusion.to_dict(), description=fusion.describe()))


def annotate(result: InspectResult) -> InspectResult:
    graphs = graphs_of(result)
    result = result.copy()
    if (result.get("grappler") or {}).get("pass_graphs"):  # the worker sends each pass as a delta
        result["grappler"] = {**result["grappler"], "pass_graphs": expand_pass_graphs(result["grappler"]["pass_graphs"])}
    fusions: dict[str, list[FusionDict]] = {}
    renames: dict[str, list[list[str]]] = {}
    for before, after in STAGE_PAIRS:
        if before in graphs and after in graphs:
            key = f"{before}->{after}"
            found = find_fusions(graphs[before], graphs[after])
            if (before, after) == ("traced", "optimized"):
                result["report"] = report(graphs, found, Where.of(result), result.get("xla_clusters") or (),
                                          result.get("executed_tensors"))
            fusions[key] = [fusion_dict(f) for f in found]
            renames[key] = [list(r) for r in find_renames(graphs[before], graphs[after], found)]
    result["fusions"] = fusions.get("traced->optimized", [])
    result["fusions_by_pair"] = fusions
    result["renames_by_pair"] = renames
    if result.get("as_served") is not None and "optimized" in graphs:
        dims = (result.get("spec") or {}).get("import", {}).get("unknown_dim", 1)
        result["dims"] = compare_dims(graphs["optimized"], result["as_served"], dims)
    result["warnings"] = tf_warnings(result, graphs)
    # The log line by which TensorFlow admits it ran the function with no Grappler at all.
    notable = (result.get("grappler") or {}).get("notable") or []
    result["grappler_skipped"] = next((line for line in notable if SKIPPED_GRAPPLER in line), None)
    result["remapper_failed"] = remapper_failure(notable)
    # The verdict's checklist is that of one op chain (a source's ``checklist``); other models have the
    # whole-model report.
    source = source_for_data(result.get("spec"))
    if "optimized" in graphs and source is not None and source.checklist:
        result["explanation"] = explain(result)
    return result


def remapper_failure(lines: list[str]) -> str | None:
    """The notable line saying that the remapper failed and TensorFlow dropped its work, or None."""
    return next((line for line in lines if REMAPPER_FAILED in line or REMAPPER_DROPPED in line), None)


def tf_failures(lines: list[str]) -> list[str]:
    """TensorFlow's log lines admitting it gave up on optimising (Grappler's notable lines), each in words."""
    return [f"{said} TensorFlow logged: {line}" for line, said in _failures(lines).items()]


def tf_failure_meanings(lines: list[str]) -> list[str]:
    """The same in words alone, without the log lines' node names: one model's and another's compare."""
    return list(_failures(lines).values())


def _failures(lines: list[str]) -> dict[str, str]:
    meanings: dict[str, list[str]] = {}  # one log line can match two needles: one warning, both meanings
    for needle, meaning in TF_FAILURES:
        hits = [ln for ln in lines if needle in ln]
        if hits:
            meanings.setdefault(hits[0], []).append(meaning)
    return {line: " ".join(said) for line, said in meanings.items()}


def tf_warnings(result: InspectResult, graphs: dict[str, Graph]) -> list[str]:
    warnings = tf_failures((result.get("grappler") or {}).get("notable", []))
    if (result.get("dims") or {}).get("changed"):
        warnings.append(result["dims"]["summary"])
    must = [c for c in result.get("xla_clusters") or () if c.get("kind") == "must-compile"]
    if must:
        ops = sorted({op["op"] for c in must for op in c["ops"]})
        count = sum(len(c["ops"]) for c in must)
        warnings.append(f"{len(must)} function{'s' if len(must) != 1 else ''} of the model "
                        f"{'are' if len(must) != 1 else 'is'} compiled by XLA (XLA must compile "
                        f"{'them' if len(must) != 1 else 'it'}: _XlaMustCompile), holding {count} "
                        f"op{'s' if count != 1 else ''} ({', '.join(ops)}): Grappler leaves "
                        f"{'them' if len(must) != 1 else 'it'} whole, so {'their' if len(must) != 1 else 'its'} "
                        "ops are not in the counts above; the Fusion report lists them as XLA clusters.")
    traced, optimized = graphs.get("traced"), graphs.get("optimized")
    if traced is not None and optimized is not None and traced.nodes == optimized.nodes:
        warnings.append("The graph after Grappler is identical to the traced graph: Grappler changed nothing "
                        "(or did not run).")
    if _auto_clustering_asked(result) and not result.get("xla_clusters") and (result.get("fingerprint") or {}).get("onednn"):
        # Measured on TF 2.21 (x86 CPU): the same preset forms a cluster with TF_ENABLE_ONEDNN_OPTS=0, none with 1.
        warnings.append("XLA auto-clustering was asked for (TF_XLA_FLAGS) but formed no cluster: with oneDNN on, "
                        "TensorFlow left the CPU graph to oneDNN (measured on TF 2.21). Set TF_ENABLE_ONEDNN_OPTS=0 "
                        "to see what XLA clusters.")
    return warnings


def _auto_clustering_asked(result: InspectResult) -> bool:
    config = result.get("config") or {}
    if config.get("device", "cpu") != "cpu":
        return False
    flags = ((config.get("env") or {}).get("TF_XLA_FLAGS") or "").split()
    levels = [f.split("=", 1)[1] for f in flags if f.startswith("--tf_xla_auto_jit=")]
    return bool(levels) and levels[-1] not in ("0", "-1", "off")


def annotate_bench(result: BenchResult) -> BenchResult:
    result = result.copy()
    result["summary"] = bench_summary(result)
    proof: Mapping[str, Any] = result.get("proof") or {}
    fused: Mapping[str, Any] = proof.get("fused") or {}
    unfused: Mapping[str, Any] = proof.get("unfused") or {}
    problems = []
    if result.get("reinstantiated_during_timing"):
        problems.append(f"{result['reinstantiated_during_timing']} function(s) were re-instantiated while timing, "
                        "so a variant may not have run the graph shown.")
    same = fused.get("executed_ops") == unfused.get("executed_ops")
    if same:
        problems.append("Both variants executed the same ops: the remapper fused nothing here, so the two "
                        "timings compare the same graph.")
    comparison = compared(result.get("config") or {})
    if comparison:
        result["comparison"] = comparison
    if same or (comparison and "Grappler" in comparison):
        result["nothing_to_compare"] = ("nothing to compare: " + (comparison if comparison and "Grappler" in comparison
                                        else "fused and unfused executed the same graph"))
    result["proof_summary"] = {
        "fused_executed": fused.get("executed_ops", []),
        "unfused_executed": unfused.get("executed_ops", []),
        "fused_nodes": [n["op"] for n in fused.get("fused_nodes", [])],
        "verified": not result.get("reinstantiated_during_timing"),
        "problems": problems,
    }
    return result


def compared(config: dict) -> str:
    """What a benchmark of this configuration compares when the configuration itself switches fusion off."""
    switches = config.get("grappler") or {}
    if switches.get("disable_meta_optimizer") == "on":
        return "Grappler is off in this configuration, so the remapper never runs: fused and unfused are the same graph"
    if switches.get("remapping") == "off":
        return ("the remapper is off in this configuration (the 'unfused' variant); 'fused' is the same "
                "configuration with the remapper switched on")
    return ""


def annotate_sweep(param: str, points: list[dict]) -> SweepResult:
    """A size sweep: its benchmark per value, the table of medians and speedups, and where fusion pays."""
    rows = sweep_table([(point["value"], point["result"]) for point in points])
    return {"param": param, "points": points, "rows": rows, "pays_from": fusion_pays_from(rows)}


def annotate_replicated(runs: list[dict]) -> BenchResult:
    """The bench results of several fresh worker processes as one result: per-process samples kept,
    summaries of the pooled samples (for the charts), and the replicated speedup as the speedup."""
    first = runs[0]
    per_process = {v: [list(r["samples_ns"][v]) for r in runs] for v in ("fused", "unfused")}
    pooled = {v: [ns for one in per_process[v] for ns in one] for v in ("fused", "unfused")}
    agreements = [r["agreement"] for r in runs]
    worst = max(agreements, key=lambda a: (a["within_tolerance"] is False, a["within_tolerance"] is None, a["max_abs"]))
    result = annotate_bench(cast(BenchResult, dict(
        first, samples_ns=pooled, reps_done=sum(r["reps_done"] for r in runs),
        reps_requested=sum(r["reps_requested"] for r in runs),
        reinstantiated_during_timing=sum(r.get("reinstantiated_during_timing") or 0 for r in runs),
        agreement=worst, elapsed_s=round(sum(r.get("elapsed_s", 0) for r in runs), 3))))
    replicated = replicated_speedup(per_process)
    if replicated["mode"] == QUICK_MODE:  # fewer than 2 processes gave enough pairs: that process's verdict
        replicated = quick(replicated)
    summary = result["summary"]
    summary["pooled_ci"] = list(pooled_interval(per_process))  # what one big process would have claimed
    summary["speedup"] = judged_by_outputs(replicated, worst)
    summary["reps"] = replicated["n_pairs_total"]
    result["mode"] = replicated["mode"]
    result["processes"] = len(runs)
    result["per_process"] = [{
        "pid": (r.get("worker") or {}).get("pid"), "startup_s": (r.get("worker") or {}).get("startup_s"),
        "reps_done": r["reps_done"], "elapsed_s": r.get("elapsed_s"), "samples_ns": r["samples_ns"],
        "fingerprint": r.get("fingerprint"), "first_variant": r.get("first_variant"),
    } for r in runs]
    executed = {(tuple(r["proof"]["fused"]["executed_ops"]), tuple(r["proof"]["unfused"]["executed_ops"]))
                for r in runs}
    if len(executed) > 1:
        result["proof_summary"]["problems"].append(
            "The processes did not all execute the same graphs, so their timings compare different things.")
    if replicated["mode"] == QUICK_MODE:
        result["proof_summary"]["problems"].append(
            "Fewer than 2 processes gave enough pairs, so this is the quick single-process figure.")
    return result
