"""A Ray task that Ray retried on its own (its worker process lost) says so in its cells: Ray does not
tell the caller, so the task reports its attempt number and the matrix words it."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from explorer.engine import Engine, matrix, ray_backend
from explorer.present import matrix as present

ray = pytest.importorskip("ray")  # pinned in requirements.txt
ROOT = Path(__file__).resolve().parents[2]


def _ray_worker_running_a_configuration() -> int | None:
    """The pid of a Ray worker process while it runs a configuration's task (Ray names it in argv)."""
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if Path(f"/proc/{pid}/cmdline").read_bytes().startswith(b"ray::run_configuration"):
                return int(pid)
        except OSError:
            continue
    return None


def test_a_cell_ray_retried_says_retried_by_ray():
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR",
             runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}})
    eng = Engine(cache_dir=None)
    try:
        cells = matrix.plan(["matmul_bias_relu"], [matrix.parse_vary("remapping=on")],
                            params={"m": 16, "k": 8, "n": 8})
        out: dict = {}
        thread = threading.Thread(target=lambda: out.update(rows=ray_backend.run(eng, cells, "local", use_cache=False)))
        thread.start()
        killed, deadline = None, time.monotonic() + 120
        while killed is None and time.monotonic() < deadline:
            killed = _ray_worker_running_a_configuration()
            time.sleep(0.05)
        assert killed is not None, "no Ray worker ran the configuration's task"
        os.kill(killed, signal.SIGKILL)  # the ray:: process itself, as when its node is lost
        thread.join(timeout=300)
    finally:
        eng.close()
        ray.shutdown()
    [row] = out["rows"]
    assert row["status"] == "ok" and row["node"]["task_pid"] != killed, row
    assert row["ray_retries"] == 1 and row["attempts"] == 1
    assert present.retry_words(row) == "retried by Ray: 1 attempt lost"
    assert "retried by Ray: 1 attempt lost" in present.table([row]) and \
        "retried by Ray: 1 attempt lost" in present.to_csv([row])
