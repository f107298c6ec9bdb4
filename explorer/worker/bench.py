"""The fused-against-unfused benchmark, run inside the worker, with its proof of what each variant ran.

Two ``tf.function``s of the same body and inputs: the remapper on for one and off for the other, set
before every call (Grappler's options are global and read at call time). Timed interleaved with
alternating order after warm-up, graph collection on throughout: a function re-instantiated while
timing would mean a variant ran a graph other than the one captured, and is counted.
"""

from __future__ import annotations

import time

from ..analysis.fusion import is_fused_node
from ..model.graph import BOILERPLATE_OPS, Graph
from ..model.results import Agreement, BenchResult
from ..model.spec import resolve
from .runtime import Runtime, as_list
from .shapes import executed_tensors


def run(rt: Runtime, request: dict) -> BenchResult:
    """Fused (remapper on) against unfused (remapper off), interleaved, same inputs."""
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
    variants = {"fused": True, "unfused": False}
    fns = {name: tf.function(body) for name in variants}
    proof, outputs = {}, {}
    for name, remap in variants.items():
        stages, out, _ = rt.capture(fns[name], args, switches, remapping=remap)
        executed = Graph.from_dict(rt.graph_to_dict(stages["executed"], "executed"))
        proof[name] = {
            "remapping": remap,
            "executed_ops": executed.compute_ops(),
            "fused_nodes": [{"name": n.name, "op": n.op, "fused_ops": list(n.fused_ops)}
                            for n in executed.nodes if is_fused_node(n)],
            "optimized_ops": Graph.from_dict(rt.graph_to_dict(stages["optimized"], "optimized")).compute_ops(),
            "tensors": executed_tensors(tf, stages["executed"]),  # what each op reads and writes (analysis.traffic)
        }
        outputs[name] = [np.asarray(t.numpy(), dtype=np.float64) for t in as_list(out)]
    rt.protocol.send({"id": req_id, "progress": {"fraction": 0.05, "message": "warming up"}})
    order = list(variants)
    for _ in range(warmup):
        for name in order:
            rt.set_grappler(switches, variants[name])
            rt.call(fns[name], args)
    # Nothing queued may spill into the first timed call (on a GPU the warm-up's kernels may
    # still be running); on the CPU this returns at once, and it runs there too so that the
    # CPU tests exercise the call the GPU timings rely on.
    tf.test.experimental.sync_devices()
    samples = {name: [] for name in variants}
    sync = rt.sync
    # Graph collection records a function graph only when a function is (re)instantiated:
    # any entry that appears during the timed loop means a variant did not run the graph
    # captured above.
    ctx.enable_graph_collection()
    started = time.perf_counter()
    done = 0
    try:
        for i in range(reps):
            pair = order if i % 2 == 0 else order[::-1]
            for name in pair:
                rt.set_grappler(switches, variants[name])
                t0 = time.perf_counter_ns()
                rt.call(fns[name], args)
                sync()
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
    reinstantiated = model_instantiations(metadata.function_graphs, stages["traced"])
    fused_out, unfused_out = outputs["fused"], outputs["unfused"]
    agrees = agreement(fused_out, unfused_out, spec.p.get("dtype", "int64"), tf32=rt.tf32_active())
    rt.log.read()  # drop the (long) log of the benchmark's instantiations
    return {
        "spec": spec.to_dict(),
        "reps_requested": reps,
        "reps_done": done,
        "warmup": warmup,
        "order": "interleaved, alternating which variant goes first",
        "samples_ns": samples,
        "proof": proof,
        "reinstantiated_during_timing": reinstantiated,
        "agreement": agrees,
        "fingerprint": rt.fingerprint,
        "elapsed_s": round(time.perf_counter() - started, 3),
    }


def model_instantiations(function_graphs, traced) -> int:
    """How many of the recorded function graphs are the model's own.

    TF runs some eager ops as one-op functions of their own (SyncDevice, which GPU timings call,
    is one): those are not the model being re-instantiated.
    """
    model_ops = {n.op for n in traced.node} - BOILERPLATE_OPS
    return sum(1 for g in function_graphs
               if not model_ops or model_ops & {n.op for n in g.pre_optimization_graph.node})


# Largest difference still counted as agreement, by dtype. Integer outputs (the hash-bucket
# model) must match exactly. TF32 keeps 10 mantissa bits, so float32 on a TF32 GPU gets a
# tolerance between float32's and bfloat16's.
TOLERANCE = {"float64": 1e-9, "float32": 1e-3, "float16": 5e-2, "bfloat16": 1e-1}
TF32_TOLERANCE = 1e-2


def agreement(a: list, b: list, dtype: str, tf32: bool = False) -> Agreement:
    import numpy as np

    max_abs = max_rel = 0.0
    for x, y in zip(a, b):
        diff = np.abs(x - y)
        max_abs = max(max_abs, float(diff.max()) if diff.size else 0.0)
        # Relative to each element, floored at 1e-3 of the output's range so that values
        # near zero do not turn rounding noise into huge ratios.
        floor = max(float(np.abs(y).max()) * 1e-3, 1e-12) if y.size else 1.0
        max_rel = max(max_rel, float((diff / np.maximum(np.abs(y), floor)).max()) if diff.size else 0.0)
    tf32 = tf32 and dtype == "float32"
    tol = TF32_TOLERANCE if tf32 else TOLERANCE.get(dtype, 0.0)
    close = all(np.allclose(x, y, rtol=tol, atol=tol) for x, y in zip(a, b))
    return {"max_abs": max_abs, "max_rel": max_rel, "tolerance": tol, "within_tolerance": bool(close),
            "tf32": tf32}
