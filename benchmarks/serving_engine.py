"""The classroom benchmark without a browser: N threads share one Engine in this process, as the page's
sessions share the server's, and go through the same steps (see serving.py)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from serving_plan import BENCH, DEFAULT_PRESET, ENVS, STEP_S, Figures, FirstSeen, log, session_plan
from serving_watch import BusyWatcher, spans_overlapping

from explorer.engine import Engine
from explorer.errors import ExplorerError
from explorer.model.flags import Config


def run_engine(sessions: int, deadline: float, cache_dir: Path) -> Figures:
    from explorer.engine.admission import HOST

    f = Figures("engine-level (threads sharing one Engine, no browser)")
    first = FirstSeen()
    waited: list[int] = []  # the furthest queue place each waiting benchmark was told
    engine = Engine(cache_dir=cache_dir)
    watcher = BusyWatcher(engine).start()

    def step_timeout() -> float:
        return max(1.0, min(STEP_S, deadline - time.monotonic()))

    def graphs(i: int, step: str, preset: str, env: dict) -> None:
        cold = first.is_first((preset, tuple(sorted(env.items()))))
        started = time.monotonic()
        try:
            engine.inspect({"preset": preset}, Config.make("cpu", env))
        except ExplorerError as exc:
            f.error(i, step, exc)
            return
        f.graph_time(step, cold, time.monotonic() - started)

    def bench(i: int) -> None:
        plan = session_plan(i)
        spans, positions = [], []

        def on_progress(message: dict) -> None:
            if "queue_position" in message:
                positions.append(message["queue_position"])
            text = str(message.get("message", ""))
            if text == "warming up" or text.startswith("rep "):
                spans.append(time.monotonic())

        try:
            result = engine.bench({"preset": plan["preset"]}, Config.make("cpu", plan["env"]),
                                  on_progress=on_progress, **BENCH)
        except ExplorerError as exc:
            f.error(i, "bench", exc)
            return
        with f._lock:  # noqa: SLF001 - the figures' own lock, shared with the threads of this script
            f.benches += 1
            if result["isolation"]["others_running_at_start"]:
                f.overlaps.add(i)
            if len(spans) >= 2:
                f.bench_spans.append((i, spans[0], spans[-1], result["worker"]["pid"]))
            if positions:
                waited.append(max(positions))

    def together(step: str, work) -> None:
        threads = [threading.Thread(target=work, args=(i,), daemon=True, name=f"{step}-{i}") for i in range(sessions)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(step_timeout())
        for i, t in enumerate(threads):
            if t.is_alive():
                f.error(i, step, f"no answer within the step's time limit ({STEP_S:.0f} s)")

    try:
        log("engine: step load (session 0 alone, then the others)")
        graphs(0, "load", DEFAULT_PRESET, ENVS[0])
        together("load", lambda i: i and graphs(i, "load", DEFAULT_PRESET, ENVS[0]))
        log("engine: step flag (odd sessions: a second worker configuration)")
        together("flag", lambda i: i % 2 and graphs(i, "flag", DEFAULT_PRESET, ENVS[1]))
        log("engine: step preset (every session another preset)")
        together("preset", lambda i: graphs(i, "preset", session_plan(i)["preset"], session_plan(i)["env"]))
        log("engine: step bench (every session at once)")
        together("bench", bench)
    finally:
        watcher.stop()
        queue = engine.queues.get(HOST)
        engine.close()
    f.overlaps |= spans_overlapping(f.bench_spans)
    for i, start, end, pid in f.bench_spans:
        if any(busy - {pid} for t, busy in watcher.samples if start <= t <= end):
            f.overlaps.add(i)
    if queue is not None:
        f.notes.append(f"queue: {queue.benches_run} benchmarks run, its overlap counter {queue.overlaps}; "
                       f"{len(waited)} benchmarks were told their place while waiting (furthest: "
                       f"{max(waited, default=0)}); busy-worker watcher: {len(watcher.samples)} samples, "
                       f"{len(f.bench_spans)} timed spans")
    return f
