"""The traffic model's arithmetic on small hand-made op lists (pure functions, no TensorFlow): the
bandwidth curve's interpolation, and the words and chart marks where an estimate lies above the
measured time (never called a bound there)."""

from __future__ import annotations

import json

import pytest

from explorer.analysis import traffic
from explorer.present import traffic_charts

KIB = 1024
PROFILE = {  # a machine: 40 GB/s in cache, 10 GB/s beyond it, 100 GFLOP/s
    "key": "machine-test", "bandwidth": [{"bytes": 64 * KIB, "triad_gbs": 40.0, "copy_gbs": 30.0},
                                         {"bytes": 64 * KIB ** 3, "triad_gbs": 10.0, "copy_gbs": 8.0}],
    "matmul": {"gflops": 100.0}, "caches": {"L1": 32 * KIB}, "threads": 2, "fingerprint": {"cpu_model": "test"},
}


def t(shape):
    return ["float32", shape, 4 * (shape[0] * shape[1])]


def result(fused_ms, unfused_ms):
    """MatMul [1024,1024]x[1024,1024] then Relu, unfused; fused into one op."""
    a = t([1024, 1024])
    unfused = [{"name": "MatMul", "op": "MatMul", "inputs": [a, a], "outputs": [a]},
               {"name": "Relu", "op": "Relu", "inputs": [a], "outputs": [a]}]
    fused = [{"name": "Relu", "op": "_FusedMatMul", "fused_ops": ["Relu"], "inputs": [a, a], "outputs": [a]}]
    summary = {v: {"median_ms": ms, "p10_ms": ms * 0.9, "p90_ms": ms * 1.1} for v, ms in
               (("fused", fused_ms), ("unfused", unfused_ms))}
    return {"proof": {"fused": {"tensors": fused}, "unfused": {"tensors": unfused}}, "summary": summary,
            "fingerprint": {"device": "cpu"}, "spec": {"params": {"dtype": "float32"}}}


def test_bandwidth_interpolates_on_log_size_and_is_flat_beyond_the_points():
    assert traffic.bandwidth_at(PROFILE, 1) == 40.0
    assert traffic.bandwidth_at(PROFILE, 10 * KIB ** 4) == 10.0
    middle = (64 * KIB * 64 * KIB ** 3) ** 0.5  # geometric middle of the two sizes
    assert abs(traffic.bandwidth_at(PROFILE, middle) - 25.0) < 1e-9


def test_matmul_is_compute_bound_and_relu_memory_bound():
    report = traffic.report(result(30.0, 31.0), PROFILE)
    mm, relu = report["variants"]["unfused"]["ops"]
    assert mm["flops"] == 2 * 1024 ** 3 and mm["bound"] == "compute"
    assert abs(mm["est_ms"] - 2 * 1024 ** 3 / 100e9 * 1e3) < 1e-9
    assert relu["bound"] == "memory" and relu["bytes"] == 8 * KIB ** 2
    assert report["removed"] == [{"name": "MatMul", "op": "MatMul", "bytes": 4 * KIB ** 2}]


def test_an_estimate_above_the_measurement_is_never_called_a_bound():
    report = traffic.report(result(5.0, 6.0), PROFILE)  # ~21 ms of FLOPs "measured" in 5 ms
    for v in ("fused", "unfused"):
        rel = report["variants"][v]["relation"]
        assert rel["code"] == "above" and "not a bound" in rel["words"]
    fig = json.loads(traffic_charts.estimate_figure(report).to_json())
    notes = [a["text"] for a in fig["layout"]["annotations"]]
    assert sum("ABOVE measured" in n and "not a bound" in n for n in notes) == 2
    below = traffic.report(result(50.0, 60.0), PROFILE)
    notes = [a["text"] for a in json.loads(traffic_charts.estimate_figure(below).to_json())["layout"]["annotations"]]
    assert not any("ABOVE" in n for n in notes) and sum("the estimate" in n for n in notes) == 2


def test_sweep_figure_rings_the_points_whose_estimate_is_above():
    points = [{"value": v, "result": dict(r, traffic=traffic.report(r, PROFILE))}
              for v, r in ((1, result(5.0, 6.0)), (2, result(50.0, 60.0)))]
    rows = traffic.sweep_rows(points)
    fig = json.loads(traffic_charts.sweep_estimate_figure(rows, "m").to_json())
    rings = [d for d in fig["data"] if d["name"] == "estimate above measured: not a bound"]
    assert rings and all(list(d["x"]) == [1] for d in rings)


def test_a_shape_no_run_fixed_gives_one_line_and_no_estimate_to_compare():
    """Issue 31: an unknown batch never fed left every activation uncounted, and the page printed "FLOPs 5e-08 G"
    and "measured 1758.99× the estimate" (a time of the whole run against an estimate of its weights)."""
    r = result(5.0, 6.0)
    unknown = ["float32", None, None]
    for variant in ("fused", "unfused"):
        for op in r["proof"][variant]["tensors"]:
            op["inputs"] = [unknown] + op["inputs"][1:]
    report = traffic.report(r, PROFILE)
    assert report["unknown_tensors"] == 3 and report["machine"] is None and "saving" not in report
    assert all("relation" not in v for v in report["variants"].values())
    assert traffic.words(report) == ["traffic  not known: 3 tensors whose shape TensorFlow cannot work out before the "
                                     "model runs (inside a loop, or sized by values computed as it runs); no time estimate"]
    with pytest.raises(ValueError, match="no estimate"):
        traffic_charts.estimate_figure(report)


def test_one_wording_of_a_traffic_figure():
    assert [traffic.size_text(n) for n in (576, 14400, 65536, 353152, 0, -65536, 1_310_720, 2_500_000_000)] == [
        "576 B", "14.1 KiB", "64.0 KiB", "345 KiB", "0 B", "-64.0 KiB", "1.25 MiB", "2.33 GiB"]
    assert traffic.size_text(None) == traffic.size_text(65536, unknown=2) == "not known"
    assert [traffic.flops_text(f) for f in (576, 917504, 2.1e9)] == ["576 FLOP", "918 kFLOP", "2.1 GFLOP"]


def test_a_run_whose_executed_graph_could_not_be_read_is_not_known_not_nothing():
    """The worker could not import an executed graph for its shapes (measured: ResNet50V2 with oneDNN): its tensors
    are None. Read as an empty list, the fix report printed "0 B written per call → 0 B (0 B saved)"."""
    from explorer.analysis.fix_report import bytes_written

    ops = result(5.0, 6.0)["proof"]["unfused"]["tensors"]
    out = traffic.saving({"fused": None, "unfused": ops})
    assert out["unknown_tensors"] and out["unreadable"]
    assert traffic.not_known(out["unknown_tensors"], out["unreadable"]).startswith(
        "not known: TensorFlow could not work out the shapes of the executed graph's ops")
    assert bytes_written({"executed_tensors": {"fused": None}}) is None
    assert bytes_written({"executed_tensors": {"fused": ops}}) == 2 * 4 * KIB * KIB  # MatMul and Relu write 4 MiB each
