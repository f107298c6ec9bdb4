"""Admission of requests to the host's cores and memory: graph requests share the cores, a benchmark
runs alone, and worker processes start only while their memory caps fit the machine's budget.

Two timings sharing two cores measure each other, and a GPU's timing loop runs on the host's cores
too, so there is one queue for every device, served in arrival order. Memory is counted per worker
process (each may grow to its cap before the parent stops it): a worker that would take the sum of
caps past the budget starts only once an idle one has been stopped or a busy one has finished.
"""

from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager

from ..errors import WorkerError

BUDGET_SHARE = 0.75  # of the machine's memory, for all workers together: the page server and the OS keep the rest


def machine_memory() -> int:
    """Bytes of memory this process may use: the machine's, or its control group's limit when lower."""
    total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    for path in ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"):
        try:
            with open(path) as handle:
                total = min(total, int(handle.read().strip()))
        except (OSError, ValueError):  # absent, or "max"
            continue
    return total


MEMORY_BUDGET = int(machine_memory() * BUDGET_SHARE)

HOST = "host"  # the one queue's name: see Engine.queue


class AdmissionQueue:
    """Admission of requests: graph requests share, a benchmark runs alone, in arrival order."""

    def __init__(self):
        self._cond = threading.Condition()
        self._tickets = 0
        self._serving: list[tuple[int, str]] = []  # (ticket, kind) admitted and running
        self._waiting: list[tuple[int, str]] = []
        self.benches_run = 0
        self.overlaps = 0  # a benchmark admitted while anything else ran: must stay 0

    def _admissible(self, ticket: int, kind: str) -> bool:
        first = self._waiting[0][0] == ticket
        if kind == "bench":
            return first and not self._serving
        ahead = [k for t, k in self._waiting if t < ticket]
        return "bench" not in ahead and all(k != "bench" for _, k in self._serving)

    @contextmanager
    def slot(self, kind: str, on_wait=None):
        with self._cond:
            self._tickets += 1
            ticket = self._tickets
            self._waiting.append((ticket, kind))
        try:
            while True:
                with self._cond:
                    if self._admissible(ticket, kind):
                        self._waiting = [(t, k) for t, k in self._waiting if t != ticket]
                        if kind == "bench" and self._serving:
                            self.overlaps += 1
                        self._serving.append((ticket, kind))
                        started_with = len(self._serving) - 1
                        break
                    place = next(i for i, (t, _) in enumerate(self._waiting) if t == ticket) + 1
                    running = len(self._serving)
                # The caller's callback runs outside the lock (a slow one must not stall the queue),
                # and may raise: a Streamlit session that reruns or closes raises in its script thread.
                if on_wait is not None:
                    on_wait({"fraction": 0.0, "message": f"waiting in the queue (place {place}, "
                             f"{running} running)", "queue_position": place})
                with self._cond:
                    if not self._admissible(ticket, kind):
                        self._cond.wait(timeout=0.5)
        except BaseException:
            # A ticket left in the line would block every later request on this device for good.
            with self._cond:
                self._waiting = [(t, k) for t, k in self._waiting if t != ticket]
                self._serving = [(t, k) for t, k in self._serving if t != ticket]
                self._cond.notify_all()
            raise
        try:
            yield {"ticket": ticket, "others_running_at_start": started_with}
        finally:
            with self._cond:
                self._serving = [(t, k) for t, k in self._serving if t != ticket]
                if kind == "bench":
                    self.benches_run += 1
                self._cond.notify_all()


class MemoryBudget:
    """The memory the worker processes of one engine may hold together: each live worker holds its cap."""

    def __init__(self, total: int):
        self.total = total
        self.held = 0
        self.peak = 0  # the most ever held at once: never over ``total``
        self._cond = threading.Condition()

    def acquire(self, amount: int, make_room, timeout: float) -> None:
        """Hold ``amount`` once it fits. ``make_room()`` stops an idle worker (True) or finds none (False);
        while none is idle the call waits for a busy one to finish, up to ``timeout`` seconds."""
        if amount > self.total:
            raise WorkerError("memory", f"A worker's memory cap ({amount / 2**30:.1f} GiB) is over the server's "
                                        f"budget for all workers ({self.total / 2**30:.1f} GiB); nothing was started.")
        deadline = time.monotonic() + timeout
        while True:
            with self._cond:
                if self.held + amount <= self.total:
                    self.held += amount
                    self.peak = max(self.peak, self.held)
                    return
            if make_room():  # outside the lock: stopping a worker releases its share
                continue
            with self._cond:
                remaining = deadline - time.monotonic()
                if self.held + amount <= self.total:
                    continue
                if remaining <= 0:
                    raise WorkerError("timeout", f"Every worker the server's memory allows ({self.total // amount}) is "
                                                 f"busy with other requests, and none finished within {timeout:.0f} s; "
                                                 "try again in a moment.")
                self._cond.wait(min(remaining, 0.25))

    def release(self, amount: int) -> None:
        with self._cond:
            self.held -= amount
            self._cond.notify_all()
