"""The classroom benchmark's plan and figures, shared by its browser run (serving.py) and its
engine-only run (serving_engine.py): which session does what, what is counted, how it is reported."""

from __future__ import annotations

import math
import os
import threading
import time
from dataclasses import dataclass, field

from serving_watch import FLAG_NAME

from explorer.model.catalog import PRESETS

FLAG_VALUE = "0"
DEFAULT_PRESET = "matmul_bias_gelu_approx"  # what the page shows on load (explorer/ui/state.py)
# The presets the sessions switch to: the catalogue's first six after the default (a class spread
# over a few models, so that several sessions share each configuration).
OTHER_PRESETS = [p for p in PRESETS if p != DEFAULT_PRESET][:6]
ENVS = [{}, {FLAG_NAME: FLAG_VALUE}]
STEP_S = 300.0  # no step of one session may take longer than this
ACTION_S = 60.0  # a click or a keystroke on a loaded page (the wait for what it causes is STEP_S)
BENCH = {"reps": 100, "warmup": 2, "max_seconds": 3}  # small, so 20 queued benchmarks end in minutes



def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


# --- figures ---------------------------------------------------------------------------------------

@dataclass
class Figures:
    mode: str
    warm: list = field(default_factory=list)  # (step, seconds)
    cold: list = field(default_factory=list)
    benches: int = 0
    bench_spans: list = field(default_factory=list)  # (session, start, end, worker pid or None)
    overlaps: set = field(default_factory=set)  # sessions whose benchmark overlapped something
    errors: list = field(default_factory=list)  # (session, step, message)
    notes: list = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def graph_time(self, step: str, cold: bool, seconds: float) -> None:
        with self._lock:
            (self.cold if cold else self.warm).append((step, seconds))

    def error(self, session: int, step: str, message: str) -> None:
        with self._lock:
            self.errors.append((session, step, " ".join(str(message).split())[:300]))


def pct(values: list[float], q: float) -> float:
    """Nearest-rank percentile."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def p50_p95(pairs: list) -> str:
    values = [s for _, s in pairs]
    if not values:
        return "n/a / n/a s (none measured)"
    return f"{pct(values, 0.50):.3f} / {pct(values, 0.95):.3f} s"


def report(f: Figures, sessions: int, started: float) -> None:
    print()
    print(f"serving benchmark, {f.mode}, {sessions} sessions, {time.strftime('%Y-%m-%d %H:%M')}, "
          f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}, {time.monotonic() - started:.0f} s in all")
    for step in ("load", "flag", "preset"):
        warm = [p for p in f.warm if p[0] == step]
        cold = [p for p in f.cold if p[0] == step]
        print(f"  {step:<7} warm n={len(warm):<3} p50/p95 {p50_p95(warm):<22} cold n={len(cold):<3} p50/p95 {p50_p95(cold)}")
    for note in f.notes:
        print(f"  {note}")
    for session, step, message in f.errors[:20]:
        print(f"  error: session {session}, {step}: {message}")
    print(f"p50/p95 time to graphs warm: {p50_p95(f.warm)}")
    print(f"p50/p95 time to graphs cold: {p50_p95(f.cold)}")
    print(f"benchmarks completed: {f.benches}")
    print(f"overlaps seen: {len(f.overlaps)}")
    print(f"errors: {len(f.errors)}")


class FirstSeen:
    """Which session asked first for each configuration: that request is the cold one."""

    def __init__(self):
        self._seen: set = set()
        self._lock = threading.Lock()

    def is_first(self, key) -> bool:
        with self._lock:
            if key in self._seen:
                return False
            self._seen.add(key)
            return True


def session_plan(i: int) -> dict:
    """Session i's configuration after the flag step: sessions 2k and 2k+1 share a preset, one with
    each flag setting, so 20 sessions make 12 configurations (12 cold requests, 8 warm)."""
    return {"env": ENVS[i % 2], "preset": OTHER_PRESETS[(i // 2) % len(OTHER_PRESETS)]}


# --- engine-level run ------------------------------------------------------------------------------
