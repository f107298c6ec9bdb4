"""The memory-traffic estimate against the measurement over size sweeps: the GELU preset and a conv preset.

    .venv/bin/python benchmarks/traffic.py [--reps 30] [--env NAME=VALUE ...] [--remeasure] [--small]

Sweeps (medians of --reps interleaved pairs per point):
  * matmul_bias_gelu_approx, k=64 n=256, m over 1024..16384: little arithmetic per byte (memory-bound);
  * matmul_bias_gelu_approx, m=64 k=1024 n=1024 (and m=256): the matmul dominates (compute-bound);
  * conv2d_bias_relu, 3×3, 32→32 channels, height = width over 28..112.
Per point: measured fused/unfused, the per-op roofline estimate at each op's working-set bandwidth,
the same with every byte at DRAM bandwidth, measured and predicted speedups, the traffic fusion
saves, and on which side of the measurement the estimate lies ("ABOVE" = not a bound there).
The machine's profile is the one cached for this machine (--remeasure measures it again).
Without AVX-512 TensorFlow leaves oneDNN off and only MatMul+BiasAdd fuse; `--env TF_ENABLE_ONEDNN_OPTS=1`
fuses the whole MatMul+BiasAdd+GELU chain (the case the README quotes).
Figures, not assertions: quote them with the machine line printed last and the load average.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from explorer.analysis import traffic
from explorer.engine import Engine
from explorer.engine.cache import DEFAULT_CACHE_DIR
from explorer.model.flags import Config, parse_assignment
from explorer.present.machine import describe

SWEEPS = [
    ("matmul_bias_gelu_approx", {"k": 64, "n": 256}, "m", [1024, 4096, 16384]),
    ("matmul_bias_gelu_approx", {"k": 1024, "n": 1024}, "m", [64, 256]),
    ("conv2d_bias_relu", {"batch": 1, "in_channels": 32, "out_channels": 32, "filter_size": 3}, "height", [28, 56, 112]),
]
SMALL = [  # --small: a quick check that the script works, on tiny shapes
    ("matmul_bias_gelu_approx", {"k": 64, "n": 256}, "m", [256, 1024]),
    ("conv2d_bias_relu", {"batch": 1, "in_channels": 8, "out_channels": 8, "filter_size": 3}, "height", [14, 28]),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--env", action="append", default=[])
    parser.add_argument("--remeasure", action="store_true", help="measure the machine again (not the cached profile)")
    parser.add_argument("--small", action="store_true", help="tiny shapes, to check the script")
    parser.add_argument("--gelu", default="matmul_bias_gelu_approx", choices=["matmul_bias_gelu_approx", "matmul_bias_gelu_exact"],
                        help="the GELU preset of the matmul sweeps (on an AVX2 CPU with oneDNN, the exact one is the "
                             "fusion that pays)")
    args = parser.parse_args()
    config = Config.make("cpu", dict(parse_assignment(a, "--env") for a in args.env))
    engine = Engine(cache_dir=DEFAULT_CACHE_DIR)
    load = os.getloadavg()[0]
    try:
        profile = engine.machine(config, use_cache=not args.remeasure)
        print(f"machine: {profile['described']} [{profile['key']}]\n")
        for preset, fixed, param, values in SMALL if args.small else SWEEPS:
            preset = args.gelu if preset.startswith("matmul_bias_gelu") else preset
            print(f"{preset} {fixed} over {param}")
            print(f"  {param:>6} {'fused ms':>9} {'est':>8} {'DRAM est':>9} │ {'unfused':>9} {'est':>8} {'DRAM est':>9} │ "
                  f"{'speedup':>7} {'predicted':>9} │ {'saved MiB':>9} {'FLOP/B':>6}  estimate vs measured")
            for value in values:
                params = dict(fixed, **{param: value}, **({"width": value} if param == "height" else {}))  # square images
                point = {"preset": preset, "params": params}
                result = engine.traffic(engine.bench(point, config, reps=args.reps, warmup=3, max_seconds=120), config)
                (row,) = traffic.sweep_rows([{"value": value, "result": result}])
                where = ", ".join(f"{v} {'ABOVE (not a bound)' if row[f'{v}_relation'] == 'above' else 'below'}"
                                  for v in ("fused", "unfused"))
                print(f"  {value:>6} {row['fused_ms']:>9.3f} {row['est_fused_ms']:>8.3f} {row['est_dram_fused_ms']:>9.3f} │ "
                      f"{row['unfused_ms']:>9.3f} {row['est_unfused_ms']:>8.3f} {row['est_dram_unfused_ms']:>9.3f} │ "
                      f"{row['unfused_ms'] / row['fused_ms']:>6.2f}× {row['est_unfused_ms'] / row['est_fused_ms']:>8.2f}× │ "
                      f"{row['saved_mib']:>9.2f} {row['intensity']:>6.2f}  {where}")
                fingerprint = result["fingerprint"]
            print()
        print(f"{describe(fingerprint)} | flags {fingerprint['flags'] or 'defaults'} | load average {load:.2f} → "
              f"{os.getloadavg()[0]:.2f}")
    finally:
        engine.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
