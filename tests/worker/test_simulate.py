"""The GPU simulation (explorer/worker/simulate.py), each case in a fresh Python process.

TensorFlow reads TF_USE_CUBLASLT, TF_ENABLE_ONEDNN_OPTS ... once per process, and the remapper
caches its cuDNN runtime-fusion decision from the first GPU it sees, so every case gets its own
process with its own environment, as a gpu-sim worker would. CPU only: no GPU is needed.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.tf

ROOT = Path(__file__).resolve().parents[2]
TF_FLAGS = ("TF_USE_CUBLASLT", "TF_CUDNN_USE_RUNTIME_FUSION", "TF_USE_CUDNN_BATCHNORM_SPATIAL_PERSISTENT",
            "TF_ENABLE_ONEDNN_OPTS", "TF_CUDNN_USE_FRONTEND", "TF_XLA_FLAGS", "TF_CPP_VMODULE")

DRIVER = r"""
import json, sys
import tensorflow as tf
from explorer.worker import simulate
from explorer.worker.convert import graph_to_dict

req = json.loads(sys.argv[1])
if req.get("one_iteration"):
    from tensorflow.core.protobuf import rewriter_config_pb2
    make = simulate.rewriter_config
    def one(switches, remapping=None):
        config, ignored = make(switches, remapping)
        config.graph_options.rewrite_options.meta_optimizer_iterations = rewriter_config_pb2.RewriterConfig.ONE
        return config, ignored
    simulate.rewriter_config = one
if req.get("feeds_as_placeholders"):
    simulate.with_shaped_args = lambda graph_def, tf: graph_def
to_dict = lambda graph_def, stage: graph_to_dict(graph_def, stage, tf)
out = simulate.simulate(req["spec"], req.get("grappler", {}), req.get("profile", "ampere"), tf, to_dict,
                        place_on=req.get("place_on", "GPU"))
sys.stdout.write("\nSIMULATION " + json.dumps(out) + "\n")
"""

MATMUL = {"m": 32, "k": 16, "n": 8}
CONV = {"batch": 2, "height": 6, "width": 6, "in_channels": 4, "out_channels": 4, "filter_size": 3}


def run(spec, env=None, **request):
    """simulate(spec, ...) in a fresh process whose environment has exactly ``env`` as TF flags."""
    environ = {k: v for k, v in os.environ.items() if k not in TF_FLAGS}
    environ.update({"TF_CPP_VMODULE": "remapper=2,meta_optimizer=4", "TF_CPP_MIN_LOG_LEVEL": "0",
                    "PYTHONPATH": str(ROOT)})
    environ.update(env or {})
    request["spec"] = spec
    proc = subprocess.run([sys.executable, "-c", DRIVER, json.dumps(request)], cwd=ROOT, env=environ,
                          capture_output=True, text=True, timeout=300)
    for line in proc.stdout.splitlines():
        if line.startswith("SIMULATION "):
            return json.loads(line[len("SIMULATION "):])
    raise AssertionError(f"simulation failed (exit {proc.returncode}):\n{proc.stderr[-3000:]}")


def compute_ops(graph) -> list[str]:
    return [n["op"] for n in graph["nodes"] if n["op"] not in ("Const", "Placeholder", "Identity")]


def fused(graph) -> list[tuple[str, list[str]]]:
    return [(n["op"], n["fused_ops"]) for n in graph["nodes"] if n["op"].startswith("_Fused")]


NO_ONEDNN = {"TF_ENABLE_ONEDNN_OPTS": "0"}


def test_gelu_approximate_keeps_pow_on_the_gpu_and_becomes_square_on_the_cpu():
    # Arithmetic optimizer, ConvertPowStage: Pow(x, 3) -> Square(x)*x only when NodeIsOnCpu.
    spec = {"preset": "matmul_bias_gelu_approx", "params": MATMUL}
    gpu = run(spec, NO_ONEDNN)
    cpu = run(spec, NO_ONEDNN, place_on="CPU")
    assert gpu["simulated"] is True and gpu["limits"]
    assert "Pow" in compute_ops(gpu["unfused_optimized"]) and "Square" not in compute_ops(gpu["unfused_optimized"])
    assert "Square" in compute_ops(cpu["unfused_optimized"]) and "Pow" not in compute_ops(cpu["unfused_optimized"])
    # Without TF_USE_CUBLASLT the GPU fuses nothing here, so Pow is also in the optimized graph.
    assert fused(gpu["stages"]["optimized"]) == []
    assert "Pow" in compute_ops(gpu["stages"]["optimized"])


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_cublaslt_fuses_matmul_bias_and_the_approximate_gelu(dtype):
    # Two meta-optimizer iterations (TF's default): pass 1 makes _FusedMatMul[BiasAdd], pass 2
    # matches Mul(Pow(_FusedMatMul, 3), c)... and folds the GELU in (FindMatMulBiasAddAndGelu).
    result = run({"preset": "matmul_bias_gelu_approx", "params": dict(MATMUL, dtype=dtype)},
                 dict(NO_ONEDNN, TF_USE_CUBLASLT="1"))
    assert fused(result["stages"]["optimized"]) == [("_FusedMatMul", ["BiasAdd", "GeluApproximate"])]
    assert any("Fuse MatMul with BiasAdd" in line for line in result["remapper_log"])
    assert all(k["gpu_kernel_registered"] for k in result["gpu_kernels"])
    assert fused(result["unfused_optimized"]) == []


@pytest.mark.parametrize("dtype", ["float32", "float16"])
def test_one_iteration_reproduces_the_first_measurement(dtype):
    # The first measurement (MatMul+BiasAdd fused, GELU not) is what ONE iteration gives.
    result = run({"preset": "matmul_bias_gelu_approx", "params": dict(MATMUL, dtype=dtype)},
                 dict(NO_ONEDNN, TF_USE_CUBLASLT="1"), one_iteration=True)
    assert fused(result["stages"]["optimized"]) == [("_FusedMatMul", ["BiasAdd"])]
    assert "Pow" in compute_ops(result["stages"]["optimized"])


@pytest.mark.parametrize("env", [{}, {"TF_USE_CUBLASLT": "0"}], ids=["unset", "zero"])
@pytest.mark.parametrize("preset", ["matmul_bias_gelu_approx", "matmul_bias_relu"])
def test_without_cublaslt_the_gpu_does_not_fuse_matmul(env, preset):
    result = run({"preset": preset, "params": MATMUL}, dict(NO_ONEDNN, **env))
    assert fused(result["stages"]["optimized"]) == []
    assert "MatMul" in compute_ops(result["stages"]["optimized"])


def test_an_empty_cublaslt_value_is_refused_before_tensorflow_aborts():
    # remapper.cc: TF_CHECK_OK(ReadBoolFromEnvVar("TF_USE_CUBLASLT", ...)) -> "" is not a bool and
    # TensorFlow aborts the process (observed: exit -6). simulate refuses it first, by name.
    with pytest.raises(AssertionError, match=r"TF_USE_CUBLASLT='' is not a boolean"):
        run({"preset": "matmul_bias_relu", "params": MATMUL}, dict(NO_ONEDNN, TF_USE_CUBLASLT=""))


def test_conv2d_bias_relu_3x3_float32_nhwc_fuses_on_the_gpu():
    # IsGpuCompatible(ContractionWithBiasAddAndActivation): Relu, T float, NHWC, filter H and W
    # known and != 1 -> _FusedConv2D. Ampere (cc 8.0) keeps float32 convolutions in NHWC.
    result = run({"preset": "conv2d_bias_relu", "params": CONV}, NO_ONEDNN)
    assert fused(result["stages"]["optimized"]) == [("_FusedConv2D", ["BiasAdd", "Relu"])]
    node = next(n for n in result["stages"]["optimized"]["nodes"] if n["op"] == "_FusedConv2D")
    assert node["attrs"]["data_format"] == "NHWC" and node["device"] == "GPU:0"


def test_on_volta_the_layout_optimizer_moves_float32_convolutions_to_nchw():
    result = run({"preset": "conv2d_bias_relu", "params": CONV}, NO_ONEDNN, profile="volta")
    ops = compute_ops(result["stages"]["optimized"])
    assert ops.count("Transpose") == 2
    node = next(n for n in result["stages"]["optimized"]["nodes"] if n["op"] == "_FusedConv2D")
    assert node["fused_ops"] == ["BiasAdd", "Relu"] and node["attrs"]["data_format"] == "NCHW"


def test_why_the_first_measurement_did_not_fuse_conv2d():
    # Given as plain Placeholders, the inputs are feeds of the Grappler item; shape inference
    # (assume_valid_feeds=false) keeps only their rank, so the filter's H and W are unknown and
    # the remapper's is_spatial_conv test fails. A tf.function's _Arg nodes carry full shapes.
    result = run({"preset": "conv2d_bias_relu", "params": CONV}, NO_ONEDNN, feeds_as_placeholders=True)
    assert fused(result["stages"]["optimized"]) == []


def test_a_1x1_convolution_is_not_fused_on_the_gpu():
    # "FusedConv2D on GPU with 1x1 convolution is ... significantly slower in large scale benchmarks."
    result = run({"preset": "conv2d_bias_relu", "params": dict(CONV, filter_size=1)}, NO_ONEDNN)
    assert fused(result["stages"]["optimized"]) == []
