"""A classroom on loopback: N concurrent sessions ask one server for graphs and benchmarks.

    .venv/bin/python benchmarks/serving.py [SESSIONS=20] [--engine-only] [--max-seconds 900]

Default: starts the app itself (``python -m streamlit run app.py`` from the repository root, on a
free port of 127.0.0.1, with a fresh result cache so "cold" is cold) and drives SESSIONS real
Streamlit sessions from one headless Chromium (Debian's /usr/bin/chromium through Playwright,
one browser context per session). If the page cannot show graphs, it says why and falls back to
the engine-level run. ``--engine-only``: SESSIONS threads share one Engine in this process, as the
page's sessions share the server's, and do the same work without a browser.

The sessions go through the same steps together (each step bounded in time):
  1. load     session 0 opens the page alone (the server's first configuration: cold), then the
              others open it at once (the same configuration again: warm);
  2. flag     odd sessions set TF_ENABLE_ONEDNN_OPTS=0 (a second worker process);
  3. preset   every session picks one of the other presets;
  4. bench    every session runs "fused vs unfused" on its model at the same moment.
A graph request is *cold* when it is the first of this run for its configuration, *warm* when
another session asked for that configuration before (even if its result was still being made).
"Time to graphs" is from the action (navigation, click) to the graph drawn (an SVG in the graph
panel; engine-only: the inspect result returned).

Overlaps: benchmarks that ran beside anything else on the device. Engine-only counts them three
ways (each result's isolation record, a watcher of which workers are inside a request while a
benchmark reports its reps, and intersecting timed spans; the queue's own counter is printed too).
Through the browser the queue is out of sight, so a watcher samples the server's worker processes'
CPU time from outside: a benchmark overlapped if its timed span (its "rep i/n" progress as the page
received it) holds 3 or more samples in which its worker and another worker (a graph request, a
TensorFlow import) both ran.

Only 127.0.0.1 is contacted: the browser aborts any other request. The last lines are the
figures:  p50/p95 time to graphs warm / cold, benchmarks completed, overlaps seen, errors.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from devkit.browser import CHROMIUM, CHROMIUM_ARGS, VIEWPORT  # noqa: E402

from serving_engine import run_engine  # noqa: E402
from serving_plan import (ACTION_S, BENCH, DEFAULT_PRESET, ENVS, FLAG_VALUE, STEP_S,  # noqa: E402
                          Figures, FirstSeen, log, p50_p95, report, session_plan)
from serving_watch import FLAG_NAME, CpuWatcher, Server  # noqa: E402

from explorer.model.catalog import PRESETS  # noqa: E402

# --- what the script looks for on the page (explorer/ui); change here if the page changes -------
# A drawn graph: Graphviz's SVG has a <g class="node"> per node, whether the page draws it with
# st.graphviz_chart or puts the SVG in a frame of its own (explorer/ui/linked.py); any frame counts.
GRAPH_NODE = "svg g.node"
APP_ROOT = "[data-testid='stApp']"
EXCEPTION = "[data-testid='stException']"  # a traceback on the page: always an error
ERROR_ALERT = "[data-testid='stAlert']"
PRESET_SELECT_LABEL = "Preset"  # the sidebar selectbox of presets (options are preset titles)
ONEDNN_OFF_TEXT = "oneDNN off"  # the summary line once the worker runs without oneDNN
BENCH_TAB = "Fused vs unfused"
BENCH_INPUTS = {"Timed calls per variant": "reps", "Warm-up calls": "warmup", "Time budget (s)": "max_seconds"}
RUN_BUTTON = "Run fused vs unfused"  # the benchmark's run button (a form submit button)
BENCH_DONE_TEXT = "Fused median"  # a metric shown with a benchmark result
BENCH_FAILED_TEXT = "The benchmark failed"
PLACEHOLDER_MARK = "Placeholder entrypoint"  # app.py's docstring while the page was not built yet

class UiNotReady(Exception):
    pass


async def run_browser(sessions: int, deadline: float, cache_dir: Path, log_dir: Path) -> Figures:
    from playwright.async_api import Error as PlaywrightError
    from playwright.async_api import async_playwright

    if PLACEHOLDER_MARK in (ROOT / "app.py").read_text():
        raise UiNotReady("app.py is still the placeholder page")
    if not os.access(CHROMIUM, os.X_OK):
        raise UiNotReady(f"{CHROMIUM} not found (Debian package chromium)")
    f = Figures("browser (real Streamlit sessions, one headless Chromium)")
    first = FirstSeen()
    log("starting the app server")
    server = Server(cache_dir, log_dir)
    log(f"app server at {server.url} (log: {server.log_path})")
    watcher = CpuWatcher(server).start()
    pages: list = [None] * sessions
    frames: list[list] = [[] for _ in range(sessions)]  # when each page received benchmark progress
    data_times: list = []  # (step, cold, seconds from the action to the page's script run being over)

    def left(limit: float = STEP_S) -> float:
        return max(1.0, min(limit, deadline - time.monotonic())) * 1000

    def act() -> float:
        return left(ACTION_S)

    async def guard(route):
        host = route.request.url.split("/")[2] if "//" in route.request.url else ""
        if host.split(":")[0] in ("127.0.0.1", ""):
            await route.continue_()
        else:
            await route.abort()

    async def drawn(page, expect_text: str | None) -> float:
        """Wait for the page to be idle (and show expect_text, if given) with a graph drawn; returns
        when the page went idle (the server's script run over, the drawing perhaps not yet made)."""
        await page.wait_for_function(
            """([root, text]) => {
                const app = document.querySelector(root);
                if (!app || app.getAttribute('data-test-connection-state') !== 'CONNECTED') return false;
                if (app.getAttribute('data-test-script-state') !== 'notRunning') return false;
                if (document.querySelector("[data-testid='stElementContainer'][data-stale='true']")) return false;
                return !text || document.body.innerText.includes(text);
            }""", arg=[APP_ROOT, expect_text], timeout=left(), polling=100)
        idle = time.monotonic()
        limit = time.monotonic() + left() / 1000
        while time.monotonic() < limit:
            if await page.locator(EXCEPTION).count():
                raise RuntimeError("the page shows an exception")
            for frame in page.frames:
                try:
                    if await frame.locator(GRAPH_NODE).count():
                        return idle
                except PlaywrightError:
                    pass  # a frame replaced while we looked
            await asyncio.sleep(0.05)
        raise RuntimeError("no graph drawn on the page")

    async def measure(i: int, step: str, key, action, expect_text: str | None) -> None:
        cold = first.is_first(key)
        started = time.monotonic()
        try:
            await action()
            idle = await drawn(pages[i], expect_text)
        except (PlaywrightError, RuntimeError, asyncio.TimeoutError) as exc:
            f.error(i, step, f"{type(exc).__name__}: {exc}")
            return
        f.graph_time(step, cold, time.monotonic() - started)
        data_times.append((step, cold, idle - started))

    def on_frame(i: int, payload) -> None:
        data = payload if isinstance(payload, bytes) else str(payload).encode()
        if b"warming up" in data or b"rep " in data:
            frames[i].append(time.monotonic())

    async def open_page(browser, i: int) -> None:
        context = await browser.new_context(viewport=VIEWPORT)
        await context.route("**/*", guard)
        page = await context.new_page()
        page.on("websocket", lambda ws, i=i: ws.on("framereceived", lambda p, i=i: on_frame(i, p)))
        pages[i] = page

    async def load(i: int) -> None:
        await measure(i, "load", (DEFAULT_PRESET, ()), lambda: pages[i].goto(server.url, timeout=left()), None)

    async def flag(i: int) -> None:
        async def action():
            group = pages[i].locator("[data-testid='stRadio']").filter(has_text=FLAG_NAME).first
            await group.get_by_text(FLAG_VALUE, exact=True).click(timeout=act())

        await measure(i, "flag", (DEFAULT_PRESET, tuple(ENVS[1].items())), action, ONEDNN_OFF_TEXT)

    async def preset(i: int) -> None:
        plan = session_plan(i)
        title = PRESETS[plan["preset"]].title

        async def action():
            # The selectbox filters its options as one types (its list is virtualised: an option
            # out of view is not in the page), so type the title and take the match.
            box = pages[i].locator("[data-testid='stSelectbox']").filter(has_text=PRESET_SELECT_LABEL).first
            await box.locator("input").click(timeout=act())
            await box.locator("input").fill(title, timeout=act())
            await pages[i].get_by_role("option", name=title, exact=True).click(timeout=act())

        await measure(i, "preset", (plan["preset"], tuple(plan["env"].items())), action, f"{title} on ")

    async def bench(i: int) -> None:
        page = pages[i]
        try:
            await page.get_by_role("tab", name=BENCH_TAB).click(timeout=act())
            button = page.get_by_role("button", name=RUN_BUTTON)
            if not await button.count():
                f.notes.append(f"session {i}: no '{RUN_BUTTON}' button on the page; no benchmark run")
                return
            for label, name in BENCH_INPUTS.items():
                await page.get_by_role("spinbutton", name=label).fill(str(BENCH[name]), timeout=act())
            before = len(frames[i])
            await button.click(timeout=act())
            done = page.get_by_text(BENCH_DONE_TEXT).first
            failed = page.get_by_text(BENCH_FAILED_TEXT).first
            await done.or_(failed).wait_for(timeout=left())
            if await failed.count() and await failed.is_visible():
                alert = await page.locator(ERROR_ALERT).last.inner_text()
                f.error(i, "bench", alert)
                return
            if await page.locator(EXCEPTION).count():
                f.error(i, "bench", "the page shows an exception")
                return
            f.benches += 1
            spans = frames[i][before:]
            if len(spans) >= 2:
                f.bench_spans.append((i, spans[0], spans[-1], None))
        except (PlaywrightError, asyncio.TimeoutError) as exc:
            f.error(i, "bench", f"{type(exc).__name__}: {exc}")

    async def together(step: str, work, who) -> None:
        log(f"browser: step {step} ({len(who)} sessions)")
        tasks = [asyncio.wait_for(work(i), timeout=min(STEP_S, max(1.0, deadline - time.monotonic())) + 30)
                 for i in who]
        for i, outcome in zip(who, await asyncio.gather(*tasks, return_exceptions=True)):
            if isinstance(outcome, BaseException):
                f.error(i, step, f"{type(outcome).__name__}: {outcome}")

    try:
        async with async_playwright() as pw:
            browser = await pw.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            try:
                await asyncio.gather(*(open_page(browser, i) for i in range(sessions)))
                await together("load", load, [0])
                if f.errors or not f.cold:
                    raise UiNotReady(f"the first session saw no graph: {f.errors[:1]}")
                await together("load", load, list(range(1, sessions)))
                await together("flag", flag, list(range(1, sessions, 2)))
                await together("preset", preset, list(range(sessions)))
                await together("bench", bench, list(range(sessions)))
            finally:
                await browser.close()
    finally:
        watcher.stop()
        server.stop()
        log(f"server stopped; its worker processes: {sorted(server.worker_pids)}, of which "
            f"{len(server.killed)} were still running 10 s after it and were killed")
    # Overlaps, from outside: the benchmark's worker and another one running at the same moments
    # inside its timed span. (Comparing the spans themselves would need the page to receive progress
    # in time; a loaded server delivers it late and in bursts, so spans seen through the page can
    # intersect while the benchmarks did not.)
    for i, start, end, _ in f.bench_spans:
        intervals, used = watcher.beside(start, end, session_plan(i)["env"].get(FLAG_NAME))
        if intervals >= 3:  # one or two at the very edges can be the hand-over between requests
            f.overlaps.add(i)
        if intervals:
            f.notes.append(f"session {i}: another worker ran in {intervals} sample(s) of its benchmark "
                           f"({used:.2f} s CPU)")
    for pid, (first_seen, last_seen) in sorted(watcher.seen.items()):
        if last_seen < watcher.samples[-1][0] - 1.0:
            f.notes.append(f"worker {pid} ({watcher.configs.get(pid, '?')}) exited during the run, "
                           f"{last_seen - first_seen:.0f} s after it was first seen")
    for cold in (False, True):
        pairs = [(step, t) for step, c, t in data_times if c == cold]
        f.notes.append(f"p50/p95 time to the page's run being over {'cold' if cold else 'warm'} (the server done, "
                       f"the drawing perhaps not yet made): {p50_p95(pairs)}")
    f.notes.append("worker processes: " + "; ".join(f"{pid} ({c})" for pid, c in sorted(watcher.configs.items())))
    f.notes.append(f"benchmark spans seen through the page: {len(f.bench_spans)} of {f.benches}; "
                   f"CPU watcher took {len(watcher.samples)} samples of {len(watcher.flag_value)} worker processes")
    if server.left_behind:
        f.notes.append(f"worker processes still alive after the server stopped: {server.left_behind}")
    return f


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sessions", nargs="?", type=int, default=20, help="concurrent sessions (default 20)")
    parser.add_argument("--engine-only", action="store_true", help="threads against one Engine, no server or browser")
    parser.add_argument("--max-seconds", type=float, default=900.0, help="stop every step after this (default 900)")
    args = parser.parse_args()
    if not 1 <= args.sessions <= 200:
        parser.error("sessions: 1..200")
    started = time.monotonic()
    deadline = started + args.max_seconds
    work = Path(tempfile.mkdtemp(prefix="explorer-serving-"))
    figures = None
    if not args.engine_only:
        try:
            figures = asyncio.run(run_browser(args.sessions, deadline, work / "cache-browser", work))
        except UiNotReady as exc:
            log(f"the page is not ready for the browser run ({exc}); running the engine-level part instead")
    if figures is None:
        figures = run_engine(args.sessions, deadline, work / "cache-engine")
    for cache in work.glob("cache-*"):
        shutil.rmtree(cache, ignore_errors=True)  # the server's log stays, for a look afterwards
    report(figures, args.sessions, started)
    return 0


if __name__ == "__main__":
    sys.exit(main())
