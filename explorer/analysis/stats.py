"""Statistics over the worker's benchmark samples: summaries, the fused speedup and its CI.

Pure numpy/scipy. Inputs are the worker's ``samples_ns`` lists (integer nanoseconds per call);
outputs are plain dicts of Python floats/ints/strings/None so they can go straight to JSON.

The worker times the two variants interleaved in pairs (pair i: fused then unfused on even i,
the reverse on odd i), so sample i of each list belongs to pair i. ``speedup`` keeps that pairing
when it resamples: drift that hits both members of a pair cancels instead of widening the CI.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

from ..errors import ExplorerError

VARIANTS = ("fused", "unfused")
NOISY_CV = 0.25  # coefficient of variation above which a variant's timings are called noisy
MIN_PAIRS_FOR_CI = 3

VERDICTS = {
    "faster": "fused is faster",
    "same": "no measurable difference",
    "slower": "fused is slower",
    "unknown": "too few samples to tell",
    # Set over the timing's own verdict when the two variants' outputs disagree: no speedup is a gain then.
    "outputs_differ": "NOT A GAIN: the fused variant's outputs differ from the unfused one's beyond tolerance",
}


# The same verdict where both variants return another shape than the model declares (a rewrite they share)
OFF_DECLARED = "NOT A GAIN: the outputs have another shape than the model declares"


def judged_by_outputs(sp: dict, agreement: dict | None) -> dict:
    """The speedup with its verdict replaced when the variants' outputs disagree (``timing_verdict`` keeps
    what the timing alone said): a faster kernel that computes something else is not a gain."""
    if (agreement or {}).get("within_tolerance") is False:
        words = OFF_DECLARED if (agreement or {}).get("off_declared") else VERDICTS["outputs_differ"]
        return dict(sp, verdict=words, verdict_code="outputs_differ",
                    timing_verdict=sp.get("verdict"), timing_verdict_code=sp.get("verdict_code"))
    return sp


class SampleError(ExplorerError, ValueError):
    """Samples that cannot be summarised; the message names the problem."""


def as_ns(samples: Iterable[float], what: str) -> np.ndarray:
    """One variant's samples as a flat array of nanoseconds; SampleError naming ``what`` if they are not."""
    try:
        arr = np.asarray(list(samples), dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise SampleError(f"{what}: samples must be numbers of nanoseconds ({exc})") from None
    if arr.ndim != 1:
        raise SampleError(f"{what}: samples must be a flat list of nanoseconds, got shape {arr.shape}")
    if arr.size == 0:
        raise SampleError(f"{what}: no samples (the benchmark recorded 0 timings)")
    if not np.all(np.isfinite(arr)):
        raise SampleError(f"{what}: samples contain NaN or infinity")
    if np.any(arr < 0):
        raise SampleError(f"{what}: samples contain negative durations")
    return arr


def finite(value) -> float | None:
    """The value as a float, or None where it is NaN or infinite (JSON has neither)."""
    value = float(value)
    return value if math.isfinite(value) else None


def summarize(samples_ns: Sequence[int]) -> dict:
    """Location and spread of one variant's per-call latencies, in milliseconds.

    ``mad_ms`` is the raw median absolute deviation (not scaled by 1.4826); ``cv`` is the sample
    standard deviation over the mean (0.0 for a single sample or an all-zero list).
    """
    arr = as_ns(samples_ns, "summarize")
    ms = arr / 1e6
    n = int(ms.size)
    p10, p25, median, p75, p90 = np.percentile(ms, [10, 25, 50, 75, 90])
    mean = float(ms.mean())
    std = float(ms.std(ddof=1)) if n > 1 else 0.0
    return {
        "n": n,
        "median_ms": float(median),
        "mean_ms": mean,
        "std_ms": std,
        "min_ms": float(ms.min()),
        "max_ms": float(ms.max()),
        "p10_ms": float(p10),
        "p25_ms": float(p25),
        "p75_ms": float(p75),
        "p90_ms": float(p90),
        "iqr_ms": float(p75 - p25),
        "mad_ms": float(np.median(np.abs(ms - median))),
        "cv": std / mean if mean > 0 else 0.0,
    }


def complete_pairs(fused_ns, unfused_ns, what: str) -> tuple[np.ndarray, np.ndarray, int, list[str]]:
    """The complete pairs of two variants' samples (sample i of each is pair i), the number of unpaired
    samples dropped from the longer side, and notes saying what was dropped or raised.

    0 ns means "below the timer's resolution": it counts as 1 ns, which keeps every ratio finite."""
    fused, unfused = as_ns(fused_ns, f"{what}: fused"), as_ns(unfused_ns, f"{what}: unfused")
    n = min(fused.size, unfused.size)
    dropped = int(fused.size + unfused.size - 2 * n)
    notes = []
    if dropped:
        notes.append(f"{dropped} unpaired sample(s) ignored; using the first {n} pairs")
    fused, unfused = fused[:n], unfused[:n]
    zeros = int(np.count_nonzero(fused == 0) + np.count_nonzero(unfused == 0))
    if zeros:
        notes.append(f"{zeros} zero-length sample(s) counted as 1 ns")
        fused, unfused = np.maximum(fused, 1.0), np.maximum(unfused, 1.0)
    return fused, unfused, dropped, notes


def _ratio_of_medians(unfused, fused, axis=-1):
    return np.median(unfused, axis=axis) / np.median(fused, axis=axis)


def speedup(fused_ns: Sequence[int] | np.ndarray, unfused_ns: Sequence[int] | np.ndarray, *, confidence: float = 0.95,
            seed: int = 0, resamples: int = 2000) -> dict:
    """How many times faster the fused graph is: median(unfused) / median(fused), with a CI.

    The CI is a percentile bootstrap of that same ratio of medians, resampling whole pairs.
    Only complete pairs are used: extra samples on the longer side are dropped (and counted).
    """
    if not 0 < confidence < 1:
        raise SampleError(f"speedup: confidence must be between 0 and 1, got {confidence}")
    if int(resamples) < 100:
        raise SampleError(f"speedup: resamples must be at least 100, got {resamples}")
    fused, unfused, dropped, notes = complete_pairs(fused_ns, unfused_ns, "speedup")
    n = fused.size
    estimate = float(_ratio_of_medians(unfused, fused))
    ratios = unfused / fused
    ci_low = ci_high = None
    if n >= MIN_PAIRS_FOR_CI:
        from scipy import stats as sps  # seconds to import: only a benchmark's speedup needs it

        result = sps.bootstrap(
            (unfused, fused), _ratio_of_medians, paired=True, vectorized=True,
            n_resamples=int(resamples), confidence_level=confidence, method="percentile",
            rng=np.random.default_rng(seed), batch=500,
        )
        ci_low = finite(result.confidence_interval.low)
        ci_high = finite(result.confidence_interval.high)
    else:
        notes.append(f"only {n} pair(s): at least {MIN_PAIRS_FOR_CI} are needed for a confidence interval")

    if ci_low is None or ci_high is None:
        code = "unknown"
    elif ci_low > 1.0:
        code = "faster"
    elif ci_high < 1.0:
        code = "slower"
    else:
        code = "same"
    return {
        "estimate": estimate,
        "ci_low": ci_low,
        "ci_high": ci_high,
        "confidence": float(confidence),
        "method": "percentile bootstrap of median(unfused)/median(fused), resampling pairs",
        "resamples": int(resamples) if ci_low is not None else 0,
        "seed": int(seed),
        "n_pairs": int(n),
        "dropped": dropped,
        "paired_ratio_median": float(np.median(ratios)),
        "fraction_fused_faster": float(np.mean(fused < unfused)),
        "verdict": VERDICTS[code],
        "verdict_code": code,
        "notes": notes,
    }


def _fmt(x: float, decimals: int) -> str:
    return f"{x:.{decimals}f}"


def format_speedup(sp: dict) -> str:
    """'1.8× (95% CI 1.6–2.0)'; decimals grow until the bounds differ visibly from the estimate."""
    est, lo, hi = sp["estimate"], sp.get("ci_low"), sp.get("ci_high")
    if lo is None or hi is None:
        return f"{_fmt(est, 2)}× (no CI: too few samples)"
    decimals = 1
    while decimals < 3 and any(
        _fmt(a, decimals) == _fmt(est, decimals) and not math.isclose(a, est) for a in (lo, hi)
    ):
        decimals += 1
    pct = f"{sp.get('confidence', 0.95) * 100:g}%"
    return f"{_fmt(est, decimals)}× ({pct} CI {_fmt(lo, decimals)}–{_fmt(hi, decimals)})"


def split_samples(raw: Mapping[str, Any]) -> tuple[list, list]:
    """(fused, unfused) nanosecond lists from a bench result or from its ``samples_ns`` dict."""
    if not isinstance(raw, dict):
        raise SampleError(f"expected a bench result dict, got {type(raw).__name__}")
    samples = raw.get("samples_ns", raw)
    if not isinstance(samples, dict) or any(v not in samples for v in VARIANTS):
        raise SampleError("bench result has no samples_ns with 'fused' and 'unfused' lists")
    return list(samples["fused"]), list(samples["unfused"])


def bench_summary(raw: Mapping[str, Any], *, confidence: float = 0.95, seed: int = 0, resamples: int = 2000) -> dict:
    """The worker's bench result reduced to per-variant summaries, the speedup and a noise flag."""
    fused, unfused = split_samples(raw)
    summaries = {"fused": summarize(fused), "unfused": summarize(unfused)}
    sp = judged_by_outputs(speedup(fused, unfused, confidence=confidence, seed=seed, resamples=resamples),
                           raw.get("agreement"))
    noisy_variants = [v for v in VARIANTS if summaries[v]["cv"] > NOISY_CV]
    reps = int(raw.get("reps_done", sp["n_pairs"]))
    requested = raw.get("reps_requested")
    return {
        "fused": summaries["fused"],
        "unfused": summaries["unfused"],
        "speedup": sp,
        "reps": reps,
        "reps_requested": int(requested) if requested is not None else reps,
        "stopped_early": requested is not None and reps < int(requested),
        "noisy": bool(noisy_variants),
        "noisy_variants": noisy_variants,
        "noise_threshold_cv": NOISY_CV,
    }


def sweep_table(points: Sequence[tuple[int, dict]], *, confidence: float = 0.95, seed: int = 0,
                resamples: int = 2000) -> list[dict]:
    """One row per swept parameter value (sorted by value): medians, speedup and its CI."""
    rows = []
    for value, raw in points:
        try:
            s = bench_summary(raw, confidence=confidence, seed=seed, resamples=resamples)
        except SampleError as exc:
            raise SampleError(f"sweep point {value!r}: {exc}") from None
        f, u, sp = s["fused"], s["unfused"], s["speedup"]
        rows.append({
            "value": value.item() if hasattr(value, "item") else value,
            "fused_median_ms": f["median_ms"],
            "unfused_median_ms": u["median_ms"],
            "fused_p10_ms": f["p10_ms"],
            "fused_p90_ms": f["p90_ms"],
            "unfused_p10_ms": u["p10_ms"],
            "unfused_p90_ms": u["p90_ms"],
            "speedup": sp["estimate"],
            "ci_low": sp["ci_low"],
            "ci_high": sp["ci_high"],
            "confidence": sp["confidence"],
            "verdict_code": sp["verdict_code"],
            "n_pairs": sp["n_pairs"],
            "noisy": s["noisy"],
        })
    rows.sort(key=lambda r: r["value"])
    return rows


def fusion_pays_from(rows: Sequence[dict]):
    """Smallest swept value from which fused is measurably faster at every larger value, or None."""
    start = None
    for row in sorted(rows, key=lambda r: r["value"]):
        if row["verdict_code"] == "faster":
            start = row["value"] if start is None else start
        else:
            start = None
    return start
