"""The three-way benchmark: unfused (remapper off), Grappler-fused (remapper on) and XLA (jit_compile=True).

Same body, same seeded inputs, timed interleaved (the order rotates every repetition) after warm-up.
Each variant's proof comes from what ran: the Grappler variants' executed graphs from run metadata
(as in ``bench``), XLA's from a profile of one call (run metadata records nothing for a
jit_compile call in TF 2.21), which names the compiled module that executed. XLA's first call
(trace + tf2xla + compile) is timed apart from the steady state. Outputs are compared pairwise as inspect's
check compares them (``agreement.bench_agreement``: in their own dtypes, by what the graph computes in).
"""

from __future__ import annotations

import time

from . import agreement as checked_outputs, models, timing
from .bench import model_instantiations
from .runtime import Runtime, as_list
from .xla import profile_call, refused

VARIANTS = ("unfused", "fused", "xla")
SAMPLE_VALUES = 8  # first values of each output, returned so the diff can be checked from outside


def run(rt: Runtime, request: dict) -> dict:
    import numpy as np

    tf = rt.tf
    setup = timing.prepare(rt, request)
    spec, args = setup.spec, setup.args
    # The model as served, as the fused-vs-unfused benchmark and the graph views run it (an imported model traced
    # with its declared shapes, the batch left unknown): a trace with the fed shapes fixed lets constant folding
    # specialise it, which changes what fuses.
    fns = {"unfused": models.function(setup.body, tf, served=True), "fused": models.function(setup.body, tf, served=True),
           "xla": models.function(setup.body, tf, served=True, jit_compile=True)}
    remap = {"unfused": False, "fused": True, "xla": None}
    proof, outputs, graphs = {}, {}, []
    for name in ("unfused", "fused"):
        proof[name], outputs[name], stages = timing.prove(rt, fns[name], setup, remap[name], optimized=False)
        graphs += [g for g in stages.values() if g is not None]
    rt.reset_grappler()
    t0 = time.perf_counter()
    try:
        out = rt.call(fns["xla"], args)
        outputs["xla"] = [np.asarray(t.numpy()) for t in as_list(out)]
    except Exception as exc:  # noqa: BLE001 - the op XLA refused, said plainly
        raise refused(exc) from None
    first_call_s = time.perf_counter() - t0
    proof["xla"] = profile_call(rt, fns["xla"], args)

    def call(name):  # every variant sets Grappler's options, so each call carries the same overhead
        rt.set_grappler(setup.switches, remap[name])
        rt.call(fns[name], args)

    schedule = setup.schedule(VARIANTS)  # each variant first in turn
    timing.warm_up(rt, setup, call, schedule)
    samples, done, metadata, started = timing.time_interleaved(rt, setup, call, schedule)
    rt.reset_grappler()
    found = checked_outputs.with_variation(checked_outputs.basis(rt, graphs), outputs["fused"], lambda: checked_outputs.called(
        rt, fns["fused"], args, setup.switches, True))
    pairs = {}
    for a, b in (("fused", "unfused"), ("xla", "unfused"), ("xla", "fused")):
        pairs[f"{a}-{b}"] = dict(checked_outputs.bench_agreement(outputs[a], outputs[b], found),
                                 elements_differing=int(sum(np.count_nonzero(x != y)
                                                            for x, y in zip(outputs[a], outputs[b]))),
                                 elements=int(sum(x.size for x in outputs[a])))
    rt.log.read()
    return {
        "spec": spec.to_dict(),
        "compiler": "both",
        "timed": "as served",  # the model as the page's views show it (an imported model's batch left unknown)
        "reps_requested": setup.reps,
        "reps_done": done,
        "warmup": setup.warmup,
        "order": "interleaved, each variant first in turn",
        "samples_ns": samples,
        "xla_first_call_s": round(first_call_s, 4),
        "proof": proof,
        "reinstantiated_during_timing": model_instantiations(metadata.function_graphs, stages["traced"]),
        "agreement": pairs,
        "output_samples": {name: [float(v) for v in outputs[name][0].ravel()[:SAMPLE_VALUES]] for name in VARIANTS},
        "fingerprint": rt.fingerprint,
        "elapsed_s": round(time.perf_counter() - started, 3),
    }
