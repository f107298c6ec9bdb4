"""A against B: how much faster one setting is than another for a model as served (``Engine.compare``).

    .venv/bin/python benchmarks/against.py [--processes 3] [--reps 30] [--network mobilenetv3small] [--size 64]
                                           [--a TF_ENABLE_ONEDNN_OPTS=1] [--b TF_ENABLE_ONEDNN_OPTS=0]

Three models: two presets at sizes where the fusion is visible (MatMul + BiasAdd + GELU, Conv2D + BiasAdd +
ReLU) and an imported model (a keras.applications network with seeded non-zero weights, exported as a
SavedModel by tests/realmodels/networks.py, fed a batch of 1). For each, A (the ``--a`` setting) against B (A
with ``--b``): every round a fresh worker process per side, the sides alternating which goes first, REPS
timed calls after warm-up; printed per model: each side's median, the executed graph's fused kernels, B's
speedup over A (median(A) / median(B), geometric mean over rounds, 95% Student-t interval) and its verdict,
the per-round ratios, and the seconds it took. Benchmarks run one at a time; read the ratios.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from devkit.machine import cpu_model  # noqa: E402
from explorer.cli.compare import b_of  # noqa: E402
from explorer.engine import Engine  # noqa: E402
from explorer.engine.uploads import spec_for_path  # noqa: E402
from explorer.model.flags import Config, parse_assignment  # noqa: E402
from explorer.present.compare_text import speedup_words  # noqa: E402

SCRIPT = ROOT / "tests" / "realmodels" / "networks.py"
PRESETS = {
    "matmul_bias_gelu_approx": {"m": 512, "k": 512, "n": 512},
    "conv2d_bias_relu": {"batch": 8, "height": 56, "width": 56, "in_channels": 64, "out_channels": 64},
}


def export(directory: Path, name: str, size: int) -> Path:
    proc = subprocess.run([sys.executable, str(SCRIPT), "export", str(directory), name], capture_output=True,
                          text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "NETWORKS_SIZE": str(size)})
    if proc.returncode:
        raise SystemExit(proc.stderr[-2000:])
    return next(p for p in directory.iterdir() if p.is_dir())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--network", default="mobilenetv3small")
    parser.add_argument("--size", type=int, default=64)
    parser.add_argument("--a", default="TF_ENABLE_ONEDNN_OPTS=1")
    parser.add_argument("--b", default="TF_ENABLE_ONEDNN_OPTS=0")
    args = parser.parse_args()
    name, value = parse_assignment(args.a, "--a")
    a_config = Config.make("cpu", {name: value})
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} | {cpu_model()} | {os.cpu_count()} cores | "
          f"load average {os.getloadavg()[0]:.1f} at the start | A: {args.a}, B: {args.b} | {args.processes} "
          f"rounds × {args.reps} calls a side")
    engine = Engine(cache_dir=None)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            models = {preset: {"preset": preset, "params": params} for preset, params in PRESETS.items()}
            path = export(Path(tmp), args.network, args.size)
            models[f"{args.network} {args.size}×{args.size} (SavedModel)"] = spec_for_path(str(path), unknown_dim=1)
            for label, spec in models.items():
                b_spec, b_config = b_of(spec, a_config, [args.b])
                started = time.perf_counter()
                result = engine.compare(spec, a_config, b_spec, b_config, processes=args.processes, reps=args.reps,
                                        warmup=5, max_seconds=60.0)
                sp = result["speedup"]
                fused = [p["fused_nodes"] for p in (result["proof"]["A"][0], result["proof"]["B"][0])]
                print(f"{label}\n  A median {result['summary']['A']['median_ms']:.3f} ms ({fused[0]} fused kernels)"
                      f" | B median {result['summary']['B']['median_ms']:.3f} ms ({fused[1]} fused kernels)\n"
                      f"  B against A {speedup_words(sp)}: {sp['verdict']} | per round "
                      f"{', '.join(f'{x:.2f}' for x in sp.get('per_process_speedup') or [])} | "
                      f"{time.perf_counter() - started:.0f} s, load {result['load']['before']} → "
                      f"{result['load']['after']}", flush=True)
    finally:
        engine.close()


if __name__ == "__main__":
    main()
