"""`--spec FILE.json` and `stacks` on the command line: real processes, real workers, one-line errors."""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from explorer.model import stack_examples

ROOT = Path(__file__).resolve().parents[2]


def run(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "explorer", *args], cwd=ROOT, capture_output=True, text=True,
                          check=False, timeout=timeout)


@pytest.mark.tf
def test_inspect_and_bench_a_stack_file(tmp_path):
    path = tmp_path / "block.json"
    path.write_text(run("stacks", "layout_fp32").stdout)
    commands = (("inspect", "--spec", str(path), "--no-cache", "--json"),
                ("inspect", "--spec", str(path), "--no-cache", "--export", str(tmp_path / "bundle")))
    with ThreadPoolExecutor(2) as pool:  # inspections, no timing: both commands at once
        out, text = pool.map(lambda args: run(*args), commands)
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["spec"] == {"stack": stack_examples.example("layout_fp32")}
    assert len(result["fusions"]) == 2 and all("Conv2D + BiasAdd + Relu" in f["description"] for f in result["fusions"])
    assert "explanation" not in result
    assert text.returncode == 0 and "Fusions (traced -> after Grappler)" in text.stdout
    assert json.loads((tmp_path / "bundle" / "stack.json").read_text()) == stack_examples.example("layout_fp32")
    bench = run("bench", "--spec", str(path), "--reps", "3", "--warmup", "1", "--json")
    assert bench.returncode == 0, bench.stderr
    proof = json.loads(bench.stdout)["proof_summary"]
    assert proof["verified"] and any("FusedConv2D" in op for op in proof["fused_nodes"])


@pytest.mark.tf
def test_what_onednn_fuses_after_grappler_is_listed(tmp_path):
    # ResNet's stem with oneDNN on: Grappler fuses the conv with its bias; oneDNN's layout pass then folds the
    # explicit Pad before it into the kernel, which the traced -> after Grappler list cannot show
    path = tmp_path / "stem.json"
    path.write_text(run("stacks", "resnet_stem").stdout)
    out = run("inspect", "--spec", str(path), "--env", "TF_ENABLE_ONEDNN_OPTS=1", "--no-cache")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    at = lines.index("Fused when executed (after Grappler, by oneDNN's layout pass):")
    assert lines[at + 1] == "  Pad + _FusedConv2D → _MklNativePadWithFusedConv2D [BiasAdd]", lines[at:at + 3]
    # and the check says what it cannot see: the reference (remapper off) folds the Pad the same way
    assert any(line.startswith("  note: oneDNN's own fusions when executed (Pad + _FusedConv2D") for line in lines)
    off = run("inspect", "--spec", str(path), "--env", "TF_ENABLE_ONEDNN_OPTS=0", "--no-cache")
    assert off.returncode == 0 and "Fused when executed" not in off.stdout and "note:" not in off.stdout, off.stdout
