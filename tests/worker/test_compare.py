"""A against B on the command line: the model as served under one setting against another, replicated over rounds
of fresh worker processes (real workers), and the wrong requests refused in one line before anything runs."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SMALL = ["matmul_bias_relu", "--set", "m=64", "--set", "k=32", "--set", "n=16"]


def run(*args):
    return subprocess.run([sys.executable, "-m", "explorer", *args], cwd=ROOT, capture_output=True, text=True,
                          check=False, timeout=600)


def test_onednn_on_against_off_for_one_model():
    out = run("compare", *SMALL, "--env", "TF_ENABLE_ONEDNN_OPTS=1", "--b", "TF_ENABLE_ONEDNN_OPTS=0",
              "--processes", "2", "--reps", "5", "--warmup", "1", "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["a"]["config"]["env"] == {"TF_ENABLE_ONEDNN_OPTS": "1"}
    assert result["b"]["config"]["env"] == {"TF_ENABLE_ONEDNN_OPTS": "0"}
    assert len(result["samples_ns"]["A"]) == len(result["samples_ns"]["B"]) == 2  # a fresh process per side, per round
    # what each side ran: oneDNN's fused MatMul with it on, TensorFlow's own without
    assert all(p["executed_ops"] == ["_MklNativeFusedMatMul"] for p in result["proof"]["A"])
    assert all(p["executed_ops"] == ["_FusedMatMul"] for p in result["proof"]["B"])
    sp = result["speedup"]
    assert sp["mode"] == "replicated" and sp["n_processes"] == 2 and sp["ci_low"] <= sp["estimate"] <= sp["ci_high"]
    ratio = [a / b for a, b in ((p["a_median_ms"], p["b_median_ms"]) for p in result["per_process"])]
    assert sp["per_process_speedup"] == pytest.approx(ratio, rel=1e-6)  # median(A) / median(B): B's speedup
    words = run("compare", *SMALL, "--b", "remapping=off", "--processes", "1", "--reps", "5", "--warmup", "1")
    assert words.returncode == 0, words.stderr
    assert "A against B: remapping: default → off" in words.stdout
    assert "in this one process (quick run)" in words.stdout or "no measurable difference" in words.stdout \
        or "too few samples" in words.stdout


@pytest.mark.parametrize("args,words", [
    (["--b", "NOPE=1"], "--b: 'NOPE' is neither an env flag"),
    (["--b", "TF_ENABLE_ONEDNN_OPTS=0,1"], "--b: TF_ENABLE_ONEDNN_OPTS: B takes one value"),
    (["--env", "TF_ENABLE_ONEDNN_OPTS=0", "--b", "TF_ENABLE_ONEDNN_OPTS=0"], "A and B are the same model"),
    (["--b", "device=gpu-sim"], "a simulated GPU cannot show timings of A against B"),
])
def test_wrong_requests_are_refused_in_one_line(args, words):
    out = run("compare", *SMALL, *args)
    assert out.returncode == 2 and words in out.stderr and len(out.stderr.strip().splitlines()) == 1, out.stderr
