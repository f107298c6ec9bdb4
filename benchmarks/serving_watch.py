"""What benchmarks/serving.py watches while its sessions run: samplers of the engine's workers (engine-only)
and of the app server's worker processes (through the browser), and the overlap of timed spans.

A benchmark overlapped if anything else ran on the host's cores while it was timing; these
watchers count that from the outside, as a second account beside each result's own record.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from devkit.browser import start_app
from explorer.model.flags import ENV_FLAGS

FLAG_NAME = "TF_ENABLE_ONEDNN_OPTS"  # the flag the sessions flip: which worker a benchmark ran in
SERVER_START_S = 90.0


class Sampler:
    """A background thread that calls ``sample()`` every ``period_s`` until stopped."""

    def __init__(self, period_s: float):
        self.period_s = period_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def sample(self) -> None:
        raise NotImplementedError

    def _run(self):
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.period_s)

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        self._thread.join(5)


class BusyWatcher(Sampler):
    """Samples which worker processes of an Engine are inside a request (their request lock is held)."""

    def __init__(self, engine, period_s: float = 0.005):
        super().__init__(period_s)
        self.engine = engine
        self.samples: list[tuple[float, frozenset]] = []

    def sample(self) -> None:
        self.samples.append((time.monotonic(),
                             frozenset(w.pid for w in self.engine.pool.workers() if w.lock.locked())))


def spans_overlapping(spans: list) -> set:
    found = set()
    for a in spans:
        for b in spans:
            if a[0] < b[0] and a[1] <= b[2] and b[1] <= a[2]:
                found |= {a[0], b[0]}
    return found


# --- the app server --------------------------------------------------------------------------------

class Server:
    """``streamlit run app.py`` as the browser tests start it (devkit.browser.start_app: a free port of
    127.0.0.1, its own process group, healthy before this returns), with a result cache of its own,
    and the TensorFlow worker processes it starts."""

    def __init__(self, cache_dir: Path, log_dir: Path):
        self.app = start_app("app.py", env={"EXPLORER_CACHE_DIR": str(cache_dir)}, log_dir=log_dir,
                             timeout=SERVER_START_S)
        self.proc, self.url, self.log_path = self.app.proc, self.app.url, self.app.log_path
        self.worker_pids: set[int] = set()
        self.left_behind: list[int] = []
        self.killed: list[int] = []

    def workers(self) -> list:
        """The server's TensorFlow worker processes (devkit's), remembered for the cleanup in stop()."""
        found = self.app.workers()
        self.worker_pids.update(p.pid for p in found)
        return found

    def stop(self) -> None:
        self.workers()
        self.app.stop(timeout=20)  # SIGTERM to its process group, SIGKILL if it is still there after 20 s
        # Workers lead their own sessions: give them a moment to notice their server is gone (their
        # stdin closes), then stop whichever did not.
        import psutil

        workers = []
        for pid in self.worker_pids:
            try:
                proc = psutil.Process(pid)
                if "explorer.worker" in " ".join(proc.cmdline()):
                    workers.append(proc)
            except psutil.Error:
                pass
        _, survivors = psutil.wait_procs(workers, timeout=10)
        for proc in survivors:
            try:
                proc.kill()
            except psutil.Error:
                pass
        _, alive = psutil.wait_procs(survivors, timeout=10)
        self.left_behind = [p.pid for p in alive]
        self.killed = [p.pid for p in survivors]


class CpuWatcher(Sampler):
    """CPU time of each of the server's worker processes, sampled from outside the server."""

    def __init__(self, server: Server, period_s: float = 0.02):
        super().__init__(period_s)
        self.server = server
        self.samples: list[tuple[float, dict]] = []  # (time, {pid: cpu seconds})
        self.flag_value: dict[int, str | None] = {}  # pid -> its TF_ENABLE_ONEDNN_OPTS (None: unset)
        self.configs: dict[int, str] = {}  # pid -> device and flags, for the report
        self.seen: dict[int, list[float]] = {}  # pid -> [first, last] time it was seen

    def sample(self) -> None:
        import psutil

        cpu = {}
        now = time.monotonic()
        for proc in self.server.workers():
            try:
                times = proc.cpu_times()
                cpu[proc.pid] = times.user + times.system
                self.seen.setdefault(proc.pid, [now, now])[1] = now
                if proc.pid not in self.flag_value:
                    environ = proc.environ()
                    self.flag_value[proc.pid] = environ.get(FLAG_NAME)
                    flags = " ".join(f"{k}={v}" for k, v in sorted(environ.items()) if k in ENV_FLAGS)
                    self.configs[proc.pid] = f"{environ.get('EXPLORER_DEVICE', '?')} {flags}".strip()
            except psutil.Error:
                pass
        self.samples.append((now, cpu))

    def beside(self, start: float, end: float, flag_value: str | None) -> tuple[int, float]:
        """Sample intervals within [start, end] in which the benchmark's worker and another worker
        both ran (each >= 10 ms of CPU), and the other workers' CPU seconds in those intervals.

        Requiring both at once makes the check immune to the page receiving progress late: after
        the benchmark ends its worker idles, so the next request's CPU is not counted against it.
        """
        inside = [(t, c) for t, c in self.samples if start <= t <= end]
        if len(inside) < 2:
            return 0, 0.0
        first, last = inside[0][1], inside[-1][1]
        candidates = [pid for pid, value in self.flag_value.items() if value == flag_value and pid in last]
        if not candidates:
            return 0, 0.0
        own = max(candidates, key=lambda pid: last[pid] - first.get(pid, last[pid]))  # the one that was timing
        both, other_cpu = 0, 0.0
        for (_, a), (_, b) in zip(inside, inside[1:]):
            mine = b.get(own, 0.0) - a.get(own, b.get(own, 0.0))
            others = sum(b[pid] - a.get(pid, b[pid]) for pid in b if pid != own)
            if mine >= 0.01 and others >= 0.01:
                both += 1
                other_cpu += others
        return both, other_cpu


# --- browser run -----------------------------------------------------------------------------------
