"""Models against each other in one process: the model as imported and its fixed copies, timed interleaved (or
one model alone, as served: a side of A against B, ``engine.compare``).

The fused-vs-unfused method (``timing``) with models as the variants instead of Grappler settings: the
same seeded inputs (the original's) fed to every model, Grappler at the request's settings for all,
each variant's executed graph captured as the proof of what it ran, its outputs compared with the
original's, then the variants timed interleaved with the first one rotating, graph collection on.
"""

from __future__ import annotations

import time

from ..errors import SpecError
from ..model.spec import resolve
from . import agreement as checked_outputs, models, timing
from .bench import fused_fails, model_instantiations
from .runtime import Runtime
from .shapes import executed_tensors, fed_shapes


def run(rt: Runtime, request: dict) -> dict:
    tf = rt.tf
    variants = request.get("variants") or []
    if not variants:  # one alone is timed by itself (A against B with other settings: a process for each)
        raise SpecError("variants", "give at least one model to time")
    switches = dict(request.get("grappler") or {})
    rt.clear_dumps()
    rt.reset_grappler()
    built = {v["name"]: rt.build(resolve(v["spec"])) for v in variants}
    names = [v["name"] for v in variants]
    args = built[names[0]][1]
    for name in names[1:]:
        theirs = built[name][1]
        if [(tuple(a.shape), a.dtype) for a in theirs] != [(tuple(a.shape), a.dtype) for a in args]:
            raise SpecError("variants", f"{name} takes other inputs than the model as imported")
    setup = timing.Setup(resolve(variants[0]["spec"]), switches, int(request.get("reps", 30)),
                         int(request.get("warmup", 3)), float(request.get("max_seconds", 60.0)), request.get("id"),
                         built[names[0]][0], args, int(request.get("rotate", 0)))
    fns = {name: models.function(built[name][0], tf, served=True) for name in names}
    proof, outputs, traced = {}, {}, {}
    for name in names:
        try:
            proof[name], outputs[name], stages = timing.prove(rt, fns[name], setup, None, optimized=False)
        except tf.errors.OpError as exc:
            raise fused_fails(rt, fns[name], setup, exc, f"{name} fails at this setting",
                              "runs with the remapper off") from None
        proof[name]["tensors"] = executed_tensors(tf, stages["executed"], fed_shapes(args))
        traced[name] = stages["traced"]
    found = checked_outputs.basis(rt, list(traced.values()))
    agrees = {name: checked_outputs.bench_agreement(outputs[name], outputs[names[0]], found) for name in names[1:]}
    if setup.reps == 0:  # a check only: what each ran and how its outputs compare, nothing timed
        rt.reset_grappler()
        rt.log.read()
        return {"variants": names, "samples_ns": None, "reps_done": 0, "proof": proof, "agreement": agrees,
                "reinstantiated_during_timing": 0, "fingerprint": rt.fingerprint}
    schedule = setup.schedule(names)
    rt.set_grappler(switches)

    def call(name):
        rt.call(fns[name], args)

    timing.warm_up(rt, setup, call, schedule)
    samples, done, metadata, started = timing.time_interleaved(rt, setup, call, schedule)
    rt.reset_grappler()
    rt.log.read()
    return {"variants": names, "samples_ns": samples, "reps_requested": setup.reps, "reps_done": done,
            "warmup": setup.warmup, "first_variant": schedule(0)[0], "proof": proof, "agreement": agrees,
            "reinstantiated_during_timing": model_instantiations(metadata.function_graphs, traced[names[0]]),
            "fingerprint": rt.fingerprint, "elapsed_s": round(time.perf_counter() - started, 3)}
