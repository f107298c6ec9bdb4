"""A fresh server, as ./dev.sh app starts it, has the default configuration's worker running and the default
experiment's result made before the first visitor arrives: that visitor's graphs come from it (no TensorFlow
import on their click, no graph to compute)."""

from __future__ import annotations

import time

import psutil
from devkit.browser import GRAPH_SVG, LINKED, open_app, start_app


def _default_workers(server) -> list[psutil.Process]:
    """Workers of the default configuration (the server's EXPLORER_DEFAULT_ENV flags, on the CPU); not a second one
    that runs the agreement check's reference beside it (engine.reference), should the engine start one."""
    found = []
    for proc in server.workers():
        try:
            environ = proc.environ()
        except psutil.Error:
            continue
        if environ.get("EXPLORER_DEVICE") == "cpu" and environ.get("TF_ENABLE_ONEDNN_OPTS") == "1" \
                and environ.get("EXPLORER_WORKER_ROLE") != "reference":
            found.append(proc)
    return found


def test_the_first_visitor_finds_the_default_worker_started(page, tmp_path):
    server = start_app(env={"EXPLORER_DEFAULT_ENV": "TF_ENABLE_ONEDNN_OPTS=1",
                            "EXPLORER_CACHE_DIR": str(tmp_path / "cache")}, log_dir=tmp_path, serve=True)
    try:
        deadline = time.monotonic() + 120  # polling a process list, not the page: no browser is open yet
        while not _default_workers(server) and time.monotonic() < deadline:
            time.sleep(0.5)
        started = {p.pid for p in _default_workers(server)}
        assert len(started) == 1, f"no worker before the first visit; server log:\n{server.log_tail()}"
        cache = tmp_path / "cache"
        while not list(cache.glob("*.json")) and time.monotonic() < deadline:
            time.sleep(0.5)  # the default experiment's result, written by the server's warm-up
        assert list(cache.glob("*.json")), f"no result made before the first visit; server log:\n{server.log_tail()}"

        open_app(page, server.url, 180_000)
        graphs = page.frame_locator(LINKED).first
        graphs.locator(GRAPH_SVG).nth(1).wait_for(state="visible", timeout=120_000)
        assert page.get_by_text("_FusedMatMul [BiasAdd, GeluApproximate]").first.is_visible()
        assert page.get_by_text("graphs served from cache").first.is_visible()  # made while the server started
        # the visit was served by the worker that was already there: no new TensorFlow process
        assert {p.pid for p in server.workers() if p.pid in started} == started
        assert {p.pid for p in _default_workers(server)} == started
    finally:
        server.stop()
