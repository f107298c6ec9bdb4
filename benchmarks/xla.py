"""Three-way for the default presets: unfused, Grappler-fused and XLA (jit_compile=True) on this machine.

    .venv/bin/python benchmarks/xla.py [--reps 60] [--env NAME=VALUE ...] [--preset ID ...]

One row per preset: the three medians, XLA's speedup over unfused and over Grappler-fused with
95% CIs, XLA's first call (trace + compile) apart, the largest output difference between XLA and
Grappler, and whether each variant's proof held. Figures, not assertions: quote them with the
machine's load (printed last).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from explorer.engine import Engine
from explorer.errors import ExplorerError
from explorer.model.flags import Config, parse_assignment
from explorer.present.machine import describe

DEFAULT_PRESETS = ("matmul_bias_gelu_approx", "matmul_bias_gelu_exact", "matmul_bias_relu", "conv2d_bias_relu",
                   "layer_norm")


def ci(sp: dict) -> str:
    return "n/a" if sp["ci_low"] is None else f"{sp['ci_low']:.2f}-{sp['ci_high']:.2f}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=60)
    parser.add_argument("--warmup", type=int, default=5)
    parser.add_argument("--env", action="append", default=[])
    parser.add_argument("--preset", action="append", default=[])
    args = parser.parse_args()
    config = Config.make("cpu", dict(parse_assignment(a, "--env") for a in args.env))
    engine = Engine(cache_dir=None)
    fingerprint = None
    print(f"{'preset':<24} {'unfused':>9} {'Grappler':>9} {'XLA':>9} {'XLA/unfused (CI)':>18} "
          f"{'XLA/Grappler (CI)':>19} {'XLA 1st call':>12} {'max|XLA-G|':>10}  proof   (ms)")
    try:
        for preset_id in args.preset or DEFAULT_PRESETS:
            try:
                r = engine.bench({"preset": preset_id}, config, reps=args.reps, warmup=args.warmup,
                                 max_seconds=120, compiler="both")
            except ExplorerError as exc:
                print(f"{preset_id:<24} error: {exc}")
                continue
            fingerprint = r["fingerprint"]
            s = r["summary"]
            med = {k: v["median_ms"] for k, v in s["variants"].items()}
            a, b = s["speedups"]["xla/unfused"], s["speedups"]["xla/fused"]
            print(f"{preset_id:<24} {med['unfused']:>9.3f} {med['fused']:>9.3f} {med['xla']:>9.3f} "
                  f"{a['estimate']:>6.2f}x ({ci(a):>9}) {b['estimate']:>6.2f}x ({ci(b):>9}) "
                  f"{s['xla_first_call_ms']:>12.1f} {r['agreement']['xla-fused']['max_abs']:>10.2g}  "
                  f"{'ok' if r['proof_summary']['verified'] else 'see: ' + '; '.join(r['proof_summary']['problems'])}")
    finally:
        engine.close()
    if fingerprint:
        print(f"\n{describe(fingerprint)}; {args.reps} interleaved reps; load average {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
