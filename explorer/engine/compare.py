"""A against B: one model and configuration timed against another, each as it is served, replicated.

"How much faster is oneDNN on than off for my model?" is not fused against unfused: it is the model as served
under configuration A against the same (or another) model as served under B. Flags such as
TF_ENABLE_ONEDNN_OPTS are read once per process, so the two sides never share one: each of ``processes``
rounds starts a fresh worker for A and one for B (which goes first alternates by round), each times its model
alone (the worker's ``bench_models``, Grappler at that side's switches, after warm-up), and keeps the executed
graph as the proof of what it ran. The speedup of B over A is median(A) / median(B) per round; over rounds,
their geometric mean with a Student-t interval (``analysis.replicated``), which holds the variation from one
process to the next. One round is a quick figure, labelled as such.
"""

from __future__ import annotations

import os
import time

from ..analysis import stats
from ..analysis.replicated import QUICK_MODE, quick, replicated_speedup
from ..model.devices import refuse_simulated
from ..model.flags import Config
from ..model.spec import resolve
from ..errors import SpecError

SIDES = ("A", "B")


def run(engine, a_spec, a_config, b_spec, b_config, *, processes: int = 3, reps: int = 30, warmup: int = 3,
        max_seconds: float = 30.0, on_progress=None) -> dict:
    sides = {"A": (resolve(a_spec), Config.coerce(a_config)), "B": (resolve(b_spec), Config.coerce(b_config))}
    processes = engine.check_bench_options(reps, warmup, max_seconds, processes)
    for _, config in sides.values():
        refuse_simulated(config.device, "timings of A against B")
    if _identity(*sides["A"]) == _identity(*sides["B"]):
        raise SpecError("B", "A and B are the same model and configuration: change one thing for B")
    if sides["A"][1].device != sides["B"][1].device:
        raise SpecError("B", "A and B run on other devices; compare them on one (their timings share no queue)")
    timeout = float(max_seconds) + engine.pool.limits.bench_extra_s + 60
    samples: dict[str, list] = {"A": [], "B": []}
    proof: dict[str, list] = {"A": [], "B": []}
    load_before = os.getloadavg()[0]
    started = time.strftime("%Y-%m-%d %H:%M:%S")
    with engine.queue(sides["A"][1].device).slot("bench", on_progress):
        for i in range(processes):
            for j, side in enumerate(SIDES if i % 2 == 0 else SIDES[::-1]):
                if on_progress:
                    on_progress({"fraction": (2 * i + j) / (2 * processes),
                                 "message": f"round {i + 1}/{processes}: {side} in a fresh worker process"})
                spec, config = sides[side]
                request = {"grappler": config.grappler_dict, "reps": int(reps), "warmup": int(warmup),
                           "max_seconds": float(max_seconds), "variants": [{"name": side, "spec": spec.to_dict()}]}
                result, info = engine.request(config, "bench_models", request, slot=None, timeout=timeout, fresh=True)
                samples[side].append(list(result["samples_ns"][side]))
                ran = result["proof"][side]
                proof[side].append({"executed_ops": ran.get("executed_ops"), "pid": info.get("pid"),
                                    "fused_nodes": len(ran.get("fused_nodes") or [])})
    # "fused" is B and "unfused" A: the speedup median(A) / median(B), how many times faster B is
    sp = replicated_speedup({"fused": samples["B"], "unfused": samples["A"]})
    if sp["mode"] == QUICK_MODE:
        sp = quick(sp)
    sp = dict(sp, verdict=_verdict(sp))
    return {
        "a": _side(*sides["A"]), "b": _side(*sides["B"]), "speedup": sp, "processes": processes,
        "summary": {side: stats.summarize([ns for one in samples[side] for ns in one]) for side in SIDES},
        "per_process": [{"a_median_ms": stats.summarize(a)["median_ms"], "b_median_ms": stats.summarize(b)["median_ms"]}
                        for a, b in zip(samples["A"], samples["B"])],
        "samples_ns": samples, "proof": proof, "reps": int(reps), "warmup": int(warmup),
        "same_graphs": len({tuple(p["executed_ops"] or ()) for p in proof["A"]}) <= 1
        and len({tuple(p["executed_ops"] or ()) for p in proof["B"]}) <= 1,
        "measured_at": started, "load": {"before": round(load_before, 2), "after": round(os.getloadavg()[0], 2)},
    }


def _identity(spec, config: Config) -> tuple:
    return (repr(spec.to_dict()), repr(config.to_dict()))


def _side(spec, config: Config) -> dict:
    return {"spec": spec.to_dict(), "config": config.to_dict(), "label": spec.label()}


def _verdict(sp: dict) -> str:
    """The words of B against A, only as far as the interval goes (and said of one process for a quick run)."""
    code = sp.get("verdict_code", "unknown")
    where = " in this one process (quick run)" if sp.get("mode") == QUICK_MODE else ""
    return {"faster": f"B is faster than A{where}", "slower": f"B is slower than A{where}",
            "same": f"no measurable difference between A and B{where}",
            "unknown": stats.VERDICTS["unknown"]}[code]
