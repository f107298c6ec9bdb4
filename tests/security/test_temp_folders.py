"""Temporary files belong to the request that made them: the parent removes them however the worker ends.

Finding 4 of issue 20: a worker killed while it loaded a model left its copy (an ``explorer-model-*``
folder) in the temp folder, and every .keras run left an AutoGraph ``__autograph_generated_file*.py``.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest
from security_support import leftovers
from hostile_graphs import good

from explorer.engine.uploads import spec_for_path
from explorer.errors import WorkerError
from explorer.model.flags import Config

pytestmark = pytest.mark.tf
CPU = Config.make("cpu", {})
PATIENCE_S = 180.0  # how long the test waits for the worker to start unpacking (not a timing assertion)


def model_folders(root) -> list:
    return [p for p in root.rglob("*") if p.name.startswith(("explorer-model-", "request-", "__autograph_generated"))]


def test_a_worker_killed_while_it_loads_a_model_leaves_nothing_behind(engine, bases, temp_root, tmp_path):
    spec = spec_for_path(str(bases / "slow.keras"))
    outcome: dict = {}

    def inspect() -> None:
        try:
            outcome["result"] = engine.inspect(spec, CPU, use_cache=False)
        except Exception as exc:  # noqa: BLE001 - the test reads what came back
            outcome["error"] = exc

    thread = threading.Thread(target=inspect)
    thread.start()
    deadline = time.monotonic() + PATIENCE_S
    while not any(p.is_file() for folder in model_folders(temp_root) if folder.is_dir() for p in folder.rglob("*")):
        assert thread.is_alive() and time.monotonic() < deadline, ("the model was never unpacked", outcome)
        time.sleep(0.01)
    busy = [w for w in engine.pool.workers() if w.lock.locked()]
    assert len(busy) == 1
    os.killpg(busy[0].pid, signal.SIGKILL)  # as the kernel's OOM killer or an operator would
    thread.join(PATIENCE_S)
    assert isinstance(outcome.get("error"), WorkerError) and outcome["error"].kind == "crash", outcome
    assert model_folders(temp_root) == [] and leftovers(temp_root) == []
    path = tmp_path / "good.pbtxt"
    path.write_bytes(good())
    assert engine.inspect(spec_for_path(str(path)), CPU, use_cache=False)["output_shapes"] == [[2]]
    assert model_folders(temp_root) == [] and leftovers(temp_root) == []


def test_a_keras_model_runs_from_the_explorers_own_unpacked_copy_and_leaves_nothing(engine, bases, temp_root):
    result = engine.inspect(spec_for_path(str(bases / "tiny.keras")), CPU, use_cache=False)
    assert result["output_shapes"] == [[1, 2]]
    assert leftovers(temp_root) == []  # no model copy, no AutoGraph file in the temp folder
    assert model_folders(temp_root) == []  # nor in the workers' own directories


def test_closing_the_engine_removes_its_workers_directories(bases, temp_root):
    from security_support import LIMITS

    from explorer.engine import Engine

    engine = Engine(LIMITS, cache_dir=None)
    try:
        assert engine.inspect(spec_for_path(str(bases / "tiny.keras")), CPU, use_cache=False)["output_shapes"] == [[1, 2]]
        directories = [w.workdir for w in engine.pool.workers()]
        assert directories and model_folders(temp_root) == []
    finally:
        engine.close()
    assert not [d for d in directories if os.path.exists(d)] and leftovers(temp_root) == []


def test_an_engine_killed_outright_leaves_folders_the_next_engine_removes(temp_root):
    """SIGKILL gives a process no chance to clean up: its folders carry its pid, and the next engine on the
    machine removes those of processes that no longer run (and keeps those of processes that do)."""
    import subprocess
    import sys

    from security_support import LIMITS

    from explorer.engine import Engine

    script = ("import sys; from explorer.engine import Engine; from explorer.model.flags import Config; "
              "engine = Engine(cache_dir=None); engine.pool.get(Config.make('cpu', {})); print('ready', flush=True); "
              "sys.stdin.read()")
    proc = subprocess.Popen([sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                            cwd=str(temp_root.parents[0]), env={**os.environ, "PYTHONPATH": os.getcwd()},
                            start_new_session=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        orphans = [p for p in temp_root.iterdir() if p.name.startswith(f"explorer-worker-{proc.pid}-")]
        assert len(orphans) == 1 and (orphans[0] / "stderr.log").exists()
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # the engine and its worker, with no chance to clean up
        proc.wait(30)
    assert orphans[0].exists()  # what SIGKILL leaves
    engine = Engine(LIMITS, cache_dir=None)
    try:
        assert not orphans[0].exists()
        assert engine.inspect({"preset": "matmul_bias_relu", "params": {"m": 4, "k": 4, "n": 4}}, CPU,
                              use_cache=False)["fusions"]
        mine = [p for p in temp_root.iterdir() if p.name.startswith(f"explorer-worker-{os.getpid()}-")]
        assert mine and all(p.exists() for p in mine)  # a live engine's folders stay
        Engine(LIMITS, cache_dir=None).close()  # another engine starting beside it removes nothing of its
        assert all(p.exists() for p in mine)
    finally:
        engine.close()
