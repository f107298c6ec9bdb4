"""Take a full-page screenshot of a running app with the same headless chromium as the tests.

    .venv/bin/python tests/e2e/screenshot.py URL OUT.png [--wait-text TEXT] [--width 1400] [--height 1000]
        [--dark] [--first-screen]

Start the app first (./dev.sh app, or EXPLORER_PORT=8600 ./dev.sh app). The script waits until
Streamlit's script has finished running (and, with --wait-text, until TEXT is visible), then writes
the PNG. Exit status 1 with a message on a timeout.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root: devkit and explorer

from devkit.browser import (
    GRAPH_SVG,
    LINKED,
    full_page_screenshot,
    launch_browser,
    new_context,
    open_app,
    wait_idle,
)


# True once a frame of linked graphs that is shown holds a drawn graph (other tabs' frames are hidden).
DRAWN_JS = """() => [...document.querySelectorAll("%s")].some(frame => {
  if (!frame.getBoundingClientRect().width) return false;
  try { return [...frame.contentDocument.querySelectorAll("%s")].some(svg => svg.getBoundingClientRect().width > 0); }
  catch (e) { return false; }
})""" % (LINKED.replace('"', "'"), GRAPH_SVG)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("url", help="page to open, e.g. http://localhost:8501")
    ap.add_argument("out", help="PNG file to write")
    ap.add_argument("--wait-text", help="wait until this text is visible before the screenshot")
    ap.add_argument("--width", type=int, default=1400)
    ap.add_argument("--height", type=int, default=1000)
    ap.add_argument("--timeout", type=float, default=120, help="seconds to wait in all (default 120)")
    ap.add_argument("--dark", action="store_true", help="the browser prefers a dark colour scheme (the page follows)")
    ap.add_argument("--first-screen", action="store_true",
                    help="only what the window shows (a projector's first screen), not the whole page")
    args = ap.parse_args(argv)

    from playwright.sync_api import Error, sync_playwright

    timeout_ms = args.timeout * 1000
    with sync_playwright() as p:
        browser = launch_browser(p)
        try:
            page = new_context(browser, viewport={"width": args.width, "height": args.height},
                               color_scheme="dark" if args.dark else "light").new_page()
            open_app(page, args.url, timeout_ms)
            if args.wait_text:
                page.get_by_text(args.wait_text).first.wait_for(state="visible", timeout=timeout_ms)
                wait_idle(page, timeout_ms)
            # The linked graphs load in a frame after the script is idle: without this wait the
            # screenshot could show an empty box where they go (only the open tab's frame is visible).
            if page.locator(LINKED).count():  # a drawing shown (the open tab's; one graph at a time is one)
                page.wait_for_function(DRAWN_JS, timeout=timeout_ms, polling=200)
            if args.first_screen:
                page.wait_for_timeout(1000)  # the drawing's own zoom and scroll settle after it is visible
                page.screenshot(path=args.out)
            else:
                full_page_screenshot(page, args.out)
        except Error as e:
            print(f"screenshot: {e}", file=sys.stderr)
            return 1
        finally:
            browser.close()
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
