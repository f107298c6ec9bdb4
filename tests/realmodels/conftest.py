"""Real networks exported once per session, and TensorFlow's own account of each (the oracle).

``networks`` exports the SavedModels in processes of their own (two at once: each is mostly one core's
tracing); ``direct`` runs each serving signature directly (no explorer code) with oneDNN off and on, in a
process per setting, both at once.
"""

from __future__ import annotations

import hashlib
import json
import os
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.tf_script import run_tf_script, run_tf_scripts
from tests.realmodels.networks import NETWORKS

SCRIPT = Path(__file__).resolve().parent / "networks.py"


def run_script(*args, env=None) -> str:
    return run_tf_script(SCRIPT, *args, env=env, timeout=900)


@pytest.fixture(scope="session")
def script():
    """``networks.py`` run with arguments in a process of its own: its output (``run_script``)."""
    return run_script


# The exports split in two of about the same time (the large networks take ~20 s each, the MobileNets ~12 s,
# on a loaded 2-core machine); mobilenetv2 is test_fixes' model.
EXPORTS = (("resnet50", "efficientnetb0", "transformer", "oldstyle"), ("convnexttiny", "mobilenetv3small", "mobilenetv2"))


@pytest.fixture(scope="session")
def networks(tmp_path_factory) -> Path:
    """The directory holding a SavedModel of each of NETWORKS and of mobilenetv2."""
    assert set(NETWORKS) <= {name for names in EXPORTS for name in names}
    directory = tmp_path_factory.mktemp("networks")
    run_tf_scripts(SCRIPT, [(("export", directory, *names), None) for names in EXPORTS], timeout=900)
    return directory


@pytest.fixture(scope="session")
def direct(networks):
    """{"0"|"1" (TF_ENABLE_ONEDNN_OPTS): {network: counts}} from TensorFlow alone, for each of NETWORKS."""
    flags = ("0", "1")
    outs = run_tf_scripts(SCRIPT, [(("direct", networks, *NETWORKS), {"TF_ENABLE_ONEDNN_OPTS": flag}) for flag in flags],
                          timeout=900)
    return {flag: json.loads(out.splitlines()[-1]) for flag, out in zip(flags, outs)}


def saved_model_spec(directory: Path, name: str, **extra) -> dict:
    digest = hashlib.sha256()
    for root, _, files in sorted(os.walk(directory / name)):
        for file in sorted(files):
            digest.update(Path(root, file).read_bytes())
    return {"import": {"format": "savedmodel", "digest": digest.hexdigest(), "path": str(directory / name),
                       "name": name, **extra}}


@pytest.fixture(scope="session")
def inspected(engine, networks):
    """inspected(network, onednn "0"|"1", checked=False, **import options) -> the engine's result, computed once;
    ``checked``: with its near-misses' setting-fixes settled by running them (``Engine.check_fixes``, what the
    fusion report asks for).

    The first call asks for every network as served under both settings: a thread per setting, each in
    NETWORKS' order on that setting's worker, so the two workers (and both cores) inspect at once; a call
    waits for its own result."""
    cache = {}
    threads = {flag: ThreadPoolExecutor(1) for flag in ("0", "1")}

    def inspect(name: str, onednn: str, **extra):
        spec, config = saved_model_spec(networks, name, **extra), {"env": {"TF_ENABLE_ONEDNN_OPTS": onednn}}
        return engine.inspect(spec, config)

    def get(name: str, onednn: str, checked: bool = False, **extra):
        if not cache:
            for network in NETWORKS:
                for flag, thread in threads.items():
                    cache[(network, flag, False, ())] = thread.submit(inspect, network, flag)
        key = (name, onednn, checked, tuple(sorted(extra.items())))
        if key not in cache:
            spec, config = saved_model_spec(networks, name, **extra), {"env": {"TF_ENABLE_ONEDNN_OPTS": onednn}}
            result = get(name, onednn, **extra) if checked else engine.inspect(spec, config)
            cache[key] = done(engine.check_fixes(spec, config, result) if checked else result)
        return cache[key].result()

    yield get
    for thread in threads.values():
        thread.shutdown(cancel_futures=True)


def done(result) -> Future:
    future = Future()
    future.set_result(result)
    return future
