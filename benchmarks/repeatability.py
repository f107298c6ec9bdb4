"""Is a replicated speedup repeatable? The same configuration twice in a row, N times over.

    .venv/bin/python benchmarks/repeatability.py [PRESET] [--processes 4] [--reps 50] [--warmup 5]
        [--pairs 10] [--set PARAM=VALUE ...] [--env NAME=VALUE ...] [--device cpu|gpu]

For each pair it prints both estimates with their intervals, whether they are within ±5% of each
other, and whether the second lies inside the first one's interval; then the counts (the issue's
target on a quiet machine: at least 9 of 10 for both), and an order check (how often the first run
of a pair read higher than the second: about half the pairs when runs are exchangeable). Figures,
not assertions: run it on a quiet machine, and quote the machine line and the date with the counts.

The default configuration is matmul_bias_gelu_exact with TF_ENABLE_ONEDNN_OPTS=1 (used when no
--env is given): a fusion that pays on any x86 CPU, AVX2-only included (oneDNN's fused exact GELU,
about 1.8-2x at the preset's 16384x64x256), so the pairs compare a real speedup. On an AVX2 CPU the
approximate GELU fused by oneDNN is no faster than unfused (0.9-1.1x, mostly process-to-process
spread): the wrong demo there. With the defaults (10 pairs x 2 runs x 4 fresh processes: 80 worker
processes of about 6-7 s each, half of it TensorFlow's import) it should take 8-10 minutes on a quiet
2-core machine; after the first pair it prints its own projection (2 pairs took 154 s at load 2).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from explorer.analysis.replicated import format_replicated
from explorer.engine import Engine
from explorer.errors import ExplorerError
from explorer.model.flags import Config, parse_assignment
from explorer.present.machine import describe

TOLERANCE = 0.05
DEFAULT_PRESET = "matmul_bias_gelu_exact"
DEFAULT_ENV = ["TF_ENABLE_ONEDNN_OPTS=1"]  # oneDNN is off by default on CPUs without AVX-512


def compare(first: dict, second: dict) -> dict:
    """Whether two speedups agree: within ±5% of the first; the second inside the first's rerun interval
    (where the tool says another run lands: the target) and inside its interval for the speedup (√2
    narrower, so a second run falls outside it about one time in six even when both are sound)."""
    a, b = first["estimate"], second["estimate"]

    def inside(low, high):
        lo, hi = first.get(low), first.get(high)
        return lo is not None and hi is not None and lo <= b <= hi
    return {"within_5pct": abs(b - a) <= TOLERANCE * a, "inside_rerun": inside("rerun_low", "rerun_high"),
            "inside_ci": inside("ci_low", "ci_high")}


def order_check(ratios: list[float]) -> str:
    """Whether the first run of a pair reads systematically higher (or lower) than the second: the count
    of pairs where it did, the two-sided sign-test p-value, and the geometric mean of first/second."""
    from math import comb, exp, log

    n, higher = len(ratios), sum(r > 1 for r in ratios)
    tail = sum(comb(n, k) for k in range(min(higher, n - higher) + 1)) / 2 ** n if n else 1.0
    mean = exp(sum(log(r) for r in ratios) / n) if n else 1.0
    return (f"order check: the first run read higher in {higher}/{n} pairs (sign test p={min(1.0, 2 * tail):.2f}); "
            f"first/second {mean:.3f} on average")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("preset", nargs="?", default=DEFAULT_PRESET)
    parser.add_argument("--processes", type=int, default=4)
    parser.add_argument("--reps", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--max-seconds", type=float, default=60.0)
    parser.add_argument("--set", action="append", default=[])
    parser.add_argument("--env", action="append", default=None,
                        help=f"environment flag NAME=VALUE (repeatable); default {' '.join(DEFAULT_ENV)}")
    parser.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    args = parser.parse_args()
    try:
        spec = {"preset": args.preset, "params": dict(parse_assignment(a, "--set") for a in args.set)}
        config = Config.make(args.device, dict(parse_assignment(a, "--env") for a in (DEFAULT_ENV if args.env is None else args.env)))
    except ExplorerError as exc:
        print(f"repeatability: error: {exc}", file=sys.stderr)
        return 2
    engine = Engine(cache_dir=None)
    counts = {"within_5pct": 0, "inside_rerun": 0, "inside_ci": 0}
    ratios = []  # first / second estimate of each pair: the order check
    fingerprint, load = None, [os.getloadavg()[0]]
    started = time.perf_counter()
    print(f"{args.preset} {spec['params'] or ''} | {config.shell_env() or 'default flags'} | {args.pairs} pairs of "
          f"runs, each {args.processes} processes × {args.reps} reps after {args.warmup} warm-up", flush=True)
    try:
        for i in range(1, args.pairs + 1):
            runs = [engine.bench(spec, config, reps=args.reps, warmup=args.warmup, max_seconds=args.max_seconds,
                                 processes=args.processes) for _ in range(2)]
            fingerprint = runs[0]["fingerprint"]
            load.append(os.getloadavg()[0])
            first, second = (r["summary"]["speedup"] for r in runs)
            ratios.append(first["estimate"] / second["estimate"])
            verdict = compare(first, second)
            for key, ok in verdict.items():
                counts[key] += ok
            if i == 1 and args.pairs > 1:
                took = time.perf_counter() - started
                print(f"(the first pair took {took:.0f} s: all {args.pairs} take about {took * args.pairs / 60:.0f} min)",
                      flush=True)
            print(f"pair {i:>2}: {format_replicated(first)}\n         {format_replicated(second)}\n"
                  f"         within ±5%: {'yes' if verdict['within_5pct'] else 'NO'}; second inside the first's "
                  f"rerun interval: {'yes' if verdict['inside_rerun'] else 'NO'} (its interval for the speedup: "
                  f"{'yes' if verdict['inside_ci'] else 'no'})", flush=True)
    except ExplorerError as exc:
        print(f"repeatability: error: {exc}", file=sys.stderr)
        return 1
    finally:
        engine.close()
    n = args.pairs
    print(f"\nwithin ±5% of each other: {counts['within_5pct']}/{n}; second inside the first's rerun interval: "
          f"{counts['inside_rerun']}/{n} (target on a quiet machine: at least {n - n // 10} of {n} each); inside "
          f"the first's interval for the speedup: {counts['inside_ci']}/{n} (about 5 in 6 expected)")
    print(order_check(ratios))
    print(f"machine: {describe(fingerprint) if fingerprint else '?'}; {time.strftime('%Y-%m-%d %H:%M')}; "
          f"load average {min(load):.2f}–{max(load):.2f}; {time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
