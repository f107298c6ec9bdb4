"""benchmarks/gpu_predict.py where there is no GPU: its prediction side (the explorer's roofline on the recorded
simulated graphs, no TensorFlow), its refusal without a GPU, and the helpers its measured side uses. The
measured side itself needs an NVIDIA GPU and JAX: it has not run here."""

from __future__ import annotations

import ast
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from explorer.model.gpu_profiles import PROFILES

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "gpu_predict.py"


def script():
    spec = importlib.util.spec_from_file_location("gpu_predict", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=ROOT, capture_output=True, text=True, timeout=120)


def test_it_imports_nothing_of_tensorflow():
    tree = ast.parse(SCRIPT.read_text())
    names = [a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names]
    names += [n.module or "" for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert not [n for n in names if n.split(".")[0] == "tensorflow"]
    assert "explorer.engine" in names  # only for --record, which runs TensorFlow in worker processes, not here


@pytest.mark.parametrize("profile", ["h100", "t4"])
def test_predict_only_prints_every_case_from_the_explorers_own_model(profile):
    out = run("--predict-only", "--profile", profile)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[0].startswith(f"Predicted on {PROFILES[profile]['label']}") and "not measured" in lines[0]
    gpu_predict = script()
    rows = {case: next(line for line in lines if line.startswith(case)) for case in gpu_predict.CASES}
    predictions = gpu_predict.predictions(profile)
    for case, line in rows.items():
        p = predictions[case]
        assert f"fused {p['fused_us']:9.1f} µs" in line and f"speedup {p['speedup']:5.2f}×" in line
        assert p["speedup"] > 1  # every recorded case fused on the simulated GPU: fewer kernels
    assert lines[-1] == "tensorflow imported: no"


def test_without_a_gpu_it_says_so_in_one_line():
    out = run("--reps", "3")
    assert out.returncode == 2 and out.stderr.strip() == "no NVIDIA GPU found (nvidia-smi): run with --predict-only here"


def test_an_unknown_profile_is_refused():
    out = run("--predict-only", "--profile", "rtx9090")
    assert out.returncode == 2 and "no profile 'rtx9090'" in out.stderr


def test_the_measured_sides_helpers():
    g = script()
    assert g.profile_for("NVIDIA H100 80GB HBM3") == "h100" and g.profile_for("NVIDIA H200") == "h200"
    assert g.profile_for("Tesla T4") == "t4" and g.profile_for("Radeon") is None
    # a compiled module as XLA prints it: the cuBLASLt call with its epilogue, and one loop fusion beside it
    hlo = ('%custom-call.1 = (f32[4096,1024]{1,0}, s8[4194304]{0}) custom-call(f32[4096,256]{1,0} %p0, '
           'f32[256,1024]{1,0} %p1, f32[1024]{0} %p2), custom_call_target="__cublas$lt$matmul", '
           'backend_config={"gemm_backend_config":{"epilogue":"BIAS"}}\n'
           '%loop_multiply_fusion = f32[4096,1024]{1,0} fusion(f32[4096,1024]{1,0} %gte), kind=kLoop')
    proof = g.hlo_proof(hlo)
    assert proof == {"custom_calls": ["__cublas$lt$matmul"], "epilogues": ["BIAS"], "activations": [], "fusions": 1}
    assert g.error(110.0, 100.0) == pytest.approx(0.10) and g.error(50.0, 100.0) == pytest.approx(-0.5)
    p = g.predictions("h100")["relu f32 4096x256x1024"]
    # a measurement 20 µs per kernel above the roofline implies 20 µs of overhead per kernel
    measured = {v: g.roof_us(p, v) + 20.0 * p["kernel_count"][v] for v in ("fused", "unfused")}
    implied = g.implied_overhead(p, {f"{v}_us": t for v, t in measured.items()})
    assert implied == pytest.approx([20.0, 20.0])
