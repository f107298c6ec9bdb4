"""A lesson walked through in a real browser: seconds from a click on Next to the step drawn, the first time and warm.

    .venv/bin/python benchmarks/lesson_steps.py [--lessons gelu-fusion,fused-ops]

Starts a fresh server as ``./dev.sh app`` does (``python -m explorer.ui.serve``, its own empty result cache) and
drives Debian's headless Chromium (1400×1000). For each lesson:

- first time: its link opened (``?lesson=ID``: the page starts preparing the lesson in the background) and every
  step walked with Next as soon as the previous one is drawn, so a step may still wait for its result;
- warm: the link opened again in a fresh session (the lesson prepared), and every step walked again;
- flag switches: at the lesson's first CPU step, TF_ENABLE_ONEDNN_OPTS set to the other value in the sidebar
  and back (a configuration the lesson's preparation started a worker for, or that another step ran); the
  switch is drawn when the status line names the new oneDNN setting and both graphs are shown.

A step is drawn when the lesson panel names it, the page's script is idle, and its tab shows what it draws (the
graphs tab: the frame's document is the drawing the page sent last, both graphs in it). Prints every step, then medians per kind, with the
date, the CPU's model name, its core count and the load average (read figures from a quiet machine).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from devkit.browser import (GRAPH_SVG, LINKED, expect_rerun, launch_browser, new_context,
                            start_app, wait_idle)

from devkit.machine import cpu_model
from explorer.model.lesson import seed_lessons

PANEL = ".st-key-lesson-panel"
TIMEOUT_MS = 300_000


# The graphs tab's frame shows the drawing the page sent last: the document loaded in it is the one its srcdoc
# attribute holds (present.linked writes the drawing's key into both), with both graphs in it.
CURRENT_DRAWING = """() => {
  const f = document.querySelector("[data-testid='stIFrame']");
  const wanted = f && (f.getAttribute('srcdoc') || '').match(/data-key='([^']+)'/);
  const root = f && f.contentDocument && f.contentDocument.getElementById('fx-root');
  return !!(wanted && root && root.dataset.key === wanted[1] && root.querySelectorAll('.fx-pane svg').length === 2);
}"""


def _drawn(page, number: int, total: int, tab: str) -> None:
    page.locator(PANEL).filter(has_text=f"step {number} of {total}").wait_for(timeout=TIMEOUT_MS)
    wait_idle(page, TIMEOUT_MS)
    if tab == "graphs":
        page.wait_for_function(CURRENT_DRAWING, timeout=TIMEOUT_MS, polling=20)
        page.frame_locator(LINKED).first.locator(GRAPH_SVG).nth(1).wait_for(state="visible", timeout=TIMEOUT_MS)


def walk(page, url: str, lesson) -> list[float]:
    """Open the lesson's link, then Next through every step: seconds per step (the first: opening the link)."""
    total = len(lesson.steps)
    started = time.perf_counter()
    page.goto(url, wait_until="domcontentloaded", timeout=TIMEOUT_MS)
    first_tab = lesson.steps[0].look.tab or "graphs"
    _drawn(page, 1, total, first_tab)
    times = [time.perf_counter() - started]
    for number in range(2, total + 1):
        step = lesson.steps[number - 1]
        started = time.perf_counter()
        with expect_rerun(page, TIMEOUT_MS):
            page.locator(PANEL).get_by_role("button", name="Next", exact=True).click()
        _drawn(page, number, total, step.look.tab or "graphs")
        times.append(time.perf_counter() - started)
    return times


def flag_switches(page, url: str, lesson) -> list[tuple[str, float]]:
    """At the lesson's first CPU step: oneDNN to the other value in the sidebar and back, seconds to graphs each."""
    numbers = [n for n, s in enumerate(lesson.steps, 1) if s.experiment.config.device == "cpu"
               and (s.look.tab or "graphs") == "graphs"]
    if not numbers:
        return []
    number = numbers[0]
    page.goto(f"{url}&step={number}", wait_until="domcontentloaded", timeout=TIMEOUT_MS)
    _drawn(page, number, len(lesson.steps), "graphs")
    value = lesson.steps[number - 1].experiment.config.env_dict.get("TF_ENABLE_ONEDNN_OPTS", "1")
    out = []
    for target in ("0" if value == "1" else "1", value):
        group = page.locator("[data-testid='stSidebar'] [data-testid='stRadio']").filter(has_text="TF_ENABLE_ONEDNN_OPTS")
        started = time.perf_counter()
        with expect_rerun(page, TIMEOUT_MS):
            group.get_by_text(target, exact=True).click()
        # the status line names the worker's oneDNN: the new result is on screen (its drawing may be the same)
        page.get_by_text(f"oneDNN {'on' if target == '1' else 'off'}").first.wait_for(timeout=TIMEOUT_MS)
        page.wait_for_function(CURRENT_DRAWING, timeout=TIMEOUT_MS, polling=20)
        out.append((f"TF_ENABLE_ONEDNN_OPTS={target}", time.perf_counter() - started))
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--lessons", default=",".join(seed_lessons()), help="lesson ids, comma-separated")
    args = parser.parse_args()
    lessons = [seed_lessons()[name] for name in args.lessons.split(",")]
    from playwright.sync_api import sync_playwright

    figures: dict[str, list[float]] = {"first time": [], "warm": [], "flag switch": []}
    with tempfile.TemporaryDirectory(prefix="explorer-lesson-steps-") as tmp, sync_playwright() as playwright:
        server = start_app(env={"EXPLORER_CACHE_DIR": os.path.join(tmp, "cache")}, log_dir=tmp, serve=True)
        browser = launch_browser(playwright)
        try:
            page = new_context(browser).new_page()
            opened = time.perf_counter()
            page.goto(server.url, wait_until="domcontentloaded", timeout=TIMEOUT_MS)
            wait_idle(page, TIMEOUT_MS)
            print(f"server up, first page idle after {time.perf_counter() - opened:.1f} s", flush=True)
            for lesson in lessons:
                url = f"{server.url}/?lesson={lesson.id}"
                for kind in ("first time", "warm"):
                    times = walk(page, url, lesson)
                    print(f"{lesson.id:<18} {kind:<10} " + "  ".join(f"{n}: {t:.2f}" for n, t in enumerate(times, 1)),
                          flush=True)
                    figures[kind].extend(times[1:])  # steps reached with Next (the first is the link's opening)
                for flag, seconds in flag_switches(page, url, lesson):
                    print(f"{lesson.id:<18} flag       {flag}: {seconds:.2f}", flush=True)
                    figures["flag switch"].append(seconds)
        finally:
            browser.close()
            server.stop()
    print(f"lesson steps, {time.strftime('%Y-%m-%d %H:%M')}, {cpu_model()}, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.2f}; seconds from a click to the step drawn")
    for kind, values in figures.items():
        if values:
            print(f"  {kind:<12} median {statistics.median(values):.2f} s, max {max(values):.2f} s "
                  f"over {len(values)} ({', '.join(f'{v:.2f}' for v in values)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
