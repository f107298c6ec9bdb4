"""analysis.replicated against synthetic benchmarks with a known speedup and a known process effect.

One simulated experiment (k worker processes, n interleaved pairs each):

    fused_ij   = F     * exp(a_i       + c_ij + e_ij)      a_i  ~ N(0, 0.2)   absolute speed of process i
    unfused_ij = F * S * exp(a_i + b_i + c_ij + e'_ij)     b_i  ~ N(0, tau)   process effect on the speedup
                                                           c_ij ~ N(0, 0.05)  drift shared by pair j
                                                           e, e' ~ N(0, sigma) call-to-call noise

so the true speedup is S = exp(E[log ratio]) over processes. Every random number comes from a fixed
seed: the tests are deterministic.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from explorer.analysis import replicated as rp
from explorer.analysis import stats

S_TRUE = 1.9
F_NS = 5e6
FAST = {"resamples": 400, "within_resamples": 100}


def simulate(rng, k, n, tau, sigma=0.15, S=S_TRUE, n_per_process=None):
    fused, unfused = [], []
    for i in range(k):
        m = n if n_per_process is None else n_per_process[i]
        a, b = rng.normal(0, 0.2), rng.normal(0, tau)
        c = rng.normal(0, 0.05, m)
        fused.append(np.round(F_NS * np.exp(a + c + rng.normal(0, sigma, m))).tolist())
        unfused.append(np.round(F_NS * S * np.exp(a + b + c + rng.normal(0, sigma, m))).tolist())
    return {"fused": fused, "unfused": unfused}


def coverage(seed, experiments, k, n, tau, pooled=False):
    """Fraction of experiments whose interval covers S_TRUE: the replicated one, and today's pooled one."""
    rng = np.random.default_rng(seed)
    hits = {"t": 0, "pooled": 0}
    for e in range(experiments):
        data = simulate(rng, k, n, tau)
        r = rp.replicated_speedup(data, seed=e, **FAST)
        hits["t"] += r["ci_low"] <= S_TRUE <= r["ci_high"]
        if pooled:
            lo, hi = rp.pooled_interval(data, seed=e, resamples=400)
            hits["pooled"] += lo <= S_TRUE <= hi
    return {name: h / experiments for name, h in hits.items()}


# ---- coverage (binomial sd of a 95% coverage over 300 experiments: 1.3 points) --------------

def test_interval_covers_at_the_stated_rate_with_a_process_effect():
    cov = coverage(seed=1, experiments=300, k=5, n=40, tau=0.08)
    assert 0.92 <= cov["t"] <= 0.98, cov


def test_interval_covers_without_a_process_effect():
    cov = coverage(seed=2, experiments=300, k=5, n=40, tau=0.0)
    assert 0.92 <= cov["t"] <= 0.985, cov


def test_todays_pooled_interval_undercovers_when_processes_differ():
    """The issue's symptom: one process's interval (here every pair pooled) ignores the process effect."""
    cov = coverage(seed=3, experiments=80, k=4, n=60, tau=0.10, pooled=True)
    assert cov["pooled"] < 0.6, cov
    assert cov["t"] >= 0.9, cov


def test_two_processes_still_cover():
    cov = coverage(seed=5, experiments=150, k=2, n=40, tau=0.08)
    assert cov["t"] >= 0.92, cov


# ---- variance decomposition ------------------------------------------------------------------

def _mean_components(seed, tau, experiments=80, k=6, n=40):
    rng = np.random.default_rng(seed)
    rows = [rp.replicated_speedup(simulate(rng, k, n, tau), seed=e, **FAST) for e in range(experiments)]
    return {key: float(np.mean([r[key] for r in rows])) for key in ("between_var", "within_var", "between_share")}


def test_between_variance_recovers_the_process_effect():
    m = _mean_components(seed=6, tau=0.10)
    assert m["between_var"] == pytest.approx(0.10 ** 2, rel=0.25), m
    assert m["between_share"] > 0.7, m


def test_no_process_effect_gives_a_small_between_share():
    m = _mean_components(seed=7, tau=0.0)
    assert m["between_share"] < 0.2, m
    # tau² is truncated at 0, so with no process effect it is biased up: for k=6, var(r) - within has
    # sd ≈ within·√(2/5) and its positive part averages ≈ 0.25·within
    assert m["between_var"] < 0.35 * m["within_var"], m


# ---- one process: exactly today's statistics -------------------------------------------------

def test_one_process_is_todays_speedup_labelled_quick():
    data = simulate(np.random.default_rng(8), 1, 60, tau=0.1)
    r = rp.replicated_speedup(data, seed=3)
    today = stats.speedup(data["fused"][0], data["unfused"][0], seed=3)
    for key, value in today.items():
        if key != "notes":
            assert r[key] == value, key
    assert r["mode"] == rp.QUICK_MODE == "quick: one process"
    assert r["n_processes"] == 1 and r["between_share"] is None
    assert rp.QUICK_NOTE in r["notes"]
    assert "quick: one process, 60 pairs" in rp.format_replicated(r)


def test_a_quick_run_whose_outputs_differ_keeps_that_verdict():
    data = simulate(np.random.default_rng(9), 1, 40, tau=0.0)
    sp = stats.judged_by_outputs(stats.speedup(data["fused"][0], data["unfused"][0]),
                                 {"within_tolerance": False, "max_abs": 3.0})
    q = rp.quick(sp)
    assert q["verdict_code"] == "outputs_differ" and q["verdict"] == stats.VERDICTS["outputs_differ"]
    assert q["mode"] == rp.QUICK_MODE
    assert q["timing_verdict"] == rp.QUICK_VERDICTS[sp["timing_verdict_code"]]  # the timing said of one process


def test_processes_with_too_few_pairs_are_left_out_and_may_leave_quick():
    data = simulate(np.random.default_rng(10), 3, 30, tau=0.05)
    data["fused"][1], data["unfused"][1] = data["fused"][1][:2], data["unfused"][1][:2]
    data["fused"][2], data["unfused"][2] = data["fused"][2][:1], data["unfused"][2][:1]
    r = rp.replicated_speedup(data)
    assert r["mode"] == rp.QUICK_MODE and r["processes_run"] == 3
    assert sum("left out" in note for note in r["notes"]) == 2
    assert r["estimate"] == stats.speedup(data["fused"][0], data["unfused"][0])["estimate"]


# ---- edge cases ------------------------------------------------------------------------------

def test_two_processes_give_a_wider_interval_and_say_so():
    rng = np.random.default_rng(11)
    r2 = rp.replicated_speedup(simulate(rng, 2, 40, tau=0.05))
    r6 = rp.replicated_speedup(simulate(rng, 6, 40, tau=0.05))
    assert r2["mode"] == "replicated" and r2["n_processes"] == 2
    assert r2["ci_low"] < r2["estimate"] < r2["ci_high"]
    assert any("1 degree of freedom" in note for note in r2["notes"])
    assert r2["ci_high"] / r2["ci_low"] > r6["ci_high"] / r6["ci_low"]


def test_estimate_is_the_geometric_mean_of_per_process_ratios():
    data = {"fused": [[10, 10, 10], [20, 20, 20]], "unfused": [[20, 20, 20], [80, 80, 80]]}
    r = rp.replicated_speedup(data)
    assert r["per_process_speedup"] == [2.0, 4.0]
    assert r["estimate"] == pytest.approx(8 ** 0.5)


def test_unequal_lengths_within_and_across_processes():
    data = simulate(np.random.default_rng(12), 4, 0, tau=0.05, n_per_process=[30, 55, 41, 80])
    data["unfused"][0] = data["unfused"][0][:25]  # a run stopped between the two halves of a pair
    r = rp.replicated_speedup(data)
    assert r["n_pairs_per_process"] == [25, 55, 41, 80] and r["n_pairs_total"] == 201
    assert any("5 unpaired" in note for note in r["notes"])
    assert "4 processes × 25–80 pairs" in rp.format_replicated(r)


def test_swapping_variants_inverts_estimate_and_interval():
    data = simulate(np.random.default_rng(13), 5, 30, tau=0.05)
    r = rp.replicated_speedup(data)
    s = rp.replicated_speedup({"fused": data["unfused"], "unfused": data["fused"]})
    assert s["estimate"] == pytest.approx(1 / r["estimate"])
    assert s["ci_low"] == pytest.approx(1 / r["ci_high"]) and s["ci_high"] == pytest.approx(1 / r["ci_low"])


def test_output_is_plain_json_and_deterministic():
    data = simulate(np.random.default_rng(14), 4, 30, tau=0.05)
    a, b = rp.replicated_speedup(data, seed=5), rp.replicated_speedup(data, seed=5)
    assert json.dumps(a) == json.dumps(b)
    assert all(type(a[k]) is float for k in ("estimate", "ci_low", "ci_high", "between_share", "tau"))


def test_no_difference_verdict_and_zero_samples():
    data = simulate(np.random.default_rng(15), 5, 40, tau=0.02, S=1.0)
    data["fused"][0][0] = 0
    r = rp.replicated_speedup(data)
    assert r["verdict_code"] == "same"
    assert any("zero-length" in note for note in r["notes"])


@pytest.mark.parametrize("bad, message", [
    ({"fused": [[1, 2, 3]]}, "need 'fused' and 'unfused'"),
    ({"fused": [[1, 2, 3]], "unfused": []}, "1 fused but 0 unfused"),
    ({"fused": [], "unfused": []}, "no processes"),
    ({"fused": [[1, -2, 3]], "unfused": [[1, 2, 3]]}, "negative"),
    ({"fused": [[1, 2, 3], []], "unfused": [[1, 2, 3], [4]]}, "no samples"),
])
def test_bad_input_names_the_problem(bad, message):
    with pytest.raises(stats.SampleError, match=message):
        rp.replicated_speedup(bad)


def test_a_rerun_lands_in_the_rerun_interval_at_the_stated_rate():
    # Two independent runs of the same configuration: the second estimate lies in the first's rerun
    # interval about 95% of the time, and in its interval for the speedup only about 83% (√2 narrower).
    rng = np.random.default_rng(11)
    hits = {"rerun": 0, "ci": 0}
    experiments = 300
    for e in range(experiments):
        first = rp.replicated_speedup(simulate(rng, 5, 30, 0.08), seed=e, **FAST)
        second = rp.replicated_speedup(simulate(rng, 5, 30, 0.08), seed=e, **FAST)["estimate"]
        hits["rerun"] += first["rerun_low"] <= second <= first["rerun_high"]
        hits["ci"] += first["ci_low"] <= second <= first["ci_high"]
        assert first["rerun_low"] < first["ci_low"] < first["ci_high"] < first["rerun_high"]
    assert 0.92 <= hits["rerun"] / experiments <= 0.98, hits
    assert 0.75 <= hits["ci"] / experiments <= 0.90, hits
