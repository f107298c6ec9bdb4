"""The CLI's cold path against the seed's graph tool: one small model, from the command to its answer.

    .venv/bin/python benchmarks/cold_cli.py [--repeats 5] [--seed-tool DIR]

Ours: ``python -m explorer inspect matmul_bias_gelu_approx --set m=3 --set k=4 --set n=3 --no-cache``
(a new worker process imports TensorFlow, traces, runs Grappler and answers; the parent prints the
graphs' summary). The seed's tool (github.com/kaixih/tf_op_graph, a checkout given as DIR): its
``examples/remapper_matmul_bias_gelu.py``, the same 3×4·4×3 MatMul+BiasAdd+GELU (approximate),
run twice in graph mode (remapper off, on) and drawn to a PNG with pydot. The two alternate, so load
changes hit both alike. Prints each run and the medians; the machine's load average with them (read
figures from a quiet machine). Without --seed-tool only ours is timed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OURS = [sys.executable, "-m", "explorer", "inspect", "matmul_bias_gelu_approx", "--set", "m=3", "--set", "k=4",
        "--set", "n=3", "--no-cache"]
SEED_EXAMPLE = "examples/remapper_matmul_bias_gelu.py"


def timed(cmd: list[str], cwd: str, env: dict) -> float:
    started = time.perf_counter()
    out = subprocess.run(cmd, check=False, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    seconds = time.perf_counter() - started
    if out.returncode != 0:
        raise SystemExit(f"cold_cli: {' '.join(cmd[1:3])} failed ({out.returncode}): {out.stderr.strip()[-500:]}")
    return seconds


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed-tool", type=Path, help="a checkout of github.com/kaixih/tf_op_graph")
    args = parser.parse_args()
    if args.seed_tool and not (args.seed_tool / SEED_EXAMPLE).is_file():
        print(f"cold_cli: error: {args.seed_tool / SEED_EXAMPLE} not found: give a checkout of "
              "https://github.com/kaixih/tf_op_graph", file=sys.stderr)
        return 2
    env = dict(os.environ, EXPLORER_CACHE_DIR=tempfile.mkdtemp(prefix="explorer-cold-cli-"))
    seed_env = dict(os.environ, PYTHONPATH=str(args.seed_tool or ""))
    times: dict[str, list[float]] = {"explorer inspect": []}
    if args.seed_tool:
        times["seed graph tool"] = []
    load = [os.getloadavg()[0]]
    with tempfile.TemporaryDirectory(prefix="seed-tool-out-") as out_dir:
        for i in range(args.repeats):
            times["explorer inspect"].append(timed(OURS, str(ROOT), env))
            line = f"run {i + 1}: explorer inspect {times['explorer inspect'][-1]:.2f} s"
            if args.seed_tool:
                times["seed graph tool"].append(timed([sys.executable, str(args.seed_tool / SEED_EXAMPLE)], out_dir,
                                                      seed_env))
                line += f", seed graph tool {times['seed graph tool'][-1]:.2f} s"
            load.append(os.getloadavg()[0])
            print(line, flush=True)
    print(f"cold CLI, {time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} CPUs, load average "
          f"{min(load):.2f}–{max(load):.2f}, medians of {args.repeats}:")
    for label, values in times.items():
        print(f"  {label:<17} {statistics.median(values):.2f} s")
    if args.seed_tool:
        ratio = statistics.median(times["explorer inspect"]) / statistics.median(times["seed graph tool"])
        print(f"  explorer / seed  {ratio:.2f}× (target: at most 1.00×)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
