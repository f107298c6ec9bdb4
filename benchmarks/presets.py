"""Fused against unfused for every preset on this machine: medians, speedup and its CI.

    .venv/bin/python benchmarks/presets.py [--device cpu|gpu] [--reps 60] [--env NAME=VALUE ...] [--preset ID ...]

On a GPU machine, `--device gpu --env TF_USE_CUBLASLT=1` gives the GPU's table (a clear error
per preset where TensorFlow sees no GPU).

Prints one row per preset and, last, the machine it ran on. Figures, not assertions: the
machines are noisy, so quote medians and ratios.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from explorer.engine import Engine
from explorer.errors import ExplorerError
from explorer.model.catalog import PRESETS
from explorer.model.flags import Config, parse_assignment
from explorer.present.machine import describe


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--env", action="append", default=[])
    parser.add_argument("--preset", action="append", default=[])
    parser.add_argument("--device", choices=("cpu", "gpu"), default="cpu")
    args = parser.parse_args()
    config = Config.make(args.device, dict(parse_assignment(a, "--env") for a in args.env))
    engine = Engine(cache_dir=None)
    fingerprint = None
    print(f"{'preset':<26} {'fused ms':>10} {'unfused ms':>11} {'speedup':>8} {'95% CI':>13}  fused op executed")
    try:
        for preset_id in args.preset or list(PRESETS):
            try:
                r = engine.bench({"preset": preset_id}, config, reps=args.reps, warmup=args.warmup, max_seconds=120)
            except ExplorerError as exc:
                print(f"{preset_id:<26} error: {exc}")
                continue
            fingerprint = r["fingerprint"]
            s = r["summary"]
            sp = s["speedup"]
            ci = "n/a" if sp["ci_low"] is None else f"{sp['ci_low']:.2f}-{sp['ci_high']:.2f}"
            fused = ", ".join(n["op"] + str(n["fused_ops"]) for n in r["proof"]["fused"]["fused_nodes"]) or "(none)"
            # A figure whose proof failed or whose outputs disagree is not a figure to quote.
            doubts = [w for w, bad in (("PROOF NOT VERIFIED", not r["proof_summary"]["verified"]),
                                       ("OUTPUTS DISAGREE", not r["agreement"]["within_tolerance"])) if bad]
            print(f"{preset_id:<26} {s['fused']['median_ms']:>10.3f} {s['unfused']['median_ms']:>11.3f} "
                  f"{sp['estimate']:>7.2f}x {ci:>13}  {fused}" + "".join(f"  [{d}]" for d in doubts))
    finally:
        engine.close()
    if fingerprint:
        print(f"\nmachine: {describe(fingerprint)}; flags {config.shell_env() or 'defaults'}; "
              f"{args.reps} interleaved reps; {time.strftime('%Y-%m-%d')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
