"""One computation per key at a time: many sessions asking for the same new result at once (a class pressing "run"
together) share one computation instead of queueing up to repeat it."""

from __future__ import annotations

import threading
import time
from typing import Callable, TypeVar

T = TypeVar("T")


class InFlight:
    """The keys being computed now, each with the event its waiters wait on."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[str, threading.Event] = {}

    def run(self, key: str, compute: Callable[[], T], wait_s: float,
            waiting: Callable[[], None] | None = None) -> T | None:
        """``compute()`` where no one computes ``key`` now; otherwise None once that computation ended (or
        ``wait_s`` passed), ``waiting()`` called every half second meanwhile: the caller reads what it stored."""
        with self._lock:
            running = self._running.get(key)
            owner = running is None
            if owner:
                running = self._running[key] = threading.Event()
        assert running is not None
        if not owner:
            deadline = time.monotonic() + wait_s
            while not running.wait(0.5) and time.monotonic() < deadline:
                if waiting:
                    waiting()
            return None
        try:
            return compute()
        finally:
            with self._lock:
                self._running.pop(key, None)
            running.set()
