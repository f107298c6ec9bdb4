"""The exported script reproduces the run: run it for real, in a fresh interpreter, and compare its fused ops
with what the engine found for the same spec and configuration.

Marked ``tf``: every case starts a TensorFlow process for the script (a few seconds each).
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import zipfile
from collections import Counter

import pytest

from explorer.analysis.fusion import is_fused_node
from explorer.model.graph import Graph
from explorer.present import repro

pytestmark = pytest.mark.tf

SMALL_MATMUL = {"m": 64, "k": 32, "n": 16}
SMALL_CONV = {"batch": 1, "height": 8, "width": 8, "in_channels": 4, "out_channels": 4}

SPECS = {
    "matmul_gelu_exact": {"preset": "matmul_bias_gelu_exact", "params": SMALL_MATMUL},
    "conv2d_bias_relu": {"preset": "conv2d_bias_relu", "params": SMALL_CONV},
    "conv2d_batchnorm_relu": {"preset": "conv2d_batchnorm_relu", "params": SMALL_CONV},
    "conv2d_squeeze_bias": {"preset": "conv2d_squeeze_bias",
                            "params": {"batch": 1, "height": 16, "width": 1, "in_channels": 4, "out_channels": 4}},
    "layer_norm": {"preset": "layer_norm", "params": {"m": 64, "n": 16}},
    # a custom chain with a playground knob: the BiasAdd output is also returned
    "chain_conv_relu6_return_bias": {
        "chain": {"contraction": "Conv2D", "bias": "BiasAdd", "activation": "Relu6"},
        "params": dict(SMALL_CONV, filter_size=3, return_intermediate="bias"),
    },
}
CONFIGS = {
    "default": {"device": "cpu"},
    "onednn_off": {"device": "cpu", "env": {"TF_ENABLE_ONEDNN_OPTS": "0"}},
}
ONEDNN_ON = {"device": "cpu", "env": {"TF_ENABLE_ONEDNN_OPTS": "1"}}  # on is not every CPU's default


def fused(graph_dict: dict) -> Counter:
    """(op, fused_ops) of every fused node of a stage, as the explorer sees them."""
    graph = Graph.from_dict(graph_dict)
    return Counter((n.op, tuple(n.fused_ops)) for n in graph.nodes if is_fused_node(n))


def run_script(path, *args) -> tuple[dict, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TF_", "EXPLORER_"))}
    proc = subprocess.run([sys.executable, str(path), *args], cwd=path.parent, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, f"the script failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}"
    marked = [ln for ln in proc.stdout.splitlines() if ln.startswith(repro.JSON_MARK)]
    assert marked, proc.stdout
    return json.loads(marked[-1][len(repro.JSON_MARK):]), proc.stdout + proc.stderr


def as_counter(items: list[dict]) -> Counter:
    return Counter((i["op"], tuple(i["fused_ops"])) for i in items)


@pytest.mark.parametrize("config_id", list(CONFIGS))
@pytest.mark.parametrize("spec_id", list(SPECS))
def test_script_prints_the_fused_ops_the_engine_found(engine, tmp_path, spec_id, config_id):
    spec, config = SPECS[spec_id], CONFIGS[config_id]
    result = engine.inspect(spec, config, use_cache=False)
    path = tmp_path / "repro.py"
    path.write_text(repro.script(spec, config))
    found, output = run_script(path)
    expected = fused(result["stages"]["optimized"])
    assert as_counter(found["optimized"]) == expected, output
    assert as_counter(found["executed"]) == fused(result["stages"]["executed"]), output
    # the same graphs, not only the same fused nodes (which may be none at all: LayerNorm without oneDNN)
    for title, stage in (("After Grappler", "optimized"), ("As executed", "executed")):
        shown = re.search(rf"^{title} \(.*\): (\d+) nodes, (\d+) fused$", output, re.M)
        assert shown, output
        assert int(shown.group(1)) == len(result["stages"][stage]["nodes"]), (stage, output)


def test_bundle_script_runs_and_writes_the_three_graphs(engine, tmp_path):
    spec = {"preset": "matmul_bias_gelu_approx", "params": SMALL_MATMUL}
    result = engine.inspect(spec, ONEDNN_ON)
    with zipfile.ZipFile(io.BytesIO(repro.bundle(result))) as archive:
        archive.extractall(tmp_path)
    assert {"repro.py", "traced.pbtxt", "optimized.pbtxt", "executed.pbtxt", "summary.json"} <= {
        p.name for p in tmp_path.iterdir()}
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["explanation"]["verdict"] == "fused"
    out_dir = tmp_path / "mine"
    found, output = run_script(tmp_path / "repro.py", "--pbtxt-dir", str(out_dir))
    assert as_counter(found["optimized"]) == Counter({("_FusedMatMul", ("BiasAdd", "GeluApproximate")): 1})
    for stage in ("traced", "optimized", "executed"):
        text = (out_dir / f"{stage}.pbtxt").read_text()
        assert text.startswith("node {"), stage
    assert "_FusedMatMul" in (out_dir / "optimized.pbtxt").read_text()
    # the remapper's own lines reach the user (TF_CPP_VMODULE=remapper=2 set before the import): its first
    # pass fuses MatMul+BiasAdd, the second folds the GELU in
    assert "Fuse MatMul with BiasAdd" in output
