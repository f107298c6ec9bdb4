"""Fixtures for the browser tests in tests/e2e (every test here is marked ``e2e``).

- ``app_server`` (session scope): the base URL (``http://127.0.0.1:PORT``) of the app server started as
  ``./dev.sh app`` starts it (``python -m explorer.ui.serve``) from the repository root on a free port, shared by every test file here (each test has
  its own page, so its own Streamlit session); stopped at the end.
- ``browser`` (session scope): headless Debian chromium through Playwright.
- ``page`` (per test): a new page in a fresh context (1400x1000 viewport, its own Streamlit session).

Wait with ``devkit.browser.wait_idle(page)`` after every interaction, never with sleep. The ``e2e``
marker comes from tests/conftest.py (by directory).
When a test fails, the report carries the server log's tail and a screenshot's path.
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest
from devkit.browser import full_page_screenshot, launch_browser, new_context, start_app

_servers: dict[str, object] = {}  # base URL -> AppServer, for failure reports


@pytest.fixture(scope="session")
def app_server(tmp_path_factory):
    # oneDNN's default depends on the CPU (off without AVX-512): the pages start with it on, as a class
    # server on such a machine would be started.
    server = start_app("app.py", env={"EXPLORER_DEFAULT_ENV": "TF_ENABLE_ONEDNN_OPTS=1"},
                       log_dir=tmp_path_factory.mktemp("app-server"), serve=True)
    _servers[server.url] = server
    try:
        yield server.url
    finally:
        _servers.pop(server.url, None)
        server.stop()


@pytest.fixture(scope="session")
def _playwright():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        yield p


@pytest.fixture(scope="session")
def browser(_playwright):
    b = launch_browser(_playwright)
    try:
        yield b
    finally:
        b.close()


@pytest.fixture
def page(browser):
    context = new_context(browser)
    p = context.new_page()
    try:
        yield p
    finally:
        context.close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if report.when != "call" or not report.failed:
        return
    funcargs = getattr(item, "funcargs", {})
    url = funcargs.get("app_server")
    server = _servers.get(url) if isinstance(url, str) else None
    if server is not None:
        report.sections.append(("streamlit server log (tail)", f"{server.log_path}\n{server.log_tail()}"))
    pg = funcargs.get("page")
    if pg is not None:
        name = re.sub(r"[^\w.-]", "_", item.name) + ".png"
        shot = server.log_path.with_name(name) if server else Path(tempfile.gettempdir()) / name
        try:
            full_page_screenshot(pg, shot)
            report.sections.append(("screenshot", str(shot)))
        except Exception as e:  # noqa: BLE001 - the page may be gone; the report matters more than the picture
            report.sections.append(("screenshot", f"not taken: {e}"))
