"""From near-miss to measured gain: rewrite an imported model, check the copy, time it against the original.

The steps, each an ordinary engine request (so each is cached and queued like any other):

1. the model's inspect result and its per-op time (``Engine.profile``): the near-misses ranked by time;
2. which fixes apply (``analysis.fix_plan``), and the worker's "fix" request writing a copy of the model
   per variant (all the fixes together, each alone) into a folder of the engine's;
3. each copy imported as a model of its own (its own digest) and inspected: its fusions;
4. the copies timed against the model as imported, interleaved, in ``processes`` fresh worker processes
   (the replicated fused-vs-unfused method; 1: the warm worker, a quick run), its outputs compared with
   the original's on the same seeded inputs;
5. the copy with all the fixes kept at ``out`` (what the user takes away), the other copies removed.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time

from ..analysis import fix_plan, fix_report, op_time
from ..errors import SpecError
from ..model.flags import Config
from ..model.imported import ImportSpec
from ..model.sources import source_of
from ..model.spec import resolve
from .uploads import spec_for_path

ORIGINAL = "as imported"


def run(engine, spec, config=None, *, apply: list[str] | None = None, out: str | None = None, processes: int = 3,
        reps: int = 30, warmup: int = 3, max_seconds: float = 30.0, measure: bool = True, on_progress=None) -> dict:
    spec, config = resolve(spec), Config.coerce(config)
    if "fix" not in source_of(spec).offers:  # model.sources: the sources whose graph a fix may rewrite
        raise SpecError("model", "fixes rewrite an imported model: give --model PATH (GraphDef, SavedModel, .keras)")
    if measure:
        processes = engine.check_bench_options(reps, warmup, max_seconds, processes)
    say = _progress(on_progress)
    say(0.02, "inspecting the model as imported")
    before = engine.inspect(spec, config, on_progress=on_progress)
    say(0.1, "timing each op of the model as imported (TensorFlow's profiler)")
    profile = engine.profile(spec, config, on_progress=on_progress)
    before = op_time.attach(before, profile)
    fixes, skipped = fix_plan.choose(before, apply)
    started = time.strftime("%Y-%m-%d %H:%M:%S")
    if not fixes:
        return dict(_empty(before, skipped), config=config.to_dict(), measured_at=started,
                    fingerprint=before.get("fingerprint"))
    work = tempfile.mkdtemp(prefix="explorer-fix-")
    try:
        say(0.2, f"rewriting a copy of the model: {', '.join(fixes)}")
        variants = fix_plan.variants(fixes)
        with engine.queue(config.device).slot("graph", on_progress):
            written, _ = engine._run(config, "fix", {"spec": spec.to_dict(), "out_dir": work, "variants": variants},
                                     engine.pool.limits.inspect_s * 2, on_progress)
        specs = {v["name"]: _fixed_spec(v, spec) for v in written["variants"]}
        fixed = {}
        for i, (name, fixed_spec) in enumerate(specs.items()):
            say(0.3 + 0.2 * i / len(specs), f"inspecting the fixed model ({name})")
            fixed[name] = engine.inspect(fixed_spec, config, check_fixes=False, on_progress=on_progress)
        bench = _measure(engine, spec, specs, config, processes if measure else 0, reps, warmup, max_seconds, say)
        model_out = _keep(written["variants"][0], out) if out else None
        result = fix_report.assemble(before, written["variants"], fixed, bench, model_out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    say(1.0, "done")
    return dict(result, skipped=skipped, fixed_spec=spec_for_path(model_out, unknown_dim=spec.unknown_dim,
                                                                  outputs=written["variants"][0]["outputs"])
                if model_out else None,
                op_time=(before.get("report") or {}).get("op_time"), config=config.to_dict(), measured_at=started,
                fingerprint=before.get("fingerprint"), processes=processes if measure else 0,
                bench_runs=bench["runs"] if bench else [])


def _fixed_spec(variant: dict, original: ImportSpec) -> dict:
    """The copy as an imported model of its own: its own digest, fed as the original is."""
    return spec_for_path(variant["path"], unknown_dim=original.unknown_dim, outputs=variant["outputs"])


def _measure(engine, spec, specs: dict, config: Config, processes: int, reps: int, warmup: int, max_seconds: float,
             say) -> dict:
    """The copies against the model as imported, interleaved, in ``processes`` worker processes; with 0
    processes their outputs only, compared in the warm worker, and nothing timed."""
    payload = {"variants": [{"name": ORIGINAL, "spec": spec.to_dict()}]
               + [{"name": name, "spec": s} for name, s in specs.items()],
               "grappler": config.grappler_dict, "reps": int(reps), "warmup": int(warmup),
               "max_seconds": float(max_seconds)}
    if processes == 0:
        say(0.6, "comparing the fixed models' outputs with the original's")
        with engine.queue(config.device).slot("graph"):
            result, info = engine._run(config, "bench_models", dict(payload, reps=0), engine.pool.limits.inspect_s)
        return {"samples": None, "agreement": result["agreement"], "runs": []}
    timeout = float(max_seconds) + engine.pool.limits.bench_extra_s + 60 * len(specs)
    runs = []
    with engine.queue(config.device).slot("bench") as _:
        for i in range(processes):
            say(0.5 + 0.45 * i / processes, f"timing the fixed models against the original: process {i + 1}/{processes}")
            request = dict(payload, rotate=i)
            if processes == 1:
                result, info = engine._run(config, "bench_models", request, timeout)
            else:
                result, info = engine._run_fresh(config, "bench_models", request, timeout, None)
            runs.append(dict(result, worker=info))
    return {"samples": [r["samples_ns"] for r in runs], "agreement": runs[0]["agreement"],
            "runs": [{"reps_done": r["reps_done"], "reinstantiated_during_timing": r["reinstantiated_during_timing"],
                      "fused_nodes": {n: len(p["fused_nodes"]) for n, p in r["proof"].items()},
                      "worker": r["worker"]} for r in runs]}


def _keep(variant: dict, out: str) -> str:
    """The copy with all the fixes, copied to ``out``: ``out`` (+ ".pb") for a GraphDef, the directory ``out``
    for a SavedModel (which must not exist yet)."""
    source = variant["path"]
    if variant["format"] == "savedmodel":
        target = out[:-3] if out.endswith(".pb") else out
        if os.path.exists(target):
            raise SpecError("--out", f"{target} exists; give a new directory for the fixed SavedModel")
        shutil.copytree(source, target)
    else:
        target = out if out.endswith(".pb") else out + ".pb"
        shutil.copyfile(source, target)
    return os.path.abspath(target)


def _empty(before: dict, skipped: dict) -> dict:
    misses = (before.get("report") or {}).get("near_misses") or []
    return {"applied": [], "fusions_before": fix_report.fusions(before), "fusions_after": fix_report.fusions(before),
            "max_abs_diff": None, "max_rel_diff": None, "tolerance": None, "within_tolerance": None, "speedup": None,
            "bytes_saved": None, "per_fix": [], "model_out": None, "skipped": skipped,
            "near_misses_ranked": [dict(fix_plan.chain_of(m), fix=m.get("fix"), fixed_by=[])
                                   for m in op_time.ranked(misses)]}


def _progress(on_progress):
    def say(fraction: float, message: str) -> None:
        if on_progress:
            on_progress({"fraction": fraction, "message": message})
    return say
