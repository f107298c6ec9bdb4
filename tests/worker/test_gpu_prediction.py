"""Predicted GPU time on the simulated GPU (analysis.gpu_roofline), from real simulations in real worker processes.

Every preset that fuses on the simulated GPU, on two profiles (an H100 and a T4: HBM3 and tensor cores with TF32
against GDDR6 without TF32): a prediction per variant, each kernel timed as a roofline says, fewer kernels predict
a gain; memory-bound and compute-bound sizes of the same model behave as a roofline says; a fusion that removes
no kernel predicts no gain.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from explorer.analysis import gpu_roofline
from explorer.model import coverage
from explorer.model.catalog import PRESETS
from explorer.model.flags import Config
from explorer.model.gpu_profiles import EFFICIENCY, OVERHEAD, PROFILES

pytestmark = pytest.mark.tf

ROOT = Path(__file__).resolve().parents[2]
PROFILES_TESTED = ("h100", "t4")
GPU_PRESETS = sorted(p for p, modes in coverage.load()["table"].items()
                     if modes.get("gpu-sim") == "fused" and p in PRESETS)
FLAGS = dict(coverage.GPU_FLAGS, TF_ENABLE_ONEDNN_OPTS="0")


def predicted(engine, preset: str, profile: str, params: dict | None = None, env: dict | None = None) -> tuple:
    result = engine.inspect({"preset": preset, "params": params or coverage.GPU_PARAMS.get(preset, {})},
                            Config.make(f"gpu-sim:{profile}", FLAGS if env is None else env))
    prediction = gpu_roofline.predict(result)
    assert prediction is not None, "the simulated result carries no tensors"
    return result, prediction


def check_roofline(prediction: dict, profile: str) -> None:
    """Each GPU kernel takes max(bytes ÷ bandwidth, FLOPs ÷ its unit's peak), at the fractions of the peaks
    measured on an H100, + the launch, and at least the dispatch; and they add up."""
    figures = PROFILES[profile]
    reached = {gpu_roofline.UNITS[k]: v for k, v in EFFICIENCY.items() if k in gpu_roofline.UNITS}
    peaks = {gpu_roofline.UNITS[k]: v * reached.get(gpu_roofline.UNITS[k], 1.0)
             for k, v in figures["peak_tflops"].items()}
    for variant in ("fused", "unfused"):
        kernels = [k for k in prediction["kernels"][variant] if k["kernel"]]
        assert prediction["kernel_count"][variant] == len(kernels)
        for k in kernels:
            memory = k["bytes"] / (figures["memory_gbs"] * EFFICIENCY["memory"] * 1e3)
            compute = k["flops"] / (peaks[k["unit"]] * 1e6)
            device = max(memory, compute) + OVERHEAD["launch_us"]
            assert k["us"] == pytest.approx(max(device, OVERHEAD["framework_us"])), k
            assert k["us"] == pytest.approx(max(memory, compute) + k["overhead_us"]), k
            assert k["bound"] == ("compute" if compute > memory else "memory"), k
        assert prediction[f"{variant}_us"] == pytest.approx(sum(k["us"] for k in kernels))


@pytest.mark.parametrize("profile", PROFILES_TESTED)
@pytest.mark.parametrize("preset", GPU_PRESETS)
def test_each_gpu_preset_gets_a_roofline_prediction(engine, preset, profile):
    result, p = predicted(engine, preset, profile)
    check_roofline(p, profile)
    assert p["profile"]["sources"] and p["label"].startswith("Predicted")
    if p["partial"]:  # ops on the host (hash_bucket's string ops): their time is not predicted, so no speedup
        assert p["speedup"] is None and "host CPU" in p["notes"][0]
        return
    kernels = {v: sorted((k["name"], k["op"]) for k in p["kernels"][v] if k["kernel"]) for v in ("fused", "unfused")}
    assert p["speedup"] == pytest.approx(p["unfused_us"] / p["fused_us"])
    if kernels["fused"] == kernels["unfused"]:  # nothing changed on this GPU: the same kernels, the same time
        assert p["speedup"] == 1.0 and not p["removed_kernels"]
    elif len(kernels["fused"]) < len(kernels["unfused"]):  # a fusion that leaves fewer kernels predicts a gain
        assert result["fusions"] and p["removed_kernels"] and p["speedup"] > 1
    else:  # the remapper made more kernels (batchnorm_fold: FusedBatchNorm decomposed into Mul and Add)
        assert p["speedup"] < 1


@pytest.mark.parametrize("profile", PROFILES_TESTED)
def test_memory_bound_and_compute_bound_sizes_behave_as_a_roofline(engine, profile):
    # tall and thin: every kernel streams a 16 MiB tensor and does little arithmetic on it
    _, memory = predicted(engine, "matmul_bias_relu", profile, {"m": 16384, "k": 16, "n": 256})
    # square and large: the matmul's FLOPs outweigh its bytes (past the ridge point, even in TF32 on an H100)
    _, compute = predicted(engine, "matmul_bias_relu", profile, {"m": 4096, "k": 4096, "n": 4096})
    for p in (memory, compute):
        check_roofline(p, profile)
    assert all(k["bound"] == "memory" for k in memory["kernels"]["unfused"] if k["kernel"])
    matmul = next(k for k in compute["kernels"]["unfused"] if k["op"] == "MatMul")
    assert matmul["bound"] == "compute"
    # TensorFlow runs float32 matmuls in TF32 on an H100's tensor cores, on a T4's CUDA cores
    assert matmul["unit"] == ("TF32 tensor cores" if profile == "h100" else "FP32 CUDA cores")
    assert memory["speedup"] > 1.5 > compute["speedup"] > 1.0


def test_a_fusion_that_removes_no_kernel_predicts_no_gain(engine):
    # without cuBLASLt the GPU's remapper fuses no MatMul: both graphs are the same kernels
    _, p = predicted(engine, "matmul_bias_relu", "h100", {"m": 4096, "k": 256, "n": 1024}, {"TF_ENABLE_ONEDNN_OPTS": "0"})
    assert not p["removed_kernels"] and p["kernel_count"]["fused"] == p["kernel_count"]["unfused"] == 3
    assert p["fused_us"] == p["unfused_us"] and p["speedup"] == 1.0


def test_bench_on_a_simulated_gpu_answers_with_the_prediction():
    out = subprocess.run([sys.executable, "-m", "explorer", "bench", "matmul_bias_gelu_approx", "--device",
                          "gpu-sim:h200", "--env", "TF_USE_CUBLASLT=1", "--env", "TF_ENABLE_ONEDNN_OPTS=0",
                          "--no-cache", "--json"], cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    answer = json.loads(out.stdout)
    assert answer["simulated"] and answer["evidence"] == "prediction" and answer["device"] == "gpu-sim:h200"
    p = answer["prediction"]
    assert {"fused_us", "unfused_us", "speedup", "kernels"} <= set(p)
    assert p["speedup"] == pytest.approx(p["unfused_us"] / p["fused_us"]) and p["speedup"] > 1
    assert [k["op"] for k in p["kernels"]["fused"] if k["kernel"]] == ["_FusedMatMul"]
    row = p["kernels"]["unfused"][0]
    assert {"name", "op", "bytes", "flops", "us", "bound", "unit"} <= set(row)
    assert "H200" in p["profile"]["label"] and "data sheet" in p["profile"]["sources"][0]
    # the alias of the first profiles' names still works, and the words say it is a prediction
    text = subprocess.run([sys.executable, "-m", "explorer", "bench", "matmul_bias_relu", "--device", "gpu-sim:hopper",
                           "--env", "TF_USE_CUBLASLT=1", "--env", "TF_ENABLE_ONEDNN_OPTS=0"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert text.returncode == 0, text.stderr[-2000:]
    assert "PREDICTED (nothing ran)" in text.stdout and "H100" in text.stdout and "memory-bound" in text.stdout


def test_the_matrix_gpu_cells_carry_the_prediction(engine):
    from explorer.engine import matrix
    from explorer.present import matrix as table

    cells = matrix.plan(["matmul_bias_gelu_approx"], [matrix.parse_vary("device=cpu,gpu-sim:h100")],
                        env={"TF_USE_CUBLASLT": "1", "TF_ENABLE_ONEDNN_OPTS": "0"}, params={"m": 4096, "k": 64, "n": 256})
    rows = matrix.run_local(engine, cells, bench=matrix.BenchOptions(reps=3, warmup=0, max_seconds=5), use_cache=False)
    cpu, sim = rows
    assert "predicted_speedup" not in cpu  # the CPU cell is measured, never predicted
    assert sim["status"] == "ok" and sim["speedup"] is None and "simulated GPU runs nothing" in sim["bench_error"]
    assert sim["predicted_speedup"] > 1 and sim["predicted_unfused_us"] > sim["predicted_fused_us"]
    assert sim["prediction"].startswith("Predicted") and "H100" in sim["prediction"]
    words = table.speedup_words(sim)
    assert words.startswith("predicted ") and "not measured" in words
    header = table.to_csv(rows).splitlines()[0].split(",")
    assert header[-3:] == ["predicted_speedup", "agreement", "measured_gpu_speedup"]  # new columns go last
    assert sim["measured_gpu_speedup"] is None  # 4096×64×256 never ran on a real GPU: nothing claimed


def test_a_simulated_inspect_of_graphs_that_ran_on_an_h100_carries_that_measurement(engine):
    from explorer.analysis import gpu_measured, gpu_roofline

    env = {"TF_USE_CUBLASLT": "1", "TF_ENABLE_ONEDNN_OPTS": "0"}
    result = engine.inspect({"preset": "matmul_bias_relu", "params": {"m": 4096, "k": 256, "n": 1024}},
                            Config.make("gpu-sim:h100", env))
    answer = gpu_roofline.answer(result)
    measured = answer["measured"]
    assert measured["case"] == "relu f32 4096x256x1024" and measured["evidence"] == "measured"
    assert measured["speedup"] > 1 and answer["prediction"]["speedup"] > 1
    assert "Measured on a real GPU (NVIDIA H100" in gpu_roofline.answer_words(answer)
    other = engine.inspect({"preset": "matmul_bias_relu", "params": {"m": 4096, "k": 256, "n": 1024}},
                           Config.make("gpu-sim:t4", env))
    assert gpu_measured.find(other) is None and gpu_roofline.answer(other)["measured"] is None


def test_the_graphs_gpu_predict_records_are_todays_simulation(engine):
    # benchmarks/gpu_predict.py predicts on a GPU machine without TensorFlow from graphs recorded here: they must
    # be what the simulated GPU makes today (rerun `benchmarks/gpu_predict.py --record` when this fails)
    recorded = json.loads((ROOT / "explorer" / "model" / "gpu_measured_graphs.json").read_text())
    for case in ("relu f32 4096x256x1024", "conv3x3 f32 8x56x56x64"):
        entry = recorded["cases"][case]
        result = engine.inspect({"preset": entry["preset"], "params": entry["params"]},
                                Config.make(recorded["simulated_on"], entry["env"]))
        assert result["tensors"] == entry["tensors"], case
