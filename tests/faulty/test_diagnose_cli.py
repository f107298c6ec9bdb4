"""``python -m explorer diagnose`` on corpus models: exit status, the JSON keys, and the repro it writes, which
fails the same way when run in a fresh process (TensorFlow alone)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from explorer.cli.diagnose import JSON_KEYS
from tests.faulty.corpus import entries, cli_args

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BY_NAME = {e["name"]: e for e in entries()}


def _cli(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "explorer", "diagnose", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.parametrize("name", ["chain_conv2d_bias_add_mish", "import_conv_bn_tanh"])
def test_diagnose_json_and_repro(tmp_path, faulty_models, name):
    entry = BY_NAME[name]
    repro = tmp_path / "repro.py"
    done = _cli(*cli_args(entry, faulty_models), "--env", "TF_ENABLE_ONEDNN_OPTS=1", "--no-ways", "--json",
                "--repro", str(repro))
    assert done.returncode == 1, done.stderr[-2000:]
    out = json.loads(done.stdout)
    assert set(out) == set(JSON_KEYS)
    assert out["verdict"]["fault"] == "fails"
    assert out["pinned"]["node"] == entry["node"] and out["pinned"]["reproduces"]
    assert out["repro"] == {"path": str(repro), "reproduces": True}
    text = repro.read_text()
    assert "import explorer" not in text and "from explorer" not in text  # TensorFlow alone
    assert "TF_ENABLE_ONEDNN_OPTS" in text and "TensorFlow 2." in text and "CPU:" in text
    env = {k: v for k, v in os.environ.items() if not k.startswith("TF_")}
    fresh = subprocess.run([sys.executable, str(repro)], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                           env=dict(env, TF_CPP_MIN_LOG_LEVEL="2", CUDA_VISIBLE_DEVICES="-1"))
    assert fresh.returncode == 1, fresh.stderr[-2000:]
    assert "FAULT: the fused graph fails: UnimplementedError: Fusion is not implemented" in fresh.stdout


def test_diagnose_text_with_ways(tmp_path):
    done = _cli(*cli_args(BY_NAME["chain_conv2d_bn_tanh"]), "--env", "TF_ENABLE_ONEDNN_OPTS=1", "--reps", "3")
    assert done.returncode == 1, done.stderr[-2000:]
    lines = done.stdout.splitlines()
    assert lines[0].startswith("FUSION BREAKS THE MODEL: ")
    assert "Fused node responsible: Tanh  _FusedConv2D [FusedBatchNorm, Tanh]" in done.stdout
    assert "FindConv2DWithBatchNormAndActivation" in done.stdout
    assert "the remapper off for this model: runs and agrees" in done.stdout
    assert "oneDNN off (TF_ENABLE_ONEDNN_OPTS=0): runs and agrees" in done.stdout


def test_diagnose_agreeing_model_exits_0_and_bad_input_is_one_line():
    done = _cli("matmul_bias_relu", "--set", "m=64", "--no-ways")
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("The fused graph runs and agrees with the unfused one.")
    bad = _cli("matmul_bias_relu", "--reps", "0")
    assert bad.returncode == 2 and bad.stderr.strip().count("\n") == 0 and "--reps" in bad.stderr
