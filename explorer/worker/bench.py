"""The fused-against-unfused benchmark, run inside the worker, with its proof of what each variant ran.

Two ``tf.function``s of the same body and inputs: the remapper on for one and off for the other, set
before every call (Grappler's options are global and read at call time). Timed interleaved with
alternating order after warm-up, graph collection on throughout: a function re-instantiated while
timing would mean a variant ran a graph other than the one captured, and is counted.
"""

from __future__ import annotations

import time

from ..model.graph import BOILERPLATE_OPS
from ..model.results import BenchResult
from . import agreement as checked_outputs
from . import models, timing
from .protocol import Refused, error_line
from .runtime import Runtime
from .shapes import executed_tensors, fed_shapes


def run(rt: Runtime, request: dict) -> BenchResult:
    """Fused (remapper on) against unfused (remapper off), interleaved, same inputs."""
    tf = rt.tf
    setup = timing.prepare(rt, request)
    variants = {"fused": True, "unfused": False}
    fns = {name: models.function(setup.body, tf, served=True) for name in variants}
    proof, outputs, graphs = {}, {}, []
    for name, remap in variants.items():
        try:
            proof[name], outputs[name], stages = timing.prove(rt, fns[name], setup, remap)
        except tf.errors.OpError as exc:
            if name == "fused":
                raise fused_fails(rt, fns["unfused"], setup, exc, "the fused variant fails",
                                  "the unfused one (remapper off) runs") from None
            raise
        graphs += [g for g in stages.values() if g is not None]  # the tolerance reads their ops and dtypes
        # what each op reads and writes (analysis.traffic), with the shapes of the values fed
        proof[name]["tensors"] = executed_tensors(tf, stages["executed"], fed_shapes(setup.args))
    schedule = setup.schedule(variants)

    def set_options(name):
        rt.set_grappler(setup.switches, variants[name])

    def call(name):
        rt.call(fns[name], setup.args)

    def both(name):
        set_options(name)
        call(name)

    timing.warm_up(rt, setup, both, schedule)
    samples, done, metadata, started = timing.time_interleaved(rt, setup, call, schedule, before=set_options)
    rt.reset_grappler()
    reinstantiated = model_instantiations(metadata.function_graphs, stages["traced"])
    fused_out, unfused_out = outputs["fused"], outputs["unfused"]
    declared = checked_outputs.declared_shapes(rt, stages, setup.args)  # what both variants must return
    found = checked_outputs.with_variation(dict(checked_outputs.basis(rt, graphs), declared=declared), fused_out,
                                           lambda: checked_outputs.called(rt, fns["fused"], setup.args, setup.switches, True))
    agrees = checked_outputs.bench_agreement(fused_out, unfused_out, found)
    rt.log.read()  # drop the (long) log of the benchmark's instantiations
    return {
        "spec": setup.spec.to_dict(),
        "reps_requested": setup.reps,
        "reps_done": done,
        "warmup": setup.warmup,
        "order": "interleaved, alternating which variant goes first",
        "first_variant": schedule(0)[0],
        "samples_ns": samples,
        "proof": proof,
        "reinstantiated_during_timing": reinstantiated,
        "agreement": agrees,
        "fingerprint": rt.fingerprint,
        "elapsed_s": round(time.perf_counter() - started, 3),
    }


def fused_fails(rt: Runtime, fn, setup, exc, failed: str, runs: str) -> Exception:
    """The error for a model that fails as fused: when ``fn`` runs with the remapper off, it is the fusion that
    breaks it, and nothing can be timed; otherwise (or when the remapper was off already) TensorFlow's own error.
    ``failed`` and ``runs`` say what failed and what ran, in words."""
    rt.flush_run_metadata()  # the failed call's graphs must not be taken for the next call's
    if setup.switches.get("remapping") == "off":
        return exc
    _, unfused_error = checked_outputs.called(rt, fn, setup.args, setup.switches, remapping=False)
    if unfused_error is not None:
        return exc  # the model fails with the remapper off too: TensorFlow's error, as before
    said = error_line(getattr(exc, "message", None) or str(exc)) or type(exc).__name__
    return Refused(f"THE FUSION BREAKS THIS MODEL: {failed} ({type(exc).__name__}: {said[:300]}) and {runs}, so "
                   "there is nothing to time. The graphs (inspect) show the failing node; the diagnosis (diagnose) pins "
                   "it and verifies ways around it.", str(exc)[-4000:])


def model_instantiations(function_graphs, traced) -> int:
    """How many of the recorded function graphs are the model's own.

    TF runs some eager ops as one-op functions of their own (SyncDevice, which GPU timings call,
    is one): those are not the model being re-instantiated.
    """
    model_ops = {n.op for n in traced.node} - BOILERPLATE_OPS
    return sum(1 for g in function_graphs
               if not model_ops or model_ops & {n.op for n in g.pre_optimization_graph.node})
