"""Real user models for the import tests: made once per session by TensorFlow in a process of its own.

``models`` exports MobileNetV2 (weights=None, 64×64, alpha 0.35) and a small Keras model with
non-zero weights as SavedModel, .keras and frozen GraphDef, plus the malicious models;
``direct_counts`` is the oracle: TensorFlow alone (no explorer code) counting the fused ops and
the unfused contractions of each model's optimized graph, with oneDNN off and on.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.tf_script import run_tf_script, run_tf_scripts

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "make_models.py"


def _tf(*args, env=None) -> str:
    return run_tf_script(SCRIPT, *args, env=env)


@pytest.fixture(scope="session")
def models(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("models")
    _tf("export", str(directory))
    return directory


@pytest.fixture(scope="session")
def unknown_batch_models(tmp_path_factory) -> Path:
    """Two tiny models served with an unknown batch (make_models.unknown_batch), without the big export."""
    directory = tmp_path_factory.mktemp("unknown_batch")
    _tf("unknown-batch", str(directory))
    return directory


@pytest.fixture(scope="session")
def direct_counts(models):
    """{onednn "0"|"1": {model: {format: {fused op or contraction: count}}}} from TensorFlow alone."""
    flags = ("0", "1")  # a process per setting, both at once
    outs = run_tf_scripts(SCRIPT, [(("count-all", str(models)), {"TF_ENABLE_ONEDNN_OPTS": flag}) for flag in flags])
    return {flag: json.loads(out.splitlines()[-1]) for flag, out in zip(flags, outs)}

