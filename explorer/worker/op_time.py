"""Per-op time of a model's run: each node of the executed graph, timed by TensorFlow's profiler.

TF 2.21 records no step stats in the eager context's run metadata for a ``tf.function`` call (it
holds the function graphs only), so the per-node times come from the profiler's trace: the executor
marks every kernel it runs as an event named ``node:op`` on its compute threads. The model is called
``calls`` times under one profiler session (after a warm-up, Grappler at the request's settings), and
each node's time is the median over the calls of its event's duration; the call's own wall time is
the median over the same calls. The analysis (``analysis.op_time``) maps the executed nodes to the
graph after Grappler, the fusions and the near-misses.
"""

from __future__ import annotations

import glob
import os
import shutil
import statistics
import tempfile
import time

from . import models, timing
from .runtime import Runtime, finish

MAX_CALLS = 200


def run(rt: Runtime, request: dict) -> dict:
    setup = timing.prepare(rt, request)
    calls = max(1, min(int(request.get("calls", 10)), MAX_CALLS))
    fn = models.function(setup.body, rt.tf, served=True)
    stages, _, _ = rt.capture(fn, setup.args, setup.switches)
    executed = {n.name: n.op for n in stages["executed"].node}
    rt.set_grappler(setup.switches)
    for _ in range(max(1, setup.warmup)):
        finish(rt.call(fn, setup.args))
    durations, walls = profile(rt, fn, setup.args, calls, setup.budget_s)
    rt.reset_grappler()
    rt.log.read()
    nodes = {}
    for name, values in durations.items():
        if name in executed:  # the model's own nodes (not the eager copies around the call)
            nodes[name] = {"op": executed[name], "ms": statistics.median(values), "n": len(values)}
    return {"spec": setup.spec.to_dict(), "calls": len(walls), "call_ms": statistics.median(walls) if walls else None,
            "nodes": nodes, "executed_nodes": len(executed), "fingerprint": rt.fingerprint,
            "method": f"TensorFlow's profiler over {len(walls)} calls after {max(1, setup.warmup)} warm-up; each "
                      "node's time is the median of its kernel's durations (ms)"}


def profile(rt: Runtime, fn, args, calls: int, budget_s: float) -> tuple[dict[str, list[float]], list[float]]:
    """({node: [ms per occurrence]}, [wall ms per call]) of ``calls`` calls under one profiler session."""
    walls: list[float] = []

    def timed() -> None:
        started = time.perf_counter()
        for _ in range(calls):
            t0 = time.perf_counter()
            finish(rt.call(fn, args))
            walls.append((time.perf_counter() - t0) * 1e3)
            if time.perf_counter() - started > budget_s:
                break

    durations: dict[str, list[float]] = {}
    for plane in profiled(rt.tf, timed, "explorer_op_time_"):
        names = {k: v.name for k, v in plane.event_metadata.items()}
        for line in plane.lines:
            for event in line.events:
                node, sep, op = names.get(event.metadata_id, "").rpartition(":")
                if sep and node and op and " " not in op:
                    durations.setdefault(node, []).append(event.duration_ps / 1e9)
    return durations, walls


def profiled(tf, run, prefix: str) -> list:
    """``run()`` under one session of TensorFlow's profiler: the host's and the devices' planes of its trace
    (XPlane protos, read before the trace's folder is removed)."""
    from tensorflow.tsl.profiler.protobuf import xplane_pb2

    logdir = tempfile.mkdtemp(prefix=prefix)
    try:
        tf.profiler.experimental.start(logdir)
        try:
            run()
        finally:
            tf.profiler.experimental.stop()
        planes = []
        for path in glob.glob(os.path.join(logdir, "**", "*.xplane.pb"), recursive=True):
            space = xplane_pb2.XSpace()
            with open(path, "rb") as handle:
                space.ParseFromString(handle.read())
            planes += [plane for plane in space.planes if plane.name.startswith(("/host:CPU", "/device:"))]
        return planes
    finally:
        shutil.rmtree(logdir, ignore_errors=True)
