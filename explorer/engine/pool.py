"""The warm worker processes of one engine: one per configuration, bounded, the least recently used idle one
evicted when the pool is full (``runner.WorkerProcess`` is one of them).

A configuration whose models make inspect's agreement check cost (engine.reference) also gets a second worker,
``role`` REFERENCE, which runs the unfused reference while the first runs the fused graph; it counts against the
same bounds, and ``workers()`` lists the first ones only."""

from __future__ import annotations

import threading
import time
import uuid
from collections import OrderedDict

from ..errors import WorkerError
from ..model.flags import Config
from . import scratch
from .admission import MemoryBudget
from .runner import Limits, WorkerProcess


MAIN, REFERENCE = "main", "reference"
CLOSE_WAIT_S = 30.0  # how long closing waits for a worker still starting (a TensorFlow import: ~3 s, more when loaded)


class Pool:
    """Warm workers keyed by process configuration, bounded and evicting idle ones."""

    def __init__(self, limits: Limits | None = None):
        self.limits = limits or Limits()
        # Every worker of the engine holds its memory cap from this while it lives, the pool's and the fresh
        # ones of a replicated benchmark alike: at most max_workers of them, and no more than the budget holds.
        lim = self.limits
        self.memory = MemoryBudget(max(min(lim.memory_budget, lim.max_workers * lim.memory_bytes), lim.memory_bytes))
        self._workers: OrderedDict[tuple, WorkerProcess] = OrderedDict()
        self._lock = threading.Lock()
        self._starting: dict[tuple, threading.Lock] = {}
        self._closes = 0  # how many times the pool was closed (it may serve again after)
        self.owner = uuid.uuid4().hex  # in each of its workers' environment
        scratch.sweep()  # what an engine killed outright left behind

    def has_warm(self, config: Config, role: str = MAIN) -> bool:
        worker = self._workers.get((config.process_key(), role))
        return worker is not None and worker.alive()

    def has_room(self) -> bool:
        """Whether a worker started ahead of need fits: the pool keeps one place free for a request's own."""
        return len(self.workers(None)) < self.limits.max_workers - 1

    def get(self, config: Config, role: str = MAIN) -> WorkerProcess:
        key = (config.process_key(), role)
        with self._lock:
            start_lock = self._starting.setdefault(key, threading.Lock())
        with start_lock:
            with self._lock:
                worker = self._workers.get(key)
                if worker is not None and worker.alive():
                    self._workers.move_to_end(key)
                    return worker
                if worker is not None:
                    self._workers.pop(key).close()
                self._evict_locked()
            closes = self._closes
            worker = self.start(config, role)
            with self._lock:
                if closes == self._closes:
                    self._workers[key] = worker
                    return worker
            worker.close()  # the pool was closed while it started (a background start): nothing is left running
            raise WorkerError("protocol", "the engine was closed while this worker started")

    def start(self, config: Config, role: str = MAIN) -> WorkerProcess:
        """A new worker of ``config``, outside the pool, once its memory cap fits the budget (an idle pooled
        worker is stopped to make room; the caller closes it)."""
        return WorkerProcess(Config.make(config.device, config.env_dict), self.limits, budget=self.memory,
                             make_room=self.stop_idle, role=role, owner=self.owner)

    def stop_idle(self) -> bool:
        """Stop the least recently used idle worker; False when every worker is busy."""
        with self._lock:
            idle = [k for k, w in self._workers.items() if not w.lock.locked()]
            worker = self._workers.pop(idle[0]) if idle else None
        if worker is None:
            return False
        worker.close()
        return True

    def _evict_locked(self) -> None:
        now = time.monotonic()
        for key, worker in list(self._workers.items()):
            if not worker.lock.locked() and (now - worker.last_used > self.limits.idle_s or not worker.alive()):
                self._workers.pop(key).close()
        while len(self._workers) >= self.limits.max_workers:
            idle = [k for k, w in self._workers.items() if not w.lock.locked()]
            if not idle:
                break
            self._workers.pop(idle[0]).close()

    def discard(self, worker: WorkerProcess) -> None:
        with self._lock:
            for key, w in list(self._workers.items()):
                if w is worker:
                    self._workers.pop(key)
        worker.close()

    def workers(self, role: str | None = MAIN) -> list[WorkerProcess]:
        """The live workers of ``role`` (None: of every role)."""
        with self._lock:
            return [w for (_, r), w in self._workers.items() if role is None or r == role]

    def close(self) -> None:
        """Stop every worker; one still starting (a prestart, a reference beside a request) is waited for, up to
        a start's time limit, and stops itself as it finds the pool closed: at the server's exit a daemon thread
        would otherwise be frozen mid-start, its process and folder left behind."""
        with self._lock:
            self._closes += 1
            workers = list(self._workers.values())
            self._workers.clear()
            starting = list(self._starting.values())
        for worker in workers:
            worker.close()
        deadline = time.monotonic() + min(self.limits.startup_s, CLOSE_WAIT_S)
        for start_lock in starting:
            if start_lock.acquire(timeout=max(0.0, deadline - time.monotonic())):
                start_lock.release()
