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


def test_presets_lists_every_preset_and_the_coverage():
    out = run("presets", "--json")
    assert out.returncode == 0
    data = json.loads(out.stdout)
    ids = {p["id"] for p in data["presets"]}
    assert {"matmul_bias_gelu_approx", "conv2d_bias_relu", "batchnorm_add_relu"} <= ids
    assert data["coverage"]["total_rows"] == 30 and data["coverage"]["rows_fused"]["cpu-onednn"] > 20
    text = run("presets").stdout
    assert "Coverage of the remapper catalogue" in text and "cpu-stock" in text


@pytest.mark.parametrize("args,words", [
    (["inspect", "nope"], "unknown preset"),
    (["inspect", "matmul_bias_relu", "--set", "m=-1"], "params.m"),
    (["inspect", "matmul_bias_relu", "--env", "TF_BOGUS=1"], "env.TF_BOGUS"),
    (["inspect", "matmul_bias_relu", "--set", "m"], "NAME=VALUE"),
    (["inspect", "matmul_bias_relu", "--device", "tpu"], "device"),
    (["bench", "matmul_bias_relu", "--reps", "1"], "reps"),
    (["bench", "matmul_bias_relu", "--device", "gpu-sim"], "nothing to time"),
    (["inspect"], "required"),
])
def test_bad_arguments_exit_non_zero_with_one_line(args, words):
    out = run(*args)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], out.stderr


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
