"""Real networks exported once per session, and TensorFlow's own account of each (the oracle).

``networks`` exports the SavedModels in a process of its own; ``direct`` runs each serving signature
directly (no explorer code) with oneDNN off and on, in a process per setting.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import pytest

from tests.tf_script import run_tf_script

SCRIPT = Path(__file__).resolve().parent / "networks.py"


def run_script(*args, env=None) -> str:
    return run_tf_script(SCRIPT, *args, env=env, timeout=900)


@pytest.fixture(scope="session")
def script():
    """``networks.py`` run with arguments in a process of its own: its output (``run_script``)."""
    return run_script


@pytest.fixture(scope="session")
def networks(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("networks")
    run_script("export", str(directory))
    return directory


@pytest.fixture(scope="session")
def direct(networks):
    """{"0"|"1" (TF_ENABLE_ONEDNN_OPTS): {network: counts}} from TensorFlow alone."""
    return {flag: json.loads(run_script("direct", str(networks), env={"TF_ENABLE_ONEDNN_OPTS": flag}).splitlines()[-1])
            for flag in ("0", "1")}


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
    fusion report asks for)."""
    cache = {}

    def get(name: str, onednn: str, checked: bool = False, **extra):
        key = (name, onednn, checked, tuple(sorted(extra.items())))
        if key not in cache:
            spec, config = saved_model_spec(networks, name, **extra), {"env": {"TF_ENABLE_ONEDNN_OPTS": onednn}}
            result = get(name, onednn, **extra) if checked else engine.inspect(spec, config)
            cache[key] = engine.check_fixes(spec, config, result) if checked else result
        return cache[key]
    return get
