"""What every benchmark in the worker shares: the request's options, the model built once, each
Grappler variant's proof from one captured call, the warm-up, and the interleaved timed loop.

``bench`` (fused against unfused) and ``xla_bench`` (unfused, fused and XLA) differ only in their
variants and in how they prove XLA ran; the set-up and the timing are this module's.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from ..analysis.fusion import is_fused_node
from ..model.graph import Graph
from ..model.spec import resolve
from .runtime import Runtime, as_list


@dataclass
class Setup:
    """A benchmark request, resolved, with its model built on the run's device."""

    spec: object
    switches: dict  # Grappler switches other than the remapper, which each variant sets itself
    reps: int
    warmup: int
    budget_s: float
    req_id: object
    body: object
    args: list
    rotate: int = 0  # which variant goes first in this process (a replicated run varies it by process)

    def schedule(self, names):
        """The order of the variants in repetition i: rotated one place each repetition (ABBA for two,
        ABC-BCA-CAB for three), starting ``rotate`` places in, so every variant goes first equally
        often within a process and, over a replicated run's processes, in its first repetition."""
        names = tuple(names)

        def order(i):
            k = (i + self.rotate) % len(names)
            return names[k:] + names[:k]
        return order


def prepare(rt: Runtime, request: dict) -> Setup:
    """Options from the request, Grappler back to TF's defaults, the model's body and seeded inputs."""
    spec = resolve(request["spec"])
    switches = {k: v for k, v in (request.get("grappler") or {}).items() if k != "remapping"}
    rt.clear_dumps()
    rt.reset_grappler()
    body, args = rt.build(spec)
    return Setup(spec, switches, int(request.get("reps", 50)), int(request.get("warmup", 5)),
                 float(request.get("max_seconds", 60.0)), request.get("id"), body, args, int(request.get("rotate", 0)))


def prove(rt: Runtime, fn, setup: Setup, remapping: bool | None, *, optimized: bool = True):
    """One captured call of a Grappler variant: (its proof, its outputs in their own dtypes, which the agreement
    check's tolerance reads, its stages).

    The proof is what the executed graph ran: its compute ops and fused nodes (and, with
    ``optimized``, the compute ops of Grappler's output)."""
    import numpy as np

    stages, out, _ = rt.capture(fn, setup.args, setup.switches, remapping=remapping)
    executed = Graph.from_dict(rt.graph_to_dict(stages["executed"], "executed"))
    proof = {
        "remapping": remapping,
        "executed_ops": executed.compute_ops(),
        "fused_nodes": [{"name": n.name, "op": n.op, "fused_ops": list(n.fused_ops)}
                        for n in executed.nodes if is_fused_node(n)],
    }
    if optimized:
        proof["optimized_ops"] = Graph.from_dict(rt.graph_to_dict(stages["optimized"], "optimized")).compute_ops()
    return proof, [np.asarray(t.numpy()) for t in as_list(out)], stages


def warm_up(rt: Runtime, setup: Setup, call, schedule) -> None:
    """``setup.warmup`` rounds of every variant, each round in the order ``schedule`` gives the timed
    repetition of the same index (so no variant is always the one warmed last), then nothing left
    queued on the device."""
    rt.protocol.send({"id": setup.req_id, "progress": {"fraction": 0.05, "message": "warming up"}})
    for j in range(setup.warmup):
        for name in schedule(j):
            call(name)
    # Nothing queued may spill into the first timed call (on a GPU the warm-up's kernels may
    # still be running); on the CPU this returns at once, and it runs there too so that the
    # CPU tests exercise the call the GPU timings rely on.
    rt.tf.test.experimental.sync_devices()


def time_interleaved(rt: Runtime, setup: Setup, call, schedule, before=None) -> tuple[dict, int, object, float]:
    """Up to ``setup.reps`` repetitions, each timing ``call(name)`` for every variant once in the order
    ``schedule(i)`` gives, within ``setup.budget_s``; ``before(name)``, if given, runs untimed just
    before each call. Graph collection is on throughout.

    Returns (samples in ns per variant, repetitions done, the run metadata, when timing started). Graph
    collection records a function graph only when a function is (re)instantiated: an entry in the
    metadata means a variant did not run the graph captured for its proof."""
    ctx = rt.context
    samples = {name: [] for name in schedule(0)}
    ctx.enable_graph_collection()
    started = time.perf_counter()
    done = 0
    try:
        for i in range(setup.reps):
            for name in schedule(i):
                if before is not None:
                    before(name)
                t0 = time.perf_counter_ns()
                call(name)
                rt.sync()
                samples[name].append(time.perf_counter_ns() - t0)
            done += 1
            if i % max(1, setup.reps // 20) == 0:
                rt.protocol.send({"id": setup.req_id, "progress": {
                    "fraction": 0.05 + 0.95 * done / setup.reps, "message": f"rep {done}/{setup.reps}"}})
            if time.perf_counter() - started > setup.budget_s:
                break
        metadata = ctx.export_run_metadata()
    finally:
        ctx.disable_graph_collection()
    return samples, done, metadata, started
