"""How long a graph view takes: cold (new flags: a new worker imports TensorFlow), warm (a warm
worker, a model not seen before), and repeat (served from the result cache), including the
parent's work to diff and draw both graphs.

    .venv/bin/python benchmarks/graph_view.py [--repeats 5]

Prints medians (seconds) over the repeats; the last lines are the summary.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from explorer.analysis.annotate import graphs_of
from explorer.analysis.diff import diff_graphs
from explorer.engine import Engine
from explorer.model.flags import Config
from explorer.present.dot import to_dot

SPEC = {"preset": "matmul_bias_gelu_approx", "params": {"m": 1024}}


def view(engine: Engine, spec: dict, config: Config) -> float:
    started = time.perf_counter()
    result = engine.inspect(spec, config)
    graphs = graphs_of(result)
    diff = diff_graphs(graphs["traced"], graphs["optimized"])
    to_dot(graphs["traced"], diff.overlay("before"), clusters=diff.clusters("before"))
    to_dot(graphs["optimized"], diff.overlay("after"), clusters=diff.clusters("after"))
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    cold, warm, repeat = [], [], []
    for i in range(args.repeats):
        with tempfile.TemporaryDirectory() as cache:
            engine = Engine(cache_dir=cache)
            try:
                # A distinct flag set each round: a new worker process, TensorFlow imported afresh.
                config = Config.make("cpu", {"TF_MATMUL_AUTOTUNE_ENABLE": str(i % 2)})
                cold.append(view(engine, SPEC, config))
                warm.append(view(engine, {"preset": "matmul_bias_gelu_approx", "params": {"m": 1024 + 8 * (i + 1)}}, config))
                repeat.append(view(engine, SPEC, config))
            finally:
                engine.close()
        print(f"round {i + 1}: cold {cold[-1]:.2f} s, warm {warm[-1]:.3f} s, repeat {repeat[-1]:.3f} s", flush=True)
    print(f"\ncold graph view (new flags, new worker): median {statistics.median(cold):.2f} s")
    print(f"warm graph view (warm worker, new model): median {statistics.median(warm):.3f} s")
    print(f"repeat graph view (served from cache):     median {statistics.median(repeat):.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
