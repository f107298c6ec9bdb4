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
