"""Real GPU runs. Collected everywhere; on a machine without a GPU every test here reports as
skipped with the reason, never as passed."""

from __future__ import annotations

import pytest

from explorer.engine import Engine
from explorer.flags import Config
from explorer.graphs import Graph

pytestmark = [pytest.mark.tf, pytest.mark.gpu]

CUBLASLT = Config.make("gpu", {"TF_USE_CUBLASLT": "1"})
SMALL = {"m": 256, "k": 64, "n": 128}


@pytest.fixture(scope="module")
def engine():
    engine = Engine(cache_dir=None)
    if not engine.fingerprint(Config.make("gpu"))["gpus"]:
        engine.close()
        pytest.skip("no GPU visible to TensorFlow on this machine")
    yield engine
    engine.close()


def test_fingerprint_names_the_gpu_and_the_build(engine):
    fp = engine.fingerprint(Config.make("gpu"))
    gpu = fp["gpus"][0]
    assert gpu["model"] and len(gpu["compute_capability"]) == 2
    assert fp["cuda_build"] and fp["cuda_version"] and fp["cudnn_version"]


def test_cublaslt_fuses_matmul_bias_gelu_approx_on_gpu(engine):
    result = engine.inspect({"preset": "matmul_bias_gelu_approx", "params": SMALL}, CUBLASLT)
    nodes = [n for n in Graph.from_dict(result["stages"]["optimized"]).nodes if n.fused_ops]
    assert [(n.op, n.fused_ops) for n in nodes] == [("_FusedMatMul", ("BiasAdd", "GeluApproximate"))]
    assert all("GPU" in n.device for n in nodes)
    # the GPU keeps Pow(x, 3) where the CPU writes Square(x)*x
    traced_ops = Graph.from_dict(result["stages"]["traced"]).ops
    assert "Pow" in traced_ops


def test_without_cublaslt_matmul_does_not_fuse_on_gpu(engine):
    result = engine.inspect({"preset": "matmul_bias_relu", "params": SMALL}, Config.make("gpu"))
    assert not [n for n in Graph.from_dict(result["stages"]["optimized"]).nodes if n.fused_ops]


def test_gpu_benchmark_agrees_and_proves_its_graphs(engine):
    result = engine.bench({"preset": "conv2d_bias_relu", "params": {"filter_size": 3}}, Config.make("gpu"),
                          reps=10, warmup=2)
    assert result["agreement"]["within_tolerance"]
    assert result["proof_summary"]["verified"]
    assert any(op.startswith("_FusedConv2D") for op in result["proof_summary"]["fused_executed"])
