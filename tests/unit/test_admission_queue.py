"""The per-device queue on its own: real threads, no TensorFlow.

A waiting session's progress callback is the page's code: it may be slow, and in a Streamlit
session that reruns or closes it raises (the script thread is stopped at its next page update).
Neither may stall or block the queue for the other sessions.
"""

from __future__ import annotations

import threading

import pytest

from explorer.engine.admission import HOST, AdmissionQueue
from explorer.engine import Engine

WAIT_S = 10.0  # bound on every wait below; passing runs take milliseconds


class Rerun(Exception):
    """Stands in for Streamlit's RerunException / StopException raised inside a page update."""


def hold(queue: AdmissionQueue, kind: str):
    """A thread that takes a slot, reports it holds it, and keeps it until released."""
    holding, release = threading.Event(), threading.Event()

    def run():
        with queue.slot(kind):
            holding.set()
            release.wait(WAIT_S)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    assert holding.wait(WAIT_S)
    return thread, release


def admitted_within(queue: AdmissionQueue, kind: str, timeout: float = WAIT_S) -> bool:
    done = threading.Event()

    def run():
        with queue.slot(kind):
            done.set()

    threading.Thread(target=run, daemon=True).start()
    return done.wait(timeout)


@pytest.mark.parametrize("waiting_kind,blocker_kind", [("graph", "bench"), ("bench", "graph"), ("bench", "bench")])
def test_a_waiting_session_that_raises_leaves_the_line(waiting_kind, blocker_kind):
    queue = AdmissionQueue()
    blocker, release = hold(queue, blocker_kind)
    calls = []

    def on_wait(message):
        calls.append(message)
        raise Rerun()

    with pytest.raises(Rerun):
        with queue.slot(waiting_kind, on_wait):
            pytest.fail("admitted while the blocker ran")
    assert calls and calls[0]["queue_position"] == 1
    release.set()
    blocker.join(WAIT_S)
    assert admitted_within(queue, "bench"), "a later benchmark is blocked by the session that left"
    assert admitted_within(queue, "graph"), "a later graph request is blocked by the session that left"
    assert queue.overlaps == 0


def test_the_callback_runs_outside_the_queue_lock():
    """A session releasing its slot is not held up by another session's (slow) callback."""
    queue = AdmissionQueue()
    blocker, release = hold(queue, "bench")
    released_in_time = []

    def on_wait(message):
        if not released_in_time:
            release.set()
            blocker.join(WAIT_S / 2)  # the blocker's release needs the queue's lock
            released_in_time.append(not blocker.is_alive())

    with queue.slot("graph", on_wait) as slot:
        assert slot["others_running_at_start"] == 0
    assert released_in_time == [True]


def test_order_benchmarks_alone_graphs_together():
    queue = AdmissionQueue()
    log, log_lock = [], threading.Lock()

    inside = {}

    def session(name, kind, release: threading.Event, waiting: threading.Event | None = None, positions=None):
        inside[name] = threading.Event()

        def on_wait(message):
            if positions is not None:
                positions.append(message["queue_position"])
            if waiting is not None:
                waiting.set()

        def run():
            with queue.slot(kind, on_wait) as slot:
                with log_lock:
                    log.append(("in", name, slot["others_running_at_start"]))
                inside[name].set()
                release.wait(WAIT_S)
                with log_lock:
                    log.append(("out", name))

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        return thread

    def entered(name):
        with log_lock:
            return any(e[:2] == ("in", name) for e in log)

    go_a, go_b, go_bench, go_late = (threading.Event() for _ in range(4))
    a = session("a", "graph", go_a)
    assert inside["a"].wait(WAIT_S)
    b = session("b", "graph", go_b)
    assert inside["b"].wait(WAIT_S), "graph requests share the device"
    bench_waiting, late_waiting = threading.Event(), threading.Event()
    bench_positions, late_positions = [], []
    bench = session("bench", "bench", go_bench, bench_waiting, bench_positions)
    assert bench_waiting.wait(WAIT_S), "the benchmark was not told it waits"
    late = session("late", "graph", go_late, late_waiting, late_positions)
    assert late_waiting.wait(WAIT_S), "a graph request arriving behind a waiting benchmark must wait for it"
    assert entered("a") and entered("b") and not entered("bench") and not entered("late")
    go_a.set()
    a.join(WAIT_S)
    go_b.set()
    b.join(WAIT_S)
    go_bench.set()
    bench.join(WAIT_S)
    go_late.set()
    late.join(WAIT_S)
    names = [(e[0], e[1]) for e in log]
    assert names == [("in", "a"), ("in", "b"), ("out", "a"), ("out", "b"), ("in", "bench"), ("out", "bench"),
                     ("in", "late"), ("out", "late")], log
    assert [e[2] for e in log if e[:2] == ("in", "bench")] == [0]
    assert bench_positions[0] == 1 and late_positions[0] == 2
    assert queue.overlaps == 0 and queue.benches_run == 1


def test_every_device_takes_turns_in_the_hosts_queue():
    # A GPU's timing loop and every Grappler run use the host's cores: a GPU benchmark must not run
    # beside a CPU one, nor a GPU graph request beside a CPU timing.
    engine = Engine(cache_dir=None)
    try:
        queues = {id(engine.queue(device)) for device in ("cpu", "gpu", "gpu-sim:ampere")}
        assert len(queues) == 1 and set(engine.queues) == {HOST}
    finally:
        engine.close()
