"""``inspect|bench --experiment FILE`` refused before any process starts (exit 2, one line naming what is wrong);
the runs themselves are in tests/worker/test_cli_experiment.py."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from explorer.model.experiment import Experiment
from tests.security.hostile_graphs import good

ROOT = Path(__file__).resolve().parents[2]


def run(*args):
    return subprocess.run([sys.executable, "-m", "explorer", *args], cwd=ROOT, capture_output=True, text=True,
                          check=False, timeout=120)


@pytest.fixture
def files(tmp_path):
    model = tmp_path / "scaled.pbtxt"
    model.write_bytes(good(3.0))
    other = tmp_path / "other.pbtxt"
    other.write_bytes(good(4.0))
    imported = Experiment(model={"import": {"format": "graphdef", "name": "scaled.pbtxt",
                                            "digest": hashlib.sha256(model.read_bytes()).hexdigest()}})
    preset = Experiment(model={"preset": "matmul_bias_relu"})
    paths = {}
    for name, exp in (("imported", imported), ("preset", preset)):
        paths[name] = tmp_path / f"{name}.json"
        paths[name].write_text(exp.to_json())
    paths["path"] = tmp_path / "path.json"
    data = json.loads(imported.to_json())
    data["model"]["import"]["path"] = str(model)
    paths["path"].write_text(json.dumps(data))
    paths["broken"] = tmp_path / "broken.json"
    paths["broken"].write_text('{"experiment": 1, "model": {"preset": "matmul_bias_relu"}, "bench": {"reps": 0}}')
    return {**paths, "model": model, "other": other}


@pytest.mark.parametrize("args,words", [
    (["inspect", "--experiment", "{preset}", "matmul_bias_relu"], "--experiment: the experiment names its model; "
                                                                  "leave out PRESET"),
    (["bench", "--experiment", "{preset}", "--set", "m=4"], "leave out --set"),
    (["inspect", "--experiment", "{broken}"], "bench.reps: expected a whole number 3..2000, got 0"),
    (["inspect", "--experiment", "{path}"], "model.import.path: an experiment names a model by its content"),
    (["inspect", "--experiment", "{imported}"], "give that file with --model PATH"),
    (["inspect", "--experiment", "{imported}", "--model", "{other}"], "is not the experiment's model: its sha256 is"),
    (["inspect", "--experiment", "{preset}", "--model", "{model}"], "not an imported one; leave --model out"),
    (["inspect", "--experiment", "{preset}", "--env", "TF_USE_CUBLASLT=9"], "env.TF_USE_CUBLASLT"),
    (["inspect", "--experiment", "/no/such/experiment.json"], "cannot read /no/such/experiment.json"),
])
def test_a_wrong_experiment_is_refused_before_anything_runs(files, args, words):
    out = run(*(a.format(**{k: str(v) for k, v in files.items()}) for a in args))
    assert out.returncode == 2, out.stderr
    assert words in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
