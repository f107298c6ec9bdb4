"""Which simulated graphs were measured on a real GPU (analysis.gpu_measured), on the kept measurements."""

from __future__ import annotations

import copy
import statistics

import pytest

from explorer.analysis import gpu_measured
from explorer.model import gpu_measured as kept

CASES = kept.graphs()["cases"]


def result_of(case: str, device: str = "gpu-sim:h100") -> dict:
    return {"tensors": copy.deepcopy(CASES[case]["tensors"]), "device": device}


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_recorded_case_is_found_with_the_median_of_its_runs(case):
    m = gpu_measured.find(result_of(case))
    assert m is not None and m["case"] == case and m["evidence"] == "measured" and "H100" in m["gpu"]
    rows = [row["measured"] for run in kept.runs() for row in run["rows"] if row["case"] == case]
    assert m["runs"] == len(rows)
    fused = statistics.median(r["fused"]["device_us"] for r in rows)
    unfused = statistics.median(r["unfused"]["device_us"] for r in rows)
    assert m["speedup"] == pytest.approx(unfused / fused)
    words = gpu_measured.words(m)
    assert words.startswith("Measured on a real GPU (NVIDIA H100") and "not TensorFlow's own kernels" in words


def test_other_graphs_or_other_gpus_are_not_claimed_as_measured():
    case = "relu f32 4096x256x1024"
    assert gpu_measured.find(result_of(case, "gpu-sim:a100")) is None  # measured on an H100 only
    assert gpu_measured.find(result_of(case, "gpu")) is None  # not a simulated GPU's graphs: no profile to match
    assert gpu_measured.find(result_of(case, "gpu-sim:hopper")) is not None  # the H100's alias
    other = result_of(case)
    other["tensors"]["fused"][0]["inputs"][0][1] = [4096, 512]  # one shape differs: not the graph that ran
    assert gpu_measured.find(other) is None
    assert gpu_measured.find({"device": "gpu-sim:h100"}) is None  # no tensors: nothing to match
    unknown = result_of(case)
    unknown["tensors"]["unfused"][1]["outputs"][0][1] = None  # a shape TensorFlow could not tell
    assert gpu_measured.find(unknown) is None


def test_a_matrix_cell_of_measured_graphs_carries_the_measurement():
    """The matrix's simulated GPU cell names the GPU, the date and how the graphs ran (it raised AttributeError:
    the short 'how' lives in model.gpu_measured, not in the analysis module of the same name)."""
    from explorer.engine import matrix

    case = "relu f32 4096x256x1024"
    row = matrix.prediction_fields(dict(result_of(case), simulated=True))
    m = gpu_measured.find(result_of(case))
    assert m is not None and row["measured_gpu_speedup"] == m["speedup"]
    assert row["measured_gpu"] == f"{m['gpu']}, {m['dates'][0][:10]} (device time; {kept.HOW_SHORT})"
    assert row["predicted_speedup"] is not None and row["prediction"].startswith("Predicted")
