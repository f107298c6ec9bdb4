"""Admission of requests to the host's cores: graph requests share them, a benchmark runs alone.

Two timings sharing two cores measure each other, and a GPU's timing loop runs on the host's cores
too, so there is one queue for every device, served in arrival order.
"""

from __future__ import annotations

import threading
from contextlib import contextmanager

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
