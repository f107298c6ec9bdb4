"""``python -m explorer fix`` on a real Keras 3 MobileNetV2, against TensorFlow's own run of the fixed model.

MobileNetV2 (keras.applications, weights=None, 32×32, alpha 0.35, seeded non-zero weights and batch-norm
statistics: ``networks.py``) writes every batch norm as Mul and AddV2, so almost none of its 52
convolutions fuses. ``fix --apply fold-batchnorm`` folds them into the convolutions' weights and biases;
TensorFlow, running the SavedModel it wrote directly (``networks.py direct``, no explorer code), must fuse
more than 30 more kernels. oneDNN on (``TF_ENABLE_ONEDNN_OPTS=1``), on any CPU.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from explorer.cli.fix import JSON_KEYS

ONEDNN = {"TF_ENABLE_ONEDNN_OPTS": "1"}
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def mobilenet(networks):
    return networks  # exported with the session's networks (conftest.EXPORTS)


def total(counts: dict) -> int:
    return sum(n for op, n in counts.items() if op.startswith(("_Fused", "_Mkl")))


def test_fix_folds_mobilenets_batch_norms_and_tensorflow_fuses_them(mobilenet, script):
    out = mobilenet / "mobilenetv2-fixed"
    proc = subprocess.run([sys.executable, "-m", "explorer", "fix", "--model", str(mobilenet / "mobilenetv2"),
                           "--apply", "fold-batchnorm", "--env", "TF_ENABLE_ONEDNN_OPTS=1", "--processes", "2",
                           "--reps", "10", "--out", str(out), "--no-cache", "--json"],
                          cwd=ROOT, capture_output=True, text=True, timeout=900,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout)
    assert tuple(result) == JSON_KEYS
    (applied,) = result["applied"]
    assert applied["fix"] == "fold-batchnorm" and len(applied["chains"]) == 52 and applied["nodes"]
    assert "use_bias=True" in applied["advice"] and applied["left"] == []
    before = sum(r["count"] for r in result["fusions_before"])
    after = sum(r["count"] for r in result["fusions_after"])
    assert after - before > 30
    assert result["max_abs_diff"] <= result["tolerance"] == 1e-3 and result["max_rel_diff"] < 1e-2
    speedup = result["speedup"]
    assert speedup["processes"] == 2 and speedup["ci_low"] <= speedup["estimate"] <= speedup["ci_high"]
    assert result["per_fix"][0]["fix"] == "fold-batchnorm" and result["per_fix"][0]["speedup"] == speedup
    ranked = result["near_misses_ranked"]
    assert len(ranked) == 52 and all(m["fixed_by"] == ["fold-batchnorm"] for m in ranked)
    times = [m["time_ms"] for m in ranked]
    assert times == sorted(times, reverse=True) and times[-1] > 0
    assert 0 < sum(m["share"] for m in ranked) <= 1
    assert result["bytes_saved"] > 0
    # The fixed model is a SavedModel (its weights stay variables) that TensorFlow itself fuses as reported.
    assert result["model_out"] == str(out) and (out / "saved_model.pb").is_file()
    direct = json.loads(script("direct", str(mobilenet), "mobilenetv2", out.name, env=ONEDNN).splitlines()[-1])
    fixed, original = direct[out.name], direct["mobilenetv2"]
    assert total(fixed["fused"]) == after and total(fixed["fused"]) - total(original["fused"]) > 30
    assert not fixed["unfused"].get("Conv2D") and not fixed["unfused"].get("DepthwiseConv2dNative")
