"""The fused speedup replicated over several fresh worker processes, with an interval that includes
process-to-process variation.

Pure numpy/scipy. Input: per-process paired samples in nanoseconds::

    {"fused": [[ns, ...] per process], "unfused": [[ns, ...] per process]}

Inside a process, sample j of each list is pair j (the worker interleaves the variants), as in
``stats.speedup``. Model, with r_i the log ratio of medians of process i::

    r_i = mu + b_i + e_i     b_i ~ (0, tau²): the process effect (memory placement, scheduling, CPU state)
                             e_i ~ (0, s_i²): the within-process noise of the medians

The speedup a new run should reproduce is exp(mu). Estimate: the geometric mean over processes of
the per-process ratio of medians (each process weighs the same; symmetric when the variants swap).
Interval: Student-t on the r_i, exp(mean ± t_{k-1}·sd/√k); the spread of the r_i already holds
the between- and the within-process variance, so neither needs estimating for the interval. A
two-stage bootstrap under-covers with the 3-8 processes a run can afford (the prototype's
coverage table: 0.81-0.91 against 0.92-0.94 for t), so it is not used.

The interval is for the speedup; where the estimate of another run of k processes lands is the
prediction interval exp(mean ± t_{k-1}·sd·√(2/k)) (``rerun_low``/``rerun_high``), √2 wider: a
second run falls outside the first's interval for the speedup about one time in six by design.

The split of that spread (random-effects method of moments, as in DerSimonian-Laird): s_i² from a
bootstrap of the pairs inside process i, tau² = max(0, var(r) - mean s_i²), between_share =
tau² / (tau² + mean s_i²): near 1, more processes help; near 0, more values per process do.

With one usable process nothing separates b_i from mu: the result is ``stats.speedup`` itself
(today's computation), labelled ``quick: one process``.
"""

from __future__ import annotations

import math

import numpy as np

from .stats import MIN_PAIRS_FOR_CI, VARIANTS, VERDICTS, SampleError, complete_pairs, finite, speedup

QUICK_MODE = "quick: one process"
REPLICATED_MODE = "replicated"
QUICK_NOTE = ("quick: one process — the interval covers the noise inside one worker process only, not the "
              "process-to-process variation; run several processes for a repeatable speedup")

# One process's interval covers the noise inside that process only: a verdict from it is that process's (a quick
# run said "fused is slower" at 0.75–0.99 that the repeatable run straight after overturned: 0.94–1.02).
QUICK_VERDICTS = {
    "faster": "fused was faster in this one process (quick run: repeat it in several processes to rely on it)",
    "same": "no measurable difference in this one process (quick run)",
    "slower": "fused was slower in this one process (quick run: repeat it in several processes to rely on it)",
    "unknown": VERDICTS["unknown"],
}


def quick(sp: dict) -> dict:
    """A one-process speedup (``stats.speedup``) labelled as such: its mode, and its verdict said of that process."""
    code = sp.get("verdict_code", "unknown")
    if code not in QUICK_VERDICTS:  # outputs that differ outrank any timing: that verdict stays, the timing's is relabelled
        return dict(sp, mode=QUICK_MODE,
                    timing_verdict=QUICK_VERDICTS.get(sp.get("timing_verdict_code", "unknown"), sp.get("timing_verdict")))
    return dict(sp, mode=QUICK_MODE, verdict=QUICK_VERDICTS[code])


def _pairs(fused_ns, unfused_ns, what: str, notes: list) -> tuple[np.ndarray, np.ndarray]:
    """One process's complete pairs (``stats.complete_pairs``), its notes added to ``notes`` under ``what``."""
    fused, unfused, _dropped, said = complete_pairs(fused_ns, unfused_ns, what)
    notes.extend(f"{what}: {note}" for note in said)
    return fused, unfused


def _verdict(lo, hi) -> str:
    if lo is None or hi is None:
        return "unknown"
    return "faster" if lo > 1.0 else "slower" if hi < 1.0 else "same"


def t_interval(logratios: np.ndarray, confidence: float, rerun: bool = False) -> tuple[float | None, float | None]:
    """exp(mean ± t_{k-1}·sd/√k) over per-process log-ratios: the interval for the speedup; (None, None)
    below 2 processes.

    With ``rerun``, where the estimate of another run of as many processes lands: the prediction
    interval exp(mean ± t_{k-1}·sd·√(2/k)), which holds this run's error and the next one's. The
    interval for the speedup is √2 narrower, so a rerun falls outside it about one time in six even
    when both runs are sound."""
    k = logratios.size
    if k < 2:
        return None, None
    half_width = float(logratios.std(ddof=1)) * math.sqrt((2.0 if rerun else 1.0) / k)
    from scipy import stats as _sps  # here, not at import: scipy.stats costs ~1 s and inspect never needs it

    q = float(_sps.t.ppf(0.5 + confidence / 2, df=k - 1))
    mean = float(logratios.mean())
    return finite(math.exp(mean - q * half_width)), finite(math.exp(mean + q * half_width))


def within_variances(procs: list, resamples: int, rng: np.random.Generator) -> np.ndarray:
    """Each process's bootstrap variance of its log ratio of medians (resampling its pairs)."""
    out = []
    for fused, unfused in procs:
        idx = rng.integers(0, fused.size, size=(resamples, fused.size))
        boot = np.log(np.median(unfused[idx], axis=1)) - np.log(np.median(fused[idx], axis=1))
        out.append(boot.var(ddof=1))
    return np.asarray(out)


def variance_components(logratios: np.ndarray, within_var: np.ndarray) -> dict:
    """Method-of-moments split of the per-process log-ratio spread into between and within."""
    within = float(np.mean(within_var))
    observed = float(logratios.var(ddof=1))
    between = max(0.0, observed - within)
    total = between + within
    return {"observed_var": observed, "within_var": within, "between_var": between,
            "between_share": between / total if total > 0 else 0.0, "tau": math.sqrt(between)}


def replicated_speedup(samples: dict, *, confidence: float = 0.95, seed: int = 0, resamples: int = 2000,
                       within_resamples: int = 400) -> dict:
    """The speedup over k processes (geometric mean, Student-t interval, between-process share); with
    one usable process, ``stats.speedup`` of it labelled ``quick: one process``.

    Processes with fewer than MIN_PAIRS_FOR_CI complete pairs are left out and named in the notes.
    """
    if not 0 < confidence < 1:
        raise SampleError(f"speedup: confidence must be between 0 and 1, got {confidence}")
    if int(within_resamples) < 50:
        raise SampleError(f"speedup: within_resamples must be at least 50, got {within_resamples}")
    if not isinstance(samples, dict) or any(v not in samples for v in VARIANTS):
        raise SampleError("samples need 'fused' and 'unfused' lists of per-process lists")
    fused_all, unfused_all = list(samples["fused"]), list(samples["unfused"])
    if len(fused_all) != len(unfused_all):
        raise SampleError(f"{len(fused_all)} fused but {len(unfused_all)} unfused process lists")
    if not fused_all:
        raise SampleError("no processes")
    notes: list[str] = []
    kept, index = [], []
    for i, (f_ns, u_ns) in enumerate(zip(fused_all, unfused_all)):
        f, u = _pairs(f_ns, u_ns, f"process {i + 1}", notes)
        if f.size < MIN_PAIRS_FOR_CI:
            notes.append(f"process {i + 1}: only {f.size} pair(s), left out (at least {MIN_PAIRS_FOR_CI} needed)")
            continue
        kept.append((f, u))
        index.append(i)
    if len(kept) < 2:
        which = index[0] if index else 0
        one = speedup(fused_all[which], unfused_all[which], confidence=confidence, seed=seed, resamples=resamples)
        return dict(one, mode=QUICK_MODE, n_processes=1, processes_run=len(fused_all),
                    n_pairs_per_process=[one["n_pairs"]], n_pairs_total=one["n_pairs"],
                    per_process_speedup=[one["estimate"]], between_share=None, tau=None,
                    notes=notes + one["notes"] + [QUICK_NOTE])
    if int(resamples) < 100:
        raise SampleError(f"speedup: resamples must be at least 100, got {resamples}")
    k = len(kept)
    ratios = np.array([float(np.median(u) / np.median(f)) for f, u in kept])
    logr = np.log(ratios)
    components = variance_components(logr, within_variances(kept, int(within_resamples),
                                                            np.random.default_rng(seed)))
    lo, hi = t_interval(logr, confidence)
    rerun_lo, rerun_hi = t_interval(logr, confidence, rerun=True)
    code = _verdict(lo, hi)
    sizes = [int(f.size) for f, _ in kept]
    if k == 2:
        notes.append("2 processes: the interval has 1 degree of freedom and is wide; 4 or more are advised")
    return {
        "mode": REPLICATED_MODE,
        "estimate": float(math.exp(logr.mean())),
        "ci_low": lo,
        "ci_high": hi,
        "rerun_low": rerun_lo,
        "rerun_high": rerun_hi,
        "confidence": float(confidence),
        "method": (f"geometric mean over {k} processes of median(unfused)/median(fused); "
                   f"Student-t interval (df={k - 1}) on the per-process log-ratios"),
        "n_processes": k,
        "processes_run": len(fused_all),
        "process_index": index,
        "n_pairs_per_process": sizes,
        "n_pairs_total": int(sum(sizes)),
        "n_pairs": int(sum(sizes)),
        "per_process_speedup": [float(x) for x in ratios],
        "median_process_speedup": float(np.median(ratios)),
        **components,
        "seed": int(seed),
        "verdict": VERDICTS[code],
        "verdict_code": code,
        "notes": notes,
    }


def pooled_interval(samples: dict, *, confidence: float = 0.95, seed: int = 0, resamples: int = 2000) -> tuple:
    """Today's interval on every process's pairs pooled as if from one process: what ignoring the
    process effect would claim (shown beside the replicated interval, never instead of it)."""
    notes: list[str] = []
    procs = [_pairs(f, u, f"process {i + 1}", notes)
             for i, (f, u) in enumerate(zip(samples["fused"], samples["unfused"]))]
    sp = speedup(np.concatenate([f for f, _ in procs]), np.concatenate([u for _, u in procs]),
                 confidence=confidence, seed=seed, resamples=resamples)
    return sp["ci_low"], sp["ci_high"]


def pairs_words(sp: dict) -> str:
    """'4 processes × 25–80 pairs' (or '1 process × 60 pairs')."""
    sizes = sp.get("n_pairs_per_process") or [sp.get("n_pairs", 0)]
    per = f"{sizes[0]}" if len(set(sizes)) == 1 else f"{min(sizes)}–{max(sizes)}"
    k = sp.get("n_processes", 1)
    return f"{k} process{'es' if k != 1 else ''} × {per} pairs"


def format_replicated(sp: dict) -> str:
    """'1.95× (95% CI 1.71–2.22; a rerun lands in 1.62–2.34; 4 processes × 50 pairs, 62% of the spread
    between processes)'."""
    est, lo, hi = sp["estimate"], sp.get("ci_low"), sp.get("ci_high")
    pct = f"{sp.get('confidence', 0.95) * 100:g}%"
    ci = f"{pct} CI {lo:.2f}–{hi:.2f}" if lo is not None and hi is not None else "no CI: too few samples"
    if sp.get("mode", QUICK_MODE) == QUICK_MODE:
        return f"{est:.2f}× ({ci}; {QUICK_MODE}, {sp.get('n_pairs_total', sp.get('n_pairs'))} pairs)"
    share = sp.get("between_share")
    tail = f", {share * 100:.0f}% of the spread between processes" if share is not None else ""
    rerun = (f"; a rerun lands in {sp['rerun_low']:.2f}–{sp['rerun_high']:.2f}"
             if sp.get("rerun_low") is not None and sp.get("rerun_high") is not None else "")
    return f"{est:.2f}× ({ci}{rerun}; {pairs_words(sp)}{tail})"


def run_words(sp: dict) -> str:
    """How the speedup was obtained, for a person: the mode, processes × values, the between share."""
    if sp.get("mode", QUICK_MODE) == QUICK_MODE:
        return (f"{QUICK_MODE} ({sp.get('n_pairs_total', sp.get('n_pairs'))} pairs): the interval covers the "
                "noise inside one worker process, not from one run to the next; --processes N for that")
    share = sp.get("between_share")
    share_words = "" if share is None else f"; {share * 100:.0f}% of the spread is between processes"
    rerun = (f"; another run of as many processes lands in {sp['rerun_low']:.2f}–{sp['rerun_high']:.2f}x (95%)"
             if sp.get("rerun_low") is not None and sp.get("rerun_high") is not None else "")
    return (f"replicated: {pairs_words(sp)} (fresh worker processes, each warmed up); geometric mean of the "
            f"per-process speedups {', '.join(f'{x:.2f}' for x in sp['per_process_speedup'])}{share_words}{rerun}")
