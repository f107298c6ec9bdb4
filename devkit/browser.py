"""The app in a real browser: start the app, open Debian's Chromium, wait for Streamlit.

Used by ``tests/e2e/conftest.py`` (the ``app_server`` and ``page`` fixtures), by
``tests/e2e/screenshot.py`` and by ``benchmarks/serving.py`` (its app server and Chromium settings).
Tests import the helpers directly::

    from devkit.browser import wait_idle, open_app

The browser is Debian's ``/usr/bin/chromium`` (package ``chromium``, installed by ``./dev.sh test``),
driven by Playwright with ``executable_path``: ``playwright install`` downloads a browser of its own,
which this project never does.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import weakref
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
CHROMIUM = os.environ.get("EXPLORER_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
VIEWPORT = {"width": 1400, "height": 1000}
LINKED = "[data-testid='stIFrame']"  # the frame of the linked before/after drawing (explorer/ui/linked.py)
GRAPH_SVG = ".fx-pane svg"  # one drawn graph inside that frame

# Attributes Streamlit 1.67's frontend sets on its root element (App.tsx): data-test-script-state is
# "initial" before the first run, then "running" / "rerunRequested" / "stopRequested" /
# "compilationError" / "notRunning"; data-test-connection-state is "CONNECTED" once the websocket is up.
APP_IDLE = "[data-testid='stApp'][data-test-script-state='notRunning']"
APP_CONNECTED = "[data-testid='stApp'][data-test-connection-state='CONNECTED']"

SERVER_START_TIMEOUT = 60.0  # seconds until /_stcore/health must answer 200


def free_port() -> int:
    """A TCP port that was free a moment ago on 127.0.0.1."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class AppServer:
    """A running ``streamlit run`` process; ``url`` is its base URL (no trailing slash)."""

    proc: subprocess.Popen
    port: int
    log_path: Path
    url: str = field(init=False)

    def __post_init__(self) -> None:
        self.url = f"http://127.0.0.1:{self.port}"

    def log_tail(self, lines: int = 60) -> str:
        try:
            text = self.log_path.read_text(errors="replace")
        except OSError as e:
            return f"(no server log: {e})"
        return "\n".join(text.splitlines()[-lines:])

    def workers(self) -> list:
        """The explorer's TensorFlow worker processes this server runs (psutil.Process objects)."""
        import psutil

        try:
            children = psutil.Process(self.proc.pid).children(recursive=True)
        except psutil.Error:
            return []
        found = []
        for child in children:
            try:
                if "explorer.worker" in " ".join(child.cmdline()):
                    found.append(child)
            except psutil.Error:
                continue
        return found

    def healthy(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/_stcore/health", timeout=2) as r:
                return r.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def stop(self, timeout: float = 15.0) -> None:
        """Stop the server and anything it started (it leads its own process group)."""
        if self.proc.poll() is not None:
            return
        _signal_group(self.proc, signal.SIGTERM)
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _signal_group(self.proc, signal.SIGKILL)
            self.proc.wait(timeout=timeout)


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)  # the group start_new_session gave it: the server and its workers
    except ProcessLookupError:
        pass


def start_app(
    script: str | os.PathLike = "app.py",
    *,
    port: int | None = None,
    env: dict[str, str] | None = None,
    log_dir: str | os.PathLike | None = None,
    timeout: float = SERVER_START_TIMEOUT,
    extra_args: list[str] | None = None,
    serve: bool = False,
) -> AppServer:
    """Start ``python -m streamlit run SCRIPT`` from the repository root and wait until it is healthy.

    ``serve=True`` starts it as ``./dev.sh app`` does, through ``python -m explorer.ui.serve`` (which
    starts the default configuration's worker first, then runs app.py with Streamlit's command line).

    The server's output goes to a file (``server.log`` in ``log_dir`` or a new temp dir), never a
    pipe: a pipe nobody reads fills up and blocks the server. ``env`` entries are added to this
    process's environment. Raises RuntimeError with the log's tail if the server exits or does not
    answer ``/_stcore/health`` within ``timeout`` seconds.
    """
    port = port or free_port()
    log_dir = Path(log_dir) if log_dir else Path(tempfile.mkdtemp(prefix="explorer-e2e-"))
    log_dir.mkdir(parents=True, exist_ok=True)
    log_path = log_dir / f"server-{port}.log"
    launcher = ["-m", "explorer.ui.serve"] if serve else ["-m", "streamlit", "run", str(script)]
    cmd = [
        sys.executable, *launcher,
        "--server.headless", "true",
        "--server.port", str(port),
        "--server.address", "127.0.0.1",
        "--browser.gatherUsageStats", "false",
        "--server.fileWatcherType", "none",
        *(extra_args or []),
    ]
    full_env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    with open(log_path, "wb") as log:
        proc = subprocess.Popen(
            cmd, cwd=REPO_ROOT, env=full_env, stdin=subprocess.DEVNULL, stdout=log,
            stderr=subprocess.STDOUT, start_new_session=True,
        )
    server = AppServer(proc, port, log_path)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(
                f"streamlit exited with code {proc.returncode} before answering on port {port}; "
                f"log {log_path}:\n{server.log_tail()}"
            )
        if server.healthy():
            return server
        time.sleep(0.25)
    server.stop()
    raise RuntimeError(
        f"streamlit did not answer {server.url}/_stcore/health within {timeout:.0f} s; "
        f"log {log_path}:\n{server.log_tail()}"
    )


def launch_browser(playwright, **kwargs):
    """Headless Debian chromium through Playwright (``playwright`` is a sync_playwright() object)."""
    if not os.access(CHROMIUM, os.X_OK):
        raise RuntimeError(
            f"{CHROMIUM} not found: install Debian's chromium (./dev.sh test does: apt-get install chromium)"
            " or point EXPLORER_CHROMIUM at a Chromium binary"
        )
    return playwright.chromium.launch(
        executable_path=CHROMIUM, headless=True, args=list(CHROMIUM_ARGS), **kwargs
    )


# Installed in every page made through new_context(): counts script runs as the frontend shows them
# and notes the time of the last user input, so that wait_idle can tell "idle" from "a rerun was
# requested and has not started yet" (the gap after a click is 50-150 ms on an idle machine).
TRACKER_JS = """
(() => {
  if (window.__e2e) return;
  const t = window.__e2e = {runs: 0, lastStart: -1, lastInput: -1};
  const busy = v => v === 'running' || v === 'rerunRequested' || v === 'stopRequested';
  new MutationObserver(ms => {
    for (const m of ms) {
      if (busy(m.target.getAttribute('data-test-script-state')) && !busy(m.oldValue)) {
        t.runs++;
        t.lastStart = performance.now();
      }
    }
  }).observe(document, {subtree: true, attributes: true, attributeOldValue: true,
                        attributeFilter: ['data-test-script-state']});
  for (const ev of ['pointerdown', 'keydown', 'input', 'change'])
    document.addEventListener(ev, () => { t.lastInput = performance.now(); }, true);
})();
"""

IDLE_JS = """
grace => {
  const app = document.querySelector("[data-testid='stApp']");
  if (!app || app.getAttribute('data-test-connection-state') !== 'CONNECTED') return false;
  if (app.getAttribute('data-test-script-state') !== 'notRunning') return false;
  if (document.querySelector("[data-testid='stElementContainer'][data-stale='true']")) return false;
  // the first run's elements arrive after the script already reads as idle: grey placeholders until then
  if (document.querySelector("[data-testid='stSkeleton']")) return false;
  const t = window.__e2e;
  if (t && t.lastInput >= 0 && t.lastStart < t.lastInput && performance.now() - t.lastInput < grace)
    return false;  // input since the last run started: give its rerun time to begin
  return true;
}
"""

IDLE_GRACE_MS = 1000
# True once an element's box is the same in three polls in a row (Playwright's own "stable" check
# compares two animation frames, which a busy machine may draw before an expander has opened).
STILL_JS = """el => {
    const r = el.getBoundingClientRect(), box = [r.x, r.y, r.width, r.height].join();
    el.__still = el.__last === box ? (el.__still || 0) + 1 : 0;
    el.__last = box;
    return el.__still >= 2;
}"""


def new_context(browser, **kwargs):
    """A fresh browser context (own cookies, own Streamlit session) with the standard 1400x1000
    viewport and the run tracker that wait_idle and expect_rerun read."""
    kwargs.setdefault("viewport", dict(VIEWPORT))
    context = browser.new_context(**kwargs)
    context.add_init_script(TRACKER_JS)
    context.on("page", _track_runs)
    return context


# Script runs as the server announced them, per page: a run's start can be missed by TRACKER_JS
# when the frontend takes "started" and "finished" in one render (a loaded machine, a fast run),
# so the app never shows "running"; the websocket still carried both.
_SERVER_RUNS: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


def _track_runs(page) -> None:
    from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

    fragment_done = ForwardMsg.ScriptFinishedStatus.Value("FINISHED_FRAGMENT_RUN_SUCCESSFULLY")
    _SERVER_RUNS[page] = [0]

    def frame(payload) -> None:
        if not isinstance(payload, (bytes, bytearray)):
            return
        try:
            msg = ForwardMsg.FromString(bytes(payload))
        except Exception:  # noqa: BLE001 - not a ForwardMsg: nothing to count
            return
        kind = msg.WhichOneof("type")
        # a whole run starts with new_session; a fragment's run has no start message, only its end
        if kind == "new_session" or (kind == "script_finished" and msg.script_finished == fragment_done):
            _SERVER_RUNS[page][0] += 1

    page.on("websocket", lambda ws: ws.on("framereceived", frame))


def _runs(page) -> tuple[int, int]:
    """(runs the page showed, runs the server announced) so far."""
    shown = page.evaluate("() => window.__e2e ? window.__e2e.runs : null")
    if shown is None or page not in _SERVER_RUNS:
        raise RuntimeError("expect_rerun needs a page from a context made by new_context")
    return shown, _SERVER_RUNS[page][0]


def wait_idle(page, timeout: float = 60_000, grace: float = IDLE_GRACE_MS) -> None:
    """Wait (``timeout`` in ms) until the app is connected, its script is not running and no stale
    element is left; call it after ``page.goto`` and after every interaction, instead of sleeping.

    The idle mark is ``[data-testid='stApp'][data-test-script-state='notRunning']``. Right after a
    click it still shows the previous run's state, so when there was user input since the last run
    started, this waits up to ``grace`` ms for the new run to begin (an input that reruns nothing,
    such as typing before Enter, costs that much). Where an action must rerun the script, wrap it in
    ``expect_rerun(page)`` instead: that waits for the run itself, however slow the server is.
    """
    page.wait_for_selector(APP_CONNECTED, state="attached", timeout=timeout)
    page.wait_for_function(IDLE_JS, arg=grace, timeout=timeout, polling=50)


@contextmanager
def expect_rerun(page, timeout: float = 60_000):
    """``with expect_rerun(page): page.get_by_role("button", name="Run").click()`` returns once a
    script run that started after the action has finished (and the app is idle)."""
    shown, announced = _runs(page)
    yield
    deadline = time.monotonic() + timeout / 1000
    while True:
        now_shown, now_announced = _runs(page)
        if now_shown > shown or now_announced > announced:
            break
        if time.monotonic() > deadline:
            raise TimeoutError(f"no script run started within {timeout / 1000:.0f} s of the action")
        page.wait_for_timeout(50)  # Playwright delivers the websocket's frames while it waits
    wait_idle(page, timeout)


def download(page, button, timeout: float = 60_000):
    """Click the download ``button`` (a locator) once it stands still and the app is idle; return the
    Playwright download.

    A click while the button still moves (an expander opening, the layout settling after a run) can
    land beside it on a loaded machine: nothing downloads and nothing says why. If no download starts,
    the error says whether the browser asked for the file at all and what the server answered.
    """
    wait_idle(page, timeout)
    button.wait_for(state="visible", timeout=timeout)
    handle = button.element_handle(timeout=timeout)
    handle.evaluate("el => { el.__still = 0; el.__last = null; }")
    page.wait_for_function(STILL_JS, arg=handle, timeout=timeout, polling=100)
    asked: list[str] = []

    def note(response) -> None:
        if "/media/" in response.url:
            asked.append(f"{response.status} {response.url}")

    page.on("response", note)
    try:
        with page.expect_download(timeout=timeout) as started:
            button.click(timeout=timeout)
        return started.value
    except Exception as exc:
        raise AssertionError(f"no download began after clicking {button}: the browser asked for "
                             f"{asked or 'no file'}") from exc
    finally:
        page.remove_listener("response", note)


def open_app(page, url: str, timeout: float = 60_000) -> None:
    """Go to ``url`` (the app's base URL, or a page path under it) and wait for the first run to end."""
    page.goto(url, wait_until="domcontentloaded", timeout=timeout)
    wait_idle(page, timeout)


def full_page_screenshot(page, path: str | os.PathLike) -> None:
    """Screenshot the whole app, not just the viewport.

    Streamlit scrolls inside its own container rather than the document, so Playwright's
    ``full_page`` alone would capture one viewport: grow the viewport to the content's height first. A
    collapsed sidebar (the presenter view's) is left out: squeezed to no width, its text stands 26,000 px tall.
    """
    height = page.evaluate(
        """() => Math.max(document.documentElement.scrollHeight,
            ...[...document.querySelectorAll("[data-testid='stMain'], [data-testid='stAppViewContainer'],"
                + " [data-testid='stMainBlockContainer'], [data-testid='stSidebarContent']")]
               .filter(e => (e.closest("[data-testid='stSidebar']") || e).getBoundingClientRect().width > 0)
               .map(e => e.scrollHeight))"""
    )
    size = page.viewport_size or VIEWPORT
    if height > size["height"]:
        page.set_viewport_size({"width": size["width"], "height": min(int(height) + 40, 30_000)})
        page.wait_for_timeout(300)  # let the layout settle at the new size
    page.screenshot(path=str(path), full_page=True)
