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
import time

from ..analysis import fix_plan, fix_report, op_time
from ..errors import SpecError, WorkerError
from ..model.flags import Config
from ..model.imported import ImportSpec
from ..model.sources import source_of
from ..model.spec import resolve
from . import scratch
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
    before = engine.check_fixes(spec, config, engine.inspect(spec, config, on_progress=on_progress))
    say(0.1, "timing each op of the model as imported (TensorFlow's profiler)")
    profile = engine.profile(spec, config, on_progress=on_progress)
    before = op_time.attach(before, profile)
    fixes, skipped = fix_plan.choose(before, apply)
    started = time.strftime("%Y-%m-%d %H:%M:%S")
    if not fixes:
        return dict(_empty(before, skipped), config=config.to_dict(), measured_at=started,
                    fingerprint=before.get("fingerprint"))
    work = scratch.folder("fix")
    try:
        say(0.2, f"rewriting a copy of the model: {', '.join(fixes)}")
        variants = fix_plan.variants(fixes)
        written, _ = engine.request(config, "fix", {"spec": spec.to_dict(), "out_dir": work, "variants": variants},
                                    timeout=engine.pool.limits.inspect_s * 2, on_progress=on_progress)
        records = written["variants"][0]["records"]
        if not any(r["sites"] for r in records):  # a copy that is the model: nothing to inspect, time or keep
            return dict(_empty(before, dict(skipped, **{r["fix"]: _found_nothing(r, before) for r in records})),
                        config=config.to_dict(), measured_at=started, fingerprint=before.get("fingerprint"))
        specs = {v["name"]: _fixed_spec(v, spec) for v in written["variants"]}
        fixed = {}
        for i, (name, fixed_spec) in enumerate(specs.items()):
            say(0.3 + 0.2 * i / len(specs), f"inspecting the fixed model ({name})")
            fixed[name] = engine.inspect(fixed_spec, config, on_progress=on_progress)
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
    processes their outputs only, compared in the warm worker, and nothing timed.

    All the copies share one process with the original when they fit in a worker's memory; a network too big
    for that (ResNet50 with oneDNN: four copies passed the cap) is measured one copy against the original
    at a time instead. Returns {"pairs": [{copy: {"fixed": ns, "original": ns}} per process] (None when
    nothing was timed), "agreement": {copy: agreement}, "runs": [...]}."""
    base = {"grappler": config.grappler_dict, "reps": int(reps) if processes else 0, "warmup": int(warmup),
            "max_seconds": float(max_seconds)}
    timeout = float(max_seconds) + engine.pool.limits.bench_extra_s + 60 * len(specs)
    groups = [list(specs)]
    pairs, agreement, runs = [], {}, []
    with engine.queue(config.device).slot("bench" if processes else "graph"):
        i = 0
        while i < max(processes, 1):
            say(0.5 + 0.45 * i / max(processes, 1), "comparing the fixed models' outputs with the original's"
                if not processes else f"timing the fixed models against the original: process {i + 1}/{processes}")
            try:
                measured = {}
                for group in groups:
                    request = dict(base, rotate=i, variants=[{"name": ORIGINAL, "spec": spec.to_dict()}]
                                   + [{"name": name, "spec": specs[name]} for name in group])
                    # The slot is held above, across the processes: no other request runs between them.
                    result, info = engine.request(config, "bench_models", request, slot=None, timeout=timeout,
                                                  fresh=processes > 1)
                    agreement.update(result["agreement"])
                    runs.append(_run_record(result, info))
                    for name in group:
                        if result["samples_ns"]:
                            measured[name] = {"fixed": result["samples_ns"][name],
                                              "original": result["samples_ns"][ORIGINAL]}
            except WorkerError as exc:
                if exc.kind != "memory" or len(groups[0]) == 1:
                    raise
                groups = [[name] for name in specs]  # one copy at a time, this process again
                continue
            pairs.append(measured)
            i += 1
    return {"pairs": pairs if processes else None, "agreement": agreement, "runs": runs}


def _run_record(result: dict, info: dict) -> dict:
    return {"reps_done": result["reps_done"], "reinstantiated_during_timing": result["reinstantiated_during_timing"],
            "fused_nodes": {n: len(p["fused_nodes"]) for n, p in result["proof"].items()}, "worker": info}


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


def _found_nothing(record: dict, before: dict) -> str:
    """Why a fix the plan chose rewrote nothing: the sites it left and why, or what it looked for."""
    left = record["left"]
    if left:
        more = f" and {len(left) - 1} more" if len(left) > 1 else ""
        return f"rewrote nothing: {left[0]['nodes'][0]} left as it is ({left[0]['why']}){more}"
    if record["fix"] == "freeze" and fix_plan.has_variables(before):
        return ("rewrote nothing: the model's own graph reads no variable it can turn into a constant (reads inside "
                "a function, such as a loop's body or a branch, stay variables)")
    return "rewrote nothing: the model holds nothing of its form"


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
