"""Several sessions against one shared Engine, as the page's sessions share it; and the disk cache across a restart.

The load test checks what a class sees: every request is served, waiting sessions are told their
place in the queue, and no benchmark ran beside anything else on its device. The last is checked
three ways: the queue's own counter, the isolation record each benchmark returns, and an
independent watcher that samples which worker processes are busy while each benchmark is timing.
"""

from __future__ import annotations

import threading
import time

import pytest

from explorer.engine import Engine
from explorer.model.flags import Config
from explorer.model.spec import resolve

pytestmark = pytest.mark.tf

SESSIONS = 6
CONFIGS = [Config(), Config.make("cpu", {"TF_ENABLE_ONEDNN_OPTS": "0"})]  # two configurations: two workers
TINY = {
    "matmul_bias_relu": {"m": 8, "k": 8, "n": 8},
    "matmul_bias_gelu_approx": {"m": 8, "k": 8, "n": 8},
    "matmul_bias_gelu_exact": {"m": 8, "k": 8, "n": 8},
    "conv2d_bias_relu": {"batch": 1, "height": 6, "width": 6, "in_channels": 2, "out_channels": 4, "filter_size": 3},
    "conv2d_batchnorm_relu": {"batch": 1, "height": 6, "width": 6, "in_channels": 2, "out_channels": 4,
                              "filter_size": 1},
    "conv2d_squeeze_bias": {"batch": 1, "height": 8, "width": 1, "in_channels": 2, "out_channels": 4,
                            "filter_size": 1},
    "batchnorm_add_relu": {"batch": 1, "height": 4, "width": 4, "channels": 4},
}
PRESET_IDS = sorted(TINY)
SWITCHES = [{}, {"remapping": "off"}, {"constant_folding": "off"}]
BENCHING = {1, 2, 3, 5}  # sessions that run a second, small benchmark after their graphs (0 runs one first)
CALL_TIMEOUT_S = 240.0  # a whole session's work, generously, on a loaded 2-core machine


def tiny(preset: str, session: int) -> dict:
    params = dict(TINY[preset])
    first = next(iter(params))
    params[first] += session  # each session its own sizes: no session is answered from another's cache
    return {"preset": preset, "params": params}


class Watcher:
    """Samples, every few milliseconds, which worker processes are in the middle of a request.

    A worker holds its request lock from sending a request until its answer arrives, whatever the
    engine's queue believes; so a sample that shows a second worker busy while a benchmark is timing
    is an overlap seen from outside the queue.
    """

    def __init__(self, engine: Engine, period_s: float = 0.003):
        self.engine, self.period_s = engine, period_s
        self.samples: list[tuple[float, frozenset[int]]] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._stop.is_set():
            busy = frozenset(w.pid for w in self.engine.pool.workers() if w.lock.locked())
            self.samples.append((time.monotonic(), busy))
            self._stop.wait(self.period_s)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join(5)


class Session(threading.Thread):
    def __init__(self, index: int, engine: Engine, go: threading.Event, first_bench_timing: threading.Event):
        super().__init__(daemon=True, name=f"session-{index}")
        self.index, self.engine, self.go, self.first_bench_timing = index, engine, go, first_bench_timing
        self.config = CONFIGS[index % len(CONFIGS)]
        self.inspects: list[dict] = []
        self.benches: list[dict] = []  # {"result", "timing": (first worker progress, last worker progress)}
        self.queue_positions: list[int] = []
        self.errors: list[BaseException] = []

    def progress(self, log: list):
        def on_progress(message: dict) -> None:
            if "queue_position" in message:
                self.queue_positions.append(message["queue_position"])
            log.append((time.monotonic(), message))
        return on_progress

    def bench(self, preset: str, reps: int = 5, on_timing=None) -> None:
        log: list = []
        report = self.progress(log)

        def on_progress(message: dict) -> None:
            report(message)
            if on_timing is not None and message.get("message") == "warming up":
                on_timing.set()

        result = self.engine.bench(tiny(preset, self.index), self.config, reps=reps, warmup=1, max_seconds=1.0,
                                   on_progress=on_progress)
        # The worker's own messages ("warming up", "rep i/n") arrive while the benchmark holds its
        # slot and its worker: the span from the first to the last lies inside the timed work.
        from_worker = [t for t, m in log if m.get("message") == "warming up" or str(m.get("message")).startswith("rep ")]
        assert len(from_worker) >= 2, f"no progress from the worker: {log}"
        self.benches.append({"result": result, "timing": (from_worker[0], from_worker[-1])})

    def inspect(self, preset: str, switches: dict) -> None:
        config = Config.make(self.config.device, self.config.env_dict, switches)
        self.inspects.append(self.engine.inspect(tiny(preset, self.index), config, on_progress=self.progress([])))

    def run(self) -> None:
        try:
            self.go.wait(CALL_TIMEOUT_S)
            if self.index == 0:
                # Session 0 starts with a benchmark whose timed loop runs for its whole second; the
                # others begin only once it is timing, so each of them has to queue behind it.
                self.bench("matmul_bias_relu", reps=2000, on_timing=self.first_bench_timing)
            else:
                assert self.first_bench_timing.wait(CALL_TIMEOUT_S), "session 0's benchmark never started"
            for j in range(3):
                preset = PRESET_IDS[(self.index + 2 * j) % len(PRESET_IDS)]
                self.inspect(preset, SWITCHES[(self.index + j) % len(SWITCHES)])
            if self.index in BENCHING:
                self.bench(PRESET_IDS[self.index % len(PRESET_IDS)])
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.errors.append(exc)


def seen_beside(watcher: Watcher, benches: list[dict]) -> list:
    """(benchmark worker, other busy workers) for each sample taken inside a benchmark's timed span."""
    found = []
    for b in benches:
        start, end = b["timing"]
        pid = b["result"]["worker"]["pid"]
        found += [(pid, sorted(busy - {pid})) for t, busy in watcher.samples if start <= t <= end and busy - {pid}]
    return found


def test_six_sessions_share_one_engine_and_no_benchmark_overlaps():
    engine = Engine(cache_dir=None)
    go, first_bench_timing = threading.Event(), threading.Event()
    sessions = [Session(i, engine, go, first_bench_timing) for i in range(SESSIONS)]
    try:
        with Watcher(engine) as watcher:
            for s in sessions:
                s.start()
            go.set()
            for s in sessions:
                s.join(CALL_TIMEOUT_S)
        stuck = [s.name for s in sessions if s.is_alive()]
        assert not stuck, f"sessions still running after {CALL_TIMEOUT_S:.0f} s: {stuck}"
        errors = [(s.name, repr(e)) for s in sessions for e in s.errors]
        assert not errors, errors

        # Everything was served.
        inspects = [r for s in sessions for r in s.inspects]
        benches = [b for s in sessions for b in s.benches]
        assert len(inspects) == 3 * SESSIONS
        assert all(r["stages"] and not r["cached"] for r in inspects)
        assert len(benches) == 1 + len(BENCHING)
        for b in benches:
            assert b["result"]["summary"]["fused"]["median_ms"] > 0
            assert b["result"]["agreement"]["within_tolerance"]
        used = {r["worker"]["pid"] for r in inspects}
        assert len(used) == len(CONFIGS), "one warm worker per configuration serves every session"

        # Waiting sessions were told their place.
        waited = [s for s in sessions[1:] if s.queue_positions]
        assert waited, "no session was told its place in the queue while session 0's benchmark ran"
        assert all(p >= 1 for s in sessions for p in s.queue_positions)

        # No benchmark ran beside anything: the queue's counter, each result's own record ...
        queue = engine.queue("cpu")
        assert queue.overlaps == 0
        assert queue.benches_run == len(benches)
        for b in benches:
            assert b["result"]["isolation"]["others_running_at_start"] == 0, b["result"]["isolation"]
            assert b["result"]["isolation"]["overlaps_seen"] == 0
        # ... two benchmarks' timed spans never intersect ...
        spans = sorted(b["timing"] for b in benches)
        for (_, end), (start, _) in zip(spans, spans[1:]):
            assert end < start, f"benchmark timing spans overlap: {spans}"
        # ... and the watcher never saw another worker busy while a benchmark was timing.
        start, end = sessions[0].benches[0]["timing"]
        assert sum(1 for t, _ in watcher.samples if start <= t <= end) > 50, "the watcher slept through the long benchmark"
        assert seen_beside(watcher, benches) == []

        # The watcher is not blind: a request sent to the other worker past the queue, while a
        # benchmark is timing, is seen.
        with Watcher(engine) as control:
            timing = threading.Event()
            bypass = Session(SESSIONS, engine, go, timing)
            bencher = threading.Thread(target=bypass.bench, args=("matmul_bias_relu", 2000, timing), daemon=True)
            bencher.start()
            assert timing.wait(CALL_TIMEOUT_S)
            other = engine.pool.get(CONFIGS[1])
            spec = resolve(tiny("matmul_bias_relu", SESSIONS + 1))
            other.request("inspect", {"spec": spec.to_dict(), "grappler": {}}, 120)
            bencher.join(CALL_TIMEOUT_S)
        assert bypass.benches and seen_beside(control, bypass.benches), "the watcher missed a deliberate overlap"
    finally:
        go.set()
        first_bench_timing.set()
        engine.close()


def test_disk_cache_answers_a_restarted_engine_without_a_worker(tmp_path):
    spec = {"preset": "matmul_bias_gelu_approx", "params": {"m": 16, "k": 8, "n": 8}}
    config = {"device": "cpu", "env": {}, "grappler": {"constant_folding": "on"}}
    first = Engine(cache_dir=tmp_path)
    try:
        computed = first.inspect(spec, config)
        assert computed["cached"] is False and computed["worker"]["new_process"]
    finally:
        first.close()
    assert list(tmp_path.glob("*.json")), "the result was written to the cache directory"

    restarted = Engine(cache_dir=tmp_path)
    try:
        # Every way to a worker goes through the pool's get: record each call (and still make it).
        asked_for_a_worker = []
        pool_get = restarted.pool.get
        restarted.pool.get = lambda config: asked_for_a_worker.append(config) or pool_get(config)
        answer = restarted.inspect(spec, config)
        assert answer["cached"] is True
        assert asked_for_a_worker == [], "a cached answer must not ask for a worker"
        assert restarted.pool.workers() == [], "a cached answer must not start a worker"
        assert answer["key"] == computed["key"]
        assert answer["stages"] == computed["stages"] and answer["fusions"] == computed["fusions"]
        # A configuration the first engine never ran is not answered from the cache.
        assert not restarted.is_warm(Config())
    finally:
        restarted.close()


def test_a_worker_prestarted_during_a_benchmark_waits_for_it():
    engine = Engine(cache_dir=None)
    try:
        engine.inspect(tiny("matmul_bias_relu", 0), CONFIGS[0])  # the benchmark's worker, warm
        timing, done = threading.Event(), threading.Event()
        session = Session(0, engine, timing, timing)
        bench = threading.Thread(target=lambda: (session.bench("matmul_bias_relu", 2000, timing), done.set()),
                                 daemon=True)
        bench.start()
        assert timing.wait(CALL_TIMEOUT_S)
        engine.prestart(CONFIGS[1])  # e.g. another session's page warming up the oneDNN what-if
        bench.join(CALL_TIMEOUT_S)
        assert done.is_set()
        start, end = session.benches[0]["timing"]
        bench_pid = session.benches[0]["result"]["worker"]["pid"]
        deadline = time.monotonic() + CALL_TIMEOUT_S
        while not engine.is_warm(CONFIGS[1]) and time.monotonic() < deadline:
            time.sleep(0.05)  # the prestarted worker comes up once the benchmark has left the queue
        others = [w for w in engine.pool.workers() if w.pid != bench_pid]
        assert others, "the prestarted worker never started"
        # Spawn times are the engine's own monotonic clock, the same clock as the timed span
        # (psutil's create_time is only as fine as the kernel's boot time in whole seconds).
        beside = [w.pid for w in others if w.started_at < end]
        assert not beside, f"worker process(es) {beside} started while a benchmark was timing"
    finally:
        engine.close()


def test_sessions_asking_for_the_same_new_configuration_share_one_computation():
    engine = Engine(cache_dir=None)
    try:
        spec = tiny("matmul_bias_relu", 7)
        engine.inspect(tiny("matmul_bias_relu", 8), CONFIGS[0])  # a warm worker, another spec
        worker = engine.pool.workers()[0]
        before = worker.requests
        results, errors = [], []
        go = threading.Barrier(6)

        def session():
            go.wait()
            try:
                results.append(engine.inspect(spec, CONFIGS[0]))
            except Exception as exc:  # noqa: BLE001 - collected and asserted below
                errors.append(exc)

        threads = [threading.Thread(target=session) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(CALL_TIMEOUT_S)
        assert not errors and len(results) == 6
        assert worker.requests - before == 1, "the same configuration was computed more than once"
        assert sum(not r["cached"] for r in results) == 1
        assert {r["key"] for r in results} == {results[0]["key"]}
    finally:
        engine.close()


class Gone(Exception):
    """What a page rerun raises inside a progress callback."""


def test_a_benchmark_whose_session_went_away_is_stopped_and_frees_the_device():
    engine = Engine(cache_dir=None)
    try:
        engine.inspect(tiny("matmul_bias_relu", 0), CONFIGS[0])
        [worker] = engine.pool.workers()
        first = worker.pid
        reps_seen = []

        def leave(message):
            if str(message.get("message", "")).startswith("rep"):
                reps_seen.append(message["message"])
                raise Gone()

        with pytest.raises(Gone):
            engine.bench(tiny("matmul_bias_relu", 0), CONFIGS[0], reps=2000, warmup=1, max_seconds=60,
                         on_progress=leave)
        # Stopped at the first report of a timed rep: the worker was killed there and then, not
        # left to finish its 2000 reps (had it run on, it would still be alive and answering).
        assert len(reps_seen) == 1, reps_seen
        assert not worker.alive(), "the abandoned benchmark's worker was left running"
        # The device is free and a new worker serves the next benchmark at once.
        result = engine.bench(tiny("matmul_bias_relu", 0), CONFIGS[0], reps=3, warmup=0, max_seconds=5)
        assert result["worker"]["pid"] != first and result["isolation"]["others_running_at_start"] == 0
    finally:
        engine.close()
