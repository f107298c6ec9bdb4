"""From near-miss to measured gain on real networks: what the fixes buy (``python -m explorer fix``'s engine).

    .venv/bin/python benchmarks/fixes.py [--networks mobilenetv2,resnet50,...] [--size 96] [--onednn 0,1]
                                         [--processes 3] [--reps 30] [--keep DIR]

Each network (keras.applications with weights=None at SIZE×SIZE, seeded non-zero weights and batch-norm
statistics; tests/realmodels/networks.py) is exported as a SavedModel and given to ``Engine.fix`` with
every fix that applies, under each oneDNN setting. Printed per network and setting: the fixes applied,
the fused kernels before and after, the largest output difference against the original (same seeded
inputs), the speedup of all the fixes together and of each alone (the replicated fused-vs-unfused
method: PROCESSES fresh worker processes, REPS interleaved repetitions each; geometric mean and 95%
Student-t interval), the bytes the model's ops write per call before and after, the op time the
near-misses cost, and the seconds the whole fix took. Benchmarks run one at a time; read the ratios.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from explorer.engine import Engine  # noqa: E402
from explorer.engine.uploads import spec_for_path  # noqa: E402
from devkit.machine import cpu_model  # noqa: E402

SCRIPT = ROOT / "tests" / "realmodels" / "networks.py"
DEFAULT = "mobilenetv2,efficientnetb0,resnet50,densenet121"


def export(directory: Path, names: list[str], size: int) -> None:
    proc = subprocess.run([sys.executable, str(SCRIPT), "export", str(directory), *names], capture_output=True,
                          text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "NETWORKS_SIZE": str(size)})
    if proc.returncode:
        raise SystemExit(proc.stderr[-2000:])


def interval(sp: dict | None) -> str:
    if not sp:
        return "—"
    ci = f" ({sp['ci_low']:.2f}–{sp['ci_high']:.2f})" if sp.get("ci_low") is not None else ""
    return f"{sp['estimate']:.2f}×{ci}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--networks", default=DEFAULT)
    parser.add_argument("--size", type=int, default=96, help="input height and width (default 96)")
    parser.add_argument("--onednn", default="0,1", help="TF_ENABLE_ONEDNN_OPTS values to run (default 0,1)")
    parser.add_argument("--processes", type=int, default=3)
    parser.add_argument("--reps", type=int, default=30)
    parser.add_argument("--keep", metavar="DIR", help="export into DIR (kept) instead of a temporary directory")
    args = parser.parse_args()
    names = args.networks.split(",")
    directory = Path(args.keep or tempfile.mkdtemp(prefix="fixes-"))
    directory.mkdir(parents=True, exist_ok=True)
    print(f"{time.strftime('%Y-%m-%d %H:%M')} | CPU: {cpu_model()} | {os.cpu_count()} cores | load "
          f"{os.getloadavg()[0]:.1f} | {args.size}×{args.size}, batch 1 | {args.processes} processes × "
          f"{args.reps} reps", flush=True)
    missing = [n for n in names if not (directory / n / "saved_model.pb").exists()]
    if missing:
        export(directory, missing, args.size)
    print("| network | oneDNN | fixes | fused kernels | max abs diff | speedup, all (95% CI) | each alone | "
          "bytes written per call | near-misses' op time | s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    engine = Engine(cache_dir=None)
    out = Path(tempfile.mkdtemp(prefix="fixed-"))
    try:
        for name in names:
            for flag in args.onednn.split(","):
                started = time.perf_counter()
                result = engine.fix(spec_for_path(str(directory / name)), {"env": {"TF_ENABLE_ONEDNN_OPTS": flag}},
                                    out=str(out / f"{name}-{flag}"), processes=args.processes, reps=args.reps,
                                    max_seconds=60.0)
                seconds = time.perf_counter() - started
                timing = result.get("op_time") or {}
                # "†": TensorFlow dropped Grappler's work on that copy (its remapper failed, say), not on the original
                alone = ", ".join(f"{p['fix']}{'†' if p.get('tensorflow_failed') else ''} {interval(p.get('speedup'))}"
                                  for p in result["per_fix"]) if len(result["per_fix"]) > 1 else "—"
                written = result.get("bytes_written_before")
                traffic = (f"{written / 2**20:.2f} → {(written - result['bytes_saved']) / 2**20:.2f} MiB"
                           if written is not None and result.get("bytes_saved") is not None else "?")
                spent = (f"{timing['near_misses_ms']:.2f} of {timing['total_ms']:.2f} ms"
                         if timing.get("total_ms") else "?")
                diff = f"{result['max_abs_diff']:.1e}" if result.get("max_abs_diff") is not None else "—"
                failed = "†" if result.get("tensorflow_failed_after") else ""
                print(f"| {name} | {flag} | {', '.join(a['fix'] for a in result['applied']) or 'none'}{failed} | "
                      f"{result.get('fused_kernels_before', '?')} → {result.get('fused_kernels_after', '?')} | "
                      f"{diff} | {interval(result.get('speedup'))} | {alone} | {traffic} | {spent} | "
                      f"{seconds:.0f} |", flush=True)
    finally:
        engine.close()
        shutil.rmtree(out, ignore_errors=True)
        if not args.keep:
            shutil.rmtree(directory, ignore_errors=True)
    print(f"load after: {os.getloadavg()[0]:.1f}\n†: on the fixed copy TensorFlow dropped Grappler's work (its "
          "remapper failed, or it skipped Grappler), which the model as imported did not meet")
    return 0


if __name__ == "__main__":
    sys.exit(main())
