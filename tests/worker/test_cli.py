"""The command line as scripts use it: real processes, real workers, stable names and exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run(*args, timeout=300, env=None):
    return subprocess.run([sys.executable, "-m", "explorer", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env=None if env is None else {**os.environ, **env})


@pytest.mark.tf
def test_inspect_json_and_export(tmp_path):
    out = run("inspect", "matmul_bias_gelu_approx", "--set", "m=64", "--set", "k=32", "--set", "n=16",
              "--env", "TF_ENABLE_ONEDNN_OPTS=1", "--no-cache", "--json", "--export", str(tmp_path))
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert set(result["stages"]) == {"traced", "optimized", "executed"}
    assert result["fusions"][0]["fused_ops"] == ["BiasAdd", "GeluApproximate"]
    assert result["explanation"]["verdict"] == "fused"
    assert {"repro.py", "traced.pbtxt", "optimized.pbtxt", "executed.pbtxt", "summary.json"} <= {
        p.name for p in tmp_path.iterdir()}


@pytest.mark.tf
def test_bench_prints_the_comparison():
    out = run("bench", "matmul_bias_relu", "--set", "m=256", "--reps", "5", "--warmup", "1")
    assert out.returncode == 0, out.stderr
    assert "speedup" in out.stdout and "fused ran:" in out.stdout and "proof: verified" in out.stdout
    header = out.stdout.splitlines()[0]
    assert header.startswith("TensorFlow 2.") and " cores · oneDNN " in header and "interleaved reps" in header


@pytest.mark.tf
def test_gpu_without_a_gpu_fails_with_the_reason():
    # Hidden from the GPU worker (it keeps the caller's CUDA_VISIBLE_DEVICES): no GPU on any machine.
    out = run("inspect", "matmul_bias_relu", "--set", "m=64", "--device", "gpu", "--no-cache",
              env={"CUDA_VISIBLE_DEVICES": "-1"})
    assert out.returncode == 1 and "No GPU" in out.stderr


@pytest.mark.tf
def test_lessons_check_says_which_steps_hold_here(tmp_path):
    lesson = {"lesson": 1, "id": "check-me", "title": "Two claims", "steps": [
        {"title": "true", "experiment": "preset=matmul_bias_relu&m=64&k=32&n=16&TF_ENABLE_ONEDNN_OPTS=0",
         "text": "It fuses.", "expect": {"made": ["_FusedMatMul [BiasAdd, Relu]"], "verdict": "fused"}},
        {"title": "false", "experiment": "preset=matmul_bias_relu&m=64&k=32&n=16&TF_ENABLE_ONEDNN_OPTS=0&off=remapping",
         "text": "It fuses (it does not: the remapper is off).", "expect": {"fusions": 1}}]}
    path = tmp_path / "check-me.json"
    path.write_text(json.dumps(lesson))
    out = run("lessons", str(path), "--check", "--json", "--no-cache")
    assert out.returncode == 1, out.stderr  # one step does not hold
    steps = json.loads(out.stdout)["steps"]
    assert steps[0]["holds"] and steps[0]["made"] == ["_FusedMatMul [BiasAdd, Relu]"]
    assert not steps[1]["holds"] and steps[1]["problems"] == ["it says 1 fusion; Grappler made 0"]
