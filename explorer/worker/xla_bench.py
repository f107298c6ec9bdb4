"""The three-way benchmark: unfused (remapper off), Grappler-fused (remapper on) and XLA (jit_compile=True).

Same body, same seeded inputs, timed interleaved (the order rotates every repetition) after warm-up.
Each variant's proof comes from what ran: the Grappler variants' executed graphs from run metadata
(as in ``bench``), XLA's from a profile of one call (run metadata records nothing for a
jit_compile call in TF 2.21), which names the compiled module that executed. XLA's first call
(trace + tf2xla + compile) is timed apart from the steady state. Outputs are compared pairwise as
float64 arrays.
"""

from __future__ import annotations

import time

from ..analysis.fusion import is_fused_node
from ..model.graph import Graph
from ..model.spec import resolve
from .bench import agreement, model_instantiations
from .runtime import Runtime, as_list
from .xla import profile_call, refused

VARIANTS = ("unfused", "fused", "xla")
SAMPLE_VALUES = 8  # first values of each output, returned so the diff can be checked from outside


def run(rt: Runtime, request: dict) -> dict:
    import numpy as np

    tf, ctx = rt.tf, rt.context
    spec = resolve(request["spec"])
    switches = {k: v for k, v in (request.get("grappler") or {}).items() if k != "remapping"}
    reps = int(request.get("reps", 50))
    warmup = int(request.get("warmup", 5))
    budget_s = float(request.get("max_seconds", 60.0))
    req_id = request.get("id")
    rt.clear_dumps()
    rt.reset_grappler()
    body, args = rt.build(spec)
    fns = {"unfused": tf.function(body), "fused": tf.function(body), "xla": tf.function(body, jit_compile=True)}
    remap = {"unfused": False, "fused": True, "xla": None}
    proof, outputs = {}, {}
    for name in ("unfused", "fused"):
        stages, out, _ = rt.capture(fns[name], args, switches, remapping=remap[name])
        executed = Graph.from_dict(rt.graph_to_dict(stages["executed"], "executed"))
        proof[name] = {
            "remapping": remap[name],
            "executed_ops": executed.compute_ops(),
            "fused_nodes": [{"name": n.name, "op": n.op, "fused_ops": list(n.fused_ops)}
                            for n in executed.nodes if is_fused_node(n)],
        }
        outputs[name] = [np.asarray(t.numpy(), dtype=np.float64) for t in as_list(out)]
    rt.reset_grappler()
    t0 = time.perf_counter()
    try:
        out = rt.call(fns["xla"], args)
        outputs["xla"] = [np.asarray(t.numpy(), dtype=np.float64) for t in as_list(out)]
    except Exception as exc:  # noqa: BLE001 - the op XLA refused, said plainly
        raise refused(exc) from None
    first_call_s = time.perf_counter() - t0
    proof["xla"] = profile_call(rt, fns["xla"], args)
    rt.protocol.send({"id": req_id, "progress": {"fraction": 0.05, "message": "warming up"}})

    def call(name):  # every variant sets Grappler's options, so each call carries the same overhead
        rt.set_grappler(switches, remap[name])
        rt.call(fns[name], args)

    for _ in range(warmup):
        for name in VARIANTS:
            call(name)
    tf.test.experimental.sync_devices()
    samples = {name: [] for name in VARIANTS}
    ctx.enable_graph_collection()
    started = time.perf_counter()
    done = 0
    try:
        for i in range(reps):
            k = i % len(VARIANTS)
            for name in VARIANTS[k:] + VARIANTS[:k]:  # each variant goes first in turn
                t0 = time.perf_counter_ns()
                call(name)
                rt.sync()
                samples[name].append(time.perf_counter_ns() - t0)
            done += 1
            if i % max(1, reps // 20) == 0:
                rt.protocol.send({"id": req_id, "progress": {
                    "fraction": 0.05 + 0.95 * done / reps, "message": f"rep {done}/{reps}"}})
            if time.perf_counter() - started > budget_s:
                break
        metadata = ctx.export_run_metadata()
    finally:
        ctx.disable_graph_collection()
    rt.reset_grappler()
    dtype = spec.p.get("dtype", "int64")
    pairs = {}
    for a, b in (("fused", "unfused"), ("xla", "unfused"), ("xla", "fused")):
        pairs[f"{a}-{b}"] = dict(agreement(outputs[a], outputs[b], dtype, tf32=rt.tf32_active()),
                                 elements_differing=int(sum(np.count_nonzero(x != y)
                                                            for x, y in zip(outputs[a], outputs[b]))),
                                 elements=int(sum(x.size for x in outputs[a])))
    rt.log.read()
    return {
        "spec": spec.to_dict(),
        "compiler": "both",
        "reps_requested": reps,
        "reps_done": done,
        "warmup": warmup,
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
