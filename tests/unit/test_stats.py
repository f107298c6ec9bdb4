"""explorer.analysis.stats on synthetic samples whose true speedup is known."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from explorer.analysis import stats
from explorer.errors import ExplorerError

SUMMARY_KEYS = {"n", "median_ms", "mean_ms", "std_ms", "min_ms", "max_ms", "p10_ms", "p25_ms", "p75_ms",
                "p90_ms", "iqr_ms", "mad_ms", "cv"}
SPEEDUP_KEYS = {"estimate", "ci_low", "ci_high", "confidence", "method", "resamples", "seed", "n_pairs",
                "dropped", "paired_ratio_median", "fraction_fused_faster", "verdict", "verdict_code", "notes"}


def lognormal_ns(median_ns: float, n: int, seed: int, sigma: float = 0.1) -> list[int]:
    rng = np.random.default_rng(seed)
    return [int(v) for v in median_ns * rng.lognormal(0.0, sigma, n)]


def bench(fused, unfused, **extra) -> dict:
    return {"samples_ns": {"fused": fused, "unfused": unfused}, **extra}


def assert_plain_json(value):
    """Only builtin types all the way down: numpy scalars would break json and st.json."""
    if isinstance(value, dict):
        for k, v in value.items():
            assert type(k) is str
            assert_plain_json(v)
    elif isinstance(value, list):
        for v in value:
            assert_plain_json(v)
    else:
        assert value is None or type(value) in (bool, int, float, str), (value, type(value))


# --- summarize ---------------------------------------------------------------------------------

def test_summarize_known_values():
    s = stats.summarize([1_000_000, 2_000_000, 3_000_000, 4_000_000, 5_000_000])
    assert set(s) == SUMMARY_KEYS
    assert s["n"] == 5
    assert s["median_ms"] == pytest.approx(3.0)
    assert s["mean_ms"] == pytest.approx(3.0)
    assert s["min_ms"] == pytest.approx(1.0) and s["max_ms"] == pytest.approx(5.0)
    assert s["p25_ms"] == pytest.approx(2.0) and s["p75_ms"] == pytest.approx(4.0)
    assert s["iqr_ms"] == pytest.approx(2.0)
    assert s["mad_ms"] == pytest.approx(1.0)
    assert s["p10_ms"] == pytest.approx(1.4) and s["p90_ms"] == pytest.approx(4.6)
    assert s["cv"] == pytest.approx(np.std([1, 2, 3, 4, 5], ddof=1) / 3.0)
    assert_plain_json(s)


def test_summarize_single_sample_has_zero_spread():
    s = stats.summarize([2_500_000])
    assert s["n"] == 1 and s["median_ms"] == 2.5 and s["std_ms"] == 0.0 and s["cv"] == 0.0


def test_summarize_all_zeros_does_not_divide_by_zero():
    s = stats.summarize([0, 0, 0])
    assert s["median_ms"] == 0.0 and s["cv"] == 0.0


def test_summarize_accepts_numpy_input():
    assert stats.summarize(np.array([1_000_000, 3_000_000]))["median_ms"] == pytest.approx(2.0)


@pytest.mark.parametrize("bad, words", [
    ([], "no samples"),
    ([1, float("nan")], "NaN"),
    ([1, -5], "negative"),
    (["fast"], "numbers"),
    ([[1, 2], [3, 4]], "flat list"),
])
def test_summarize_rejects_bad_samples_with_a_clear_message(bad, words):
    with pytest.raises(ValueError, match=words) as info:
        stats.summarize(bad)
    assert isinstance(info.value, ExplorerError)  # the page prints str(error) as-is


# --- speedup -----------------------------------------------------------------------------------

def test_twice_as_fast_is_detected():
    fused = lognormal_ns(1e6, 200, seed=1)
    unfused = lognormal_ns(2e6, 200, seed=2)
    sp = stats.speedup(fused, unfused)
    assert set(sp) == SPEEDUP_KEYS
    assert sp["estimate"] == pytest.approx(2.0, rel=0.05)
    # The 95% interval covers the true ratio and brackets the point estimate; narrow, so clear of 1.
    assert sp["ci_low"] <= 2.0 <= sp["ci_high"]
    assert sp["ci_low"] <= sp["estimate"] <= sp["ci_high"]
    assert sp["ci_high"] - sp["ci_low"] < 0.3
    assert sp["paired_ratio_median"] == pytest.approx(2.0, rel=0.05)
    assert sp["fraction_fused_faster"] > 0.95
    assert sp["verdict"] == "fused is faster" and sp["verdict_code"] == "faster"
    assert sp["n_pairs"] == 200 and sp["dropped"] == 0 and sp["notes"] == []
    assert_plain_json(sp)


def test_twice_as_slow_is_detected():
    sp = stats.speedup(lognormal_ns(2e6, 100, seed=3), lognormal_ns(1e6, 100, seed=4))
    assert sp["estimate"] == pytest.approx(0.5, rel=0.05)
    assert sp["ci_high"] < 1.0
    assert sp["verdict"] == "fused is slower" and sp["verdict_code"] == "slower"


@pytest.mark.parametrize("seed", range(5))
def test_identical_distributions_show_no_difference(seed):
    fused = lognormal_ns(1e6, 100, seed=10 + 2 * seed)
    unfused = lognormal_ns(1e6, 100, seed=11 + 2 * seed)
    sp = stats.speedup(fused, unfused)
    assert sp["ci_low"] <= 1.0 <= sp["ci_high"]
    assert sp["verdict"] == "no measurable difference" and sp["verdict_code"] == "same"


def test_ci_level_widens_the_interval():
    fused, unfused = lognormal_ns(1e6, 60, seed=5, sigma=0.3), lognormal_ns(1.3e6, 60, seed=6, sigma=0.3)
    narrow = stats.speedup(fused, unfused, confidence=0.8)
    wide = stats.speedup(fused, unfused, confidence=0.99)
    assert wide["ci_low"] <= narrow["ci_low"] and narrow["ci_high"] <= wide["ci_high"]
    assert narrow["estimate"] == wide["estimate"]


def test_deterministic_for_a_seed():
    fused, unfused = lognormal_ns(1e6, 50, seed=7, sigma=0.3), lognormal_ns(1.2e6, 50, seed=8, sigma=0.3)
    a = stats.speedup(fused, unfused, seed=42)
    assert a == stats.speedup(fused, unfused, seed=42)
    other = stats.speedup(fused, unfused, seed=43)
    assert other["estimate"] == a["estimate"]
    assert (other["ci_low"], other["ci_high"]) != (a["ci_low"], a["ci_high"])


def test_pairing_cancels_shared_drift():
    # Both variants drift 10x over the run: the pairs still say exactly 2x every time.
    drift = np.linspace(1e6, 1e7, 50)
    sp = stats.speedup([int(d) for d in drift], [int(2 * d) for d in drift])
    assert sp["ci_low"] == pytest.approx(2.0) and sp["ci_high"] == pytest.approx(2.0)
    assert sp["paired_ratio_median"] == pytest.approx(2.0)


def test_unequal_lengths_use_complete_pairs_only():
    sp = stats.speedup([1_000_000] * 10, [2_000_000] * 7)
    assert sp["n_pairs"] == 7 and sp["dropped"] == 3
    assert sp["estimate"] == pytest.approx(2.0)
    assert any("3 unpaired" in note for note in sp["notes"])


@pytest.mark.parametrize("n", [1, 2])
def test_too_few_pairs_gives_no_ci_and_says_so(n):
    sp = stats.speedup([1_000_000] * n, [3_000_000] * n)
    assert sp["estimate"] == pytest.approx(3.0)
    assert sp["ci_low"] is None and sp["ci_high"] is None
    assert sp["verdict_code"] == "unknown" and sp["verdict"] == "too few samples to tell"
    assert sp["resamples"] == 0
    assert any("confidence interval" in note for note in sp["notes"])
    assert_plain_json(sp)


def test_three_pairs_is_enough_for_a_ci():
    sp = stats.speedup([1_000_000, 1_100_000, 900_000], [2_000_000, 2_100_000, 1_900_000])
    assert sp["ci_low"] is not None and sp["verdict_code"] == "faster"


@pytest.mark.parametrize("fused, unfused, which", [([], [1], "fused"), ([1], [], "unfused")])
def test_empty_side_is_named(fused, unfused, which):
    with pytest.raises(ValueError, match=f"{which}: no samples"):
        stats.speedup(fused, unfused)


def test_zero_samples_stay_finite():
    sp = stats.speedup([0, 0, 0, 0], [0, 0, 0, 0])
    assert sp["estimate"] == 1.0 and sp["verdict_code"] == "same"
    sp = stats.speedup([0, 0, 0, 0], [1000, 1000, 1000, 1000])
    assert sp["estimate"] == pytest.approx(1000.0)
    assert all(np.isfinite([sp["ci_low"], sp["ci_high"]]))
    assert any("counted as 1 ns" in note for note in sp["notes"])
    json.dumps(sp, allow_nan=False)


@pytest.mark.parametrize("kwargs, words", [
    ({"confidence": 1.5}, "confidence"), ({"confidence": 0}, "confidence"), ({"resamples": 5}, "resamples"),
])
def test_bad_options_are_rejected(kwargs, words):
    with pytest.raises(ValueError, match=words):
        stats.speedup([1, 2, 3], [1, 2, 3], **kwargs)


def test_format_speedup():
    assert stats.format_speedup({"estimate": 1.8, "ci_low": 1.6, "ci_high": 2.0, "confidence": 0.95}) \
        == "1.8× (95% CI 1.6–2.0)"
    # One decimal would print "1.0× (CI 1.0–1.1)": more decimals until the bounds separate.
    assert stats.format_speedup({"estimate": 1.03, "ci_low": 1.01, "ci_high": 1.05, "confidence": 0.95}) \
        == "1.03× (95% CI 1.01–1.05)"
    assert "no CI" in stats.format_speedup({"estimate": 2.0, "ci_low": None, "ci_high": None})


# --- bench_summary / sweep_table ---------------------------------------------------------------

def test_bench_summary_of_a_worker_result():
    raw = bench(lognormal_ns(1e6, 80, seed=20), lognormal_ns(1.5e6, 80, seed=21),
                reps_done=80, reps_requested=100, warmup=5, proof={}, agreement={})
    s = stats.bench_summary(raw)
    assert set(s) == {"fused", "unfused", "speedup", "reps", "reps_requested", "stopped_early", "noisy",
                      "noisy_variants", "noise_threshold_cv"}
    assert set(s["fused"]) == SUMMARY_KEYS and set(s["speedup"]) == SPEEDUP_KEYS
    assert s["reps"] == 80 and s["reps_requested"] == 100 and s["stopped_early"] is True
    assert s["noisy"] is False and s["noisy_variants"] == []
    assert s["speedup"]["verdict_code"] == "faster"
    assert s["fused"]["median_ms"] == pytest.approx(1.0, rel=0.05)
    assert_plain_json(s)
    json.dumps(s, allow_nan=False)


def test_bench_summary_flags_noise():
    raw = bench(lognormal_ns(1e6, 80, seed=22, sigma=0.6), lognormal_ns(1e6, 80, seed=23))
    s = stats.bench_summary(raw)
    assert s["noisy"] is True and s["noisy_variants"] == ["fused"]
    assert s["reps"] == 80 and s["stopped_early"] is False


def test_bench_summary_accepts_the_bare_samples_dict():
    samples = {"fused": [1_000_000] * 5, "unfused": [2_000_000] * 5}
    assert stats.bench_summary(samples)["speedup"]["estimate"] == pytest.approx(2.0)


@pytest.mark.parametrize("raw", [{}, {"samples_ns": {"fused": [1]}}, {"samples_ns": None}])
def test_bench_summary_without_samples_says_so(raw):
    with pytest.raises(ValueError, match="samples_ns"):
        stats.bench_summary(raw)


def test_sweep_table_rows_sorted_with_speedup():
    points = [(64, bench(lognormal_ns(1e6, 40, 30), lognormal_ns(2e6, 40, 31))),
              (8, bench(lognormal_ns(1e5, 40, 32), lognormal_ns(1e5, 40, 33)))]
    rows = stats.sweep_table(points)
    assert [r["value"] for r in rows] == [8, 64]
    big = rows[1]
    assert big["fused_median_ms"] == pytest.approx(1.0, rel=0.05)
    assert big["unfused_median_ms"] == pytest.approx(2.0, rel=0.05)
    assert big["ci_low"] <= big["speedup"] <= big["ci_high"]
    assert big["verdict_code"] == "faster" and rows[0]["verdict_code"] == "same"
    assert {"value", "fused_median_ms", "unfused_median_ms", "speedup", "ci_low", "ci_high"} <= set(big)
    assert_plain_json(rows)


def test_sweep_table_names_the_bad_point():
    with pytest.raises(ValueError, match="sweep point 16"):
        stats.sweep_table([(16, bench([], [1]))])


def test_fusion_pays_from_needs_every_larger_size():
    rows = [{"value": v, "verdict_code": c} for v, c in
            [(1, "faster"), (2, "same"), (4, "faster"), (8, "faster")]]
    assert stats.fusion_pays_from(rows) == 4
    assert stats.fusion_pays_from(rows[:2]) is None
    assert stats.fusion_pays_from([]) is None


def test_stats_does_not_import_plotly():
    code = "import sys, explorer.analysis.stats; print('plotly' in sys.modules)"
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=root)
    assert out.stdout.strip() == "False"
