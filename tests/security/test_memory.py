"""The workers' memory caps, summed over the workers the server allows, fit the machine; starts wait for room.

Finding 9 of issue 20: up to 4 workers × a 6 GiB cap was more than a 24 GiB machine, and a fifth
configuration started a worker beyond the pool's size when every worker was busy.
"""

from __future__ import annotations

import threading
import time

import pytest

from explorer.engine import Engine
from explorer.engine.runner import Limits
from explorer.model.flags import Config

GiB = 1 << 30
TINY = {"preset": "matmul_bias_relu", "params": {"m": 2, "k": 2, "n": 2}}


def machine_bytes() -> int:
    with open("/proc/meminfo") as handle:
        return next(int(line.split()[1]) * 1024 for line in handle if line.startswith("MemTotal:"))


def test_the_default_caps_of_every_worker_together_fit_the_machine():
    limits = Limits()
    total = machine_bytes()
    assert limits.memory_bytes * limits.max_workers <= 0.8 * total, (limits.memory_bytes / GiB, total / GiB)
    assert limits.memory_budget <= 0.8 * total
    assert limits.memory_bytes >= min(2 * GiB, total // 8)  # and a worker still has room for a real model


@pytest.mark.tf
def test_a_worker_starts_only_while_its_cap_fits_the_budget(temp_root):
    """Three configurations at once and room for two workers: the third waits, then takes an idle one's place."""
    limits = Limits(memory_bytes=int(1.5 * GiB), max_workers=2, inspect_s=120.0)
    engine = Engine(limits, cache_dir=None)
    configs = [Config.make("cpu", env) for env in ({}, {"TF_ENABLE_ONEDNN_OPTS": "0"}, {"TF_ENABLE_ONEDNN_OPTS": "1"})]
    results, errors, live = {}, [], [0]
    done = threading.Event()

    def watch() -> None:
        while not done.is_set():
            live[0] = max(live[0], sum(1 for w in engine.pool.workers() if w.alive()))
            time.sleep(0.02)

    def inspect(config) -> None:
        try:
            results[config.process_key()] = engine.inspect(TINY, config, use_cache=False)
        except Exception as exc:  # noqa: BLE001 - collected for the assertion below
            errors.append(exc)

    watcher = threading.Thread(target=watch)
    watcher.start()
    threads = [threading.Thread(target=inspect, args=(c,)) for c in configs]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(600)
    finally:
        done.set()
        watcher.join()
        engine.close()
    assert not errors, errors
    assert len(results) == 3 and all(r["fusions"] for r in results.values())
    assert live[0] <= 2, live[0]
    assert engine.pool.memory.peak <= 3 * GiB and engine.pool.memory.held == 0  # closed: every share given back
