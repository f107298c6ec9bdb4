"""benchmarks/gpu_predict.py where there is no GPU: its prediction side (the explorer's roofline on the recorded
simulated graphs, no TensorFlow), its refusal without a GPU, and the helpers its measured side uses. The
measured side itself needs an NVIDIA GPU and PyTorch (benchmarks/gpu_kernels.py): it ran on a lent H100, and its
measurements are kept in explorer/model/gpu_measurements.json, which these tests hold the profiles' calibration to."""

from __future__ import annotations

import ast
import importlib.util
import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from explorer.model.gpu_profiles import EFFICIENCY, OVERHEAD, PROFILES

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
    assert g.error(110.0, 100.0) == pytest.approx(0.10) and g.error(50.0, 100.0) == pytest.approx(-0.5)
    p = g.predictions("h100")["relu f32 4096x256x1024"]
    # measurements 3 µs per kernel above the roofline on the device, and 15 µs more per kernel from the host
    measured = {v: {"ops": p["kernel_count"][v], "kernels": ["k"] * p["kernel_count"][v],
                    "device_us": g.roof_us(p, v) + 3.0 * p["kernel_count"][v]} for v in ("fused", "unfused")}
    for v in measured.values():
        v["eager_us"] = v["device_us"] + 15.0 * len(v["kernels"])
    assert g.fit_launch([(p, measured)]) == 3.0
    assert g.host_per_kernel(measured) == pytest.approx([15.0, 15.0])
    assert g.device_us(p, "fused", 3.0) == pytest.approx(measured["fused"]["device_us"])


def stored_runs() -> list[dict]:
    return json.loads((ROOT / "explorer" / "model" / "gpu_measurements.json").read_text())


def test_the_real_gpu_measurements_kept_say_where_and_cover_every_case():
    runs = stored_runs()
    assert runs, "no real-GPU run kept"
    cases, covered = set(script().CASES), set()
    for run in runs:
        assert run["gpu"] and run["driver"] and run["date"] and run["libraries"].get("torch")
        measured = {row["case"]: row["measured"] for row in run["rows"]}
        assert set(measured) <= cases
        covered |= set(measured)
        for m in measured.values():
            for v in ("fused", "unfused"):
                assert m[v]["device_us"] > 0 and m[v]["eager_us"] >= m[v]["device_us"] * 0.9 and m[v]["kernels"]
            # what was timed: the fused variant launched fewer kernels than the unfused one
            assert len(m["fused"]["kernels"]) < len(m["unfused"]["kernels"])
    assert covered == cases  # every case today's script knows was measured by some run


def test_the_profiles_calibration_is_what_the_kept_measurements_imply():
    g, runs = script(), stored_runs()
    h100 = PROFILES["h100"]
    reached = {key: statistics.mean(run["reached"][key] for run in runs) for key in runs[0]["reached"]}
    assert EFFICIENCY["memory"] == pytest.approx(reached["copy_gbs"] / h100["memory_gbs"], abs=0.01)
    assert EFFICIENCY["tf32_tc"] == pytest.approx(reached["tf32_tflops"] / h100["peak_tflops"]["tf32_tc"], abs=0.01)
    assert EFFICIENCY["fp16_tc"] == pytest.approx(reached["fp16_tflops"] / h100["peak_tflops"]["fp16_tc"], abs=0.01)
    preds = g.predictions("h100")
    pairs = [(preds[row["case"]], row["measured"]) for run in runs for row in run["rows"]]
    assert OVERHEAD["launch_us"] == g.fit_launch(pairs)


def test_stored_compares_todays_predictions_with_the_kept_measurements_without_a_gpu():
    out = run("--stored")
    assert out.returncode == 0, out.stderr
    runs = stored_runs()
    assert out.stdout.count("Measured on NVIDIA H100") == len(runs)
    assert out.stdout.count("device time predicted within") == len(runs)
    rows = sum(len(run["rows"]) for run in runs)
    assert out.stdout.count("| measured fused") == rows
    for case in script().CASES:
        assert out.stdout.count(f"{case} ") == sum(row["case"] == case for run in runs for row in run["rows"]), case
