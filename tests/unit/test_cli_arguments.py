"""The command line's answers that need no worker: the catalogue, the ready stacks, and bad arguments
refused before any process starts (exit status 2, one line naming what is wrong).

Moved from tests/worker (issue 21): they run ``python -m explorer`` in a subprocess but start no TensorFlow.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from explorer.model import stack_examples

ROOT = Path(__file__).resolve().parents[2]


def run(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "explorer", *args], cwd=ROOT, capture_output=True, text=True,
                          check=False, timeout=timeout)


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
    # issue 32: bench on a simulated GPU answers with a prediction; a benchmark that must time XLA still cannot
    (["bench", "matmul_bias_relu", "--device", "gpu-sim", "--compiler", "xla"], "nothing to time"),
    (["inspect"], "required"),
    (["fix"], "the following arguments are required: --model"),
    (["fix", "--model", "no/such/dir"], "no such file or directory"),
    (["fix", "--model", str(ROOT / "README.md"), "--apply", "fold"], "--apply: no fix 'fold'; the fixes are"),
    (["fix", "--model", str(ROOT / "README.md"), "--device", "gpu-sim"], "--device: 'gpu-sim'"),
    (["fix", "--model", str(ROOT / "README.md"), "--processes", "0"], "processes"),
    (["matrix", "--vary", "remapping=on,off"], "--presets: give at least one preset id, or your own model with --model"),
    (["matrix", "--presets", "matmul_bias_relu", "--dim", "4"], "--dim: only applies with --model PATH"),
    (["matrix", "--model", "no/such/dir"], "no such file or directory"),
])
def test_bad_arguments_exit_non_zero_with_one_line(args, words):
    out = run(*args)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], out.stderr


def test_stacks_lists_and_prints_the_ready_examples(tmp_path):
    listing = run("stacks")
    assert listing.returncode == 0
    assert all(name in listing.stdout for name in stack_examples.NAMES)
    printed = run("stacks", "transformer_ffn")
    assert printed.returncode == 0 and json.loads(printed.stdout) == stack_examples.example("transformer_ffn")
    layers = run("stacks", "--layers").stdout
    assert "DepthwiseConv2D" in layers and "gelu_approximate" in layers


def _bad_field(tmp_path):
    data = stack_examples.example("resnet_basic_block")
    data["layers"][0]["layers"][3]["filters"] = -2
    path = tmp_path / "bad_field.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize("case,words,command", [
    ("neither", "PRESET: required", "inspect"),
    ("neither", "PRESET: required", "bench"),
    ("both", "either PRESET (matmul_bias_relu) or --spec", "inspect"),
    ("missing", "cannot read", "inspect"),
    ("bad_json", "is not valid JSON: Expecting", "bench"),
    ("bad_field", "layers[0] (basic).layers[3]: filters: expected a whole number 1..4096, got -2", "inspect"),
    ("bad_field", "layers[0] (basic).layers[3]: filters: expected a whole number 1..4096, got -2", "bench"),
    ("set", "--set: does not apply to a layer stack", "inspect"),
    ("unknown_stack", "no ready stack 'nope'", "stacks"),
])
def test_bad_spec_files_exit_2_with_one_line(tmp_path, case, words, command):
    bad_json = tmp_path / "bad.json"
    bad_json.write_text('{"input": {"shape": [1, 4]},\n "layers": [}')
    good = tmp_path / "good.json"
    good.write_text(json.dumps(stack_examples.example("arithmetic_pow")))
    args = {
        "neither": [command],
        "both": [command, "matmul_bias_relu", "--spec", str(good)],
        "missing": [command, "--spec", str(tmp_path / "absent.json")],
        "bad_json": [command, "--spec", str(bad_json)],
        "bad_field": [command, "--spec", str(_bad_field(tmp_path))],
        "set": [command, "--spec", str(good), "--set", "m=3"],
        "unknown_stack": ["stacks", "nope"],
    }[case]
    out = run(*args)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], out.stderr


def test_lessons_lists_the_lessons_and_refuses_a_bad_file_naming_the_field(tmp_path):
    out = run("lessons", "--json")
    assert out.returncode == 0, out.stderr
    assert {"gelu-fusion", "fused-ops", "conv-bias-relu", "xla-gelu", "keras3-batchnorm"} <= {
        row["id"] for row in json.loads(out.stdout)}
    steps = run("lessons", "gelu-fusion")
    assert steps.returncode == 0 and "preset=matmul_bias_gelu_approx&device=gpu-sim:ampere&TF_USE_CUBLASLT=1" in steps.stdout
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"lesson": 1, "id": "x", "title": "t", "steps": [
        {"title": "a", "experiment": "preset=matmul_bias_relu", "text": "b", "look": {"tab": "nowhere!"}}]}))
    out = run("lessons", str(bad), "--check")
    assert out.returncode == 2 and out.stderr.strip().startswith("explorer: error: steps[0].look.tab:")
    assert len(out.stderr.strip().splitlines()) == 1
    assert run("lessons", "no-such-lesson").returncode == 2
