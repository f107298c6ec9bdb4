"""`--spec FILE.json` and `stacks` on the command line: real processes, real workers, one-line errors."""

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


def test_stacks_lists_and_prints_the_ready_examples(tmp_path):
    listing = run("stacks")
    assert listing.returncode == 0
    assert all(name in listing.stdout for name in stack_examples.NAMES)
    printed = run("stacks", "transformer_ffn")
    assert printed.returncode == 0 and json.loads(printed.stdout) == stack_examples.example("transformer_ffn")
    layers = run("stacks", "--layers").stdout
    assert "DepthwiseConv2D" in layers and "gelu_approximate" in layers


@pytest.mark.tf
def test_inspect_and_bench_a_stack_file(tmp_path):
    path = tmp_path / "block.json"
    path.write_text(run("stacks", "layout_fp32").stdout)
    out = run("inspect", "--spec", str(path), "--no-cache", "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["spec"] == {"stack": stack_examples.example("layout_fp32")}
    assert len(result["fusions"]) == 2 and all("Conv2D + BiasAdd + Relu" in f["description"] for f in result["fusions"])
    assert "explanation" not in result
    text = run("inspect", "--spec", str(path), "--no-cache", "--export", str(tmp_path / "bundle"))
    assert text.returncode == 0 and "Fusions (traced -> after Grappler)" in text.stdout
    assert json.loads((tmp_path / "bundle" / "stack.json").read_text()) == stack_examples.example("layout_fp32")
    bench = run("bench", "--spec", str(path), "--reps", "3", "--warmup", "1", "--json")
    assert bench.returncode == 0, bench.stderr
    proof = json.loads(bench.stdout)["proof_summary"]
    assert proof["verified"] and any("FusedConv2D" in op for op in proof["fused_nodes"])


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
