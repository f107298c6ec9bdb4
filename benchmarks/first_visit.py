"""First visit on a fresh server: from opening the page to both graphs drawn, in headless Chromium.

    .venv/bin/python benchmarks/first_visit.py [--rounds 3]

Each round starts a fresh server (its own empty result cache) twice: as ``streamlit run app.py``
(nothing runs until a browser connects: the first visitor waits for a TensorFlow import) and as
``./dev.sh app`` starts it (``python -m explorer.ui.serve``: the default configuration's worker is
started with the server). The browser opens the page a fixed 5 s after the server answers its
health check, as a visitor arriving a little after the server started would. Prints each round and
the medians; the machine's load average is printed with them (read figures from a quiet machine).
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

from devkit.browser import GRAPH_SVG, LINKED, launch_browser, new_context, start_app
from devkit.machine import cpu_model

ARRIVAL_S = 5.0  # when the first visitor opens the page, after the server is up
FLAGS = {"EXPLORER_DEFAULT_ENV": "TF_ENABLE_ONEDNN_OPTS=1"}  # the class setting on a CPU without AVX-512


def first_visit(browser, serve: bool) -> float:
    with tempfile.TemporaryDirectory(prefix="explorer-first-visit-") as tmp:
        server = start_app(env={**FLAGS, "EXPLORER_CACHE_DIR": os.path.join(tmp, "cache")}, log_dir=tmp, serve=serve)
        try:
            time.sleep(ARRIVAL_S)
            context = new_context(browser)
            page = context.new_page()
            started = time.perf_counter()
            page.goto(server.url, timeout=180_000)
            page.frame_locator(LINKED).first.locator(GRAPH_SVG).nth(1).wait_for(state="visible", timeout=180_000)
            seconds = time.perf_counter() - started
            context.close()
            return seconds
        finally:
            server.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    times: dict[str, list[float]] = {"streamlit run app.py": [], "python -m explorer.ui.serve": []}
    with sync_playwright() as playwright:
        browser = launch_browser(playwright)
        for i in range(args.rounds):
            for label, serve in (("streamlit run app.py", False), ("python -m explorer.ui.serve", True)):
                seconds = first_visit(browser, serve)
                times[label].append(seconds)
                print(f"round {i + 1}: {label:<28} page open to graphs drawn {seconds:.2f} s", flush=True)
        browser.close()
    print(f"first visit, {time.strftime('%Y-%m-%d %H:%M')}, {cpu_model()}, {os.cpu_count()} CPUs, "
          f"load average {os.getloadavg()[0]:.2f}, visitor arrives {ARRIVAL_S:.0f} s after the server is up")
    for label, values in times.items():
        print(f"  {label:<28} median {statistics.median(values):.2f} s  ({', '.join(f'{v:.2f}' for v in values)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
