"""Catalogue coverage as measured by benchmarks/coverage.py: which rows fuse, per mode."""

from __future__ import annotations

import json
from pathlib import Path

OUTPUT = Path(__file__).resolve().parent / "coverage.json"
GPU_FLAGS = {"TF_USE_CUBLASLT": "1", "TF_CUDNN_USE_RUNTIME_FUSION": "1", "TF_USE_CUDNN_BATCHNORM_SPATIAL_PERSISTENT": "1"}
# mode -> (device, env flags)
MODES = {
    "cpu-onednn": ("cpu", {"TF_ENABLE_ONEDNN_OPTS": "1"}),
    "cpu-stock": ("cpu", {"TF_ENABLE_ONEDNN_OPTS": "0"}),
    "gpu-sim": ("gpu-sim:ampere", GPU_FLAGS),
}
TOTAL_ROWS = 30
# What a preset needs on a GPU beyond its CPU defaults (cuDNN: a spatial filter; runtime fusion and
# persistent batch norm: float16). The GPU coverage column runs with these.
_CONV3 = {"filter_size": 3}
GPU_PARAMS = {
    "conv2d_bias_relu": _CONV3, "conv2d_bias": _CONV3, "conv2d_batchnorm_relu": _CONV3, "conv2d_batchnorm": _CONV3,
    "matmul_bias_gelu_exact": {"dtype": "float16"}, "matmul_bias_tanh": {"dtype": "float16"},
    "batchnorm_grad_relu": {"dtype": "float16"}, "batchnorm_add_relu": {"dtype": "float16"},
}


def load() -> dict | None:
    try:
        return json.loads(OUTPUT.read_text())
    except (OSError, ValueError):
        return None


def summary(data: dict) -> dict[str, int]:
    """Catalogue rows with at least one preset fused as catalogued, per mode."""
    out = {}
    for mode in MODES:
        rows = {r for pid, st in data["table"].items() if st.get(mode) == "fused" for r in data["rows"].get(pid, ())}
        out[mode] = len(rows)
    return out
