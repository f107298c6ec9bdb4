"""First graphs of an imported MobileNetV2-size model: cold worker, warm worker, and where the time goes.

    .venv/bin/python benchmarks/import_first_graphs.py [--reps 3] [--size 224] [--formats graphdef savedmodel]

MobileNetV2 (keras.applications, weights=None, non-zero weights so that freezing keeps the biases
and something fuses), exported as a frozen GraphDef and as a SavedModel, one copy per repetition
with its own weights (a distinct content digest: a model the worker has not seen). Each repetition
starts a new Engine (no result cache) and times ``engine.inspect`` until the annotated result is
there (the three stages, fusions, report):

- cold: a new worker process (TensorFlow imported) and the model new to it;
- warm: the same worker, already running, and the next copy of the model (new to it);
- again: the same model on the same worker once more (loaded model reused, nothing cached).
- passes: then the graph after every Grappler pass, as the pass tab asks for it (a model over
  ``PASS_GRAPHS_AUTO_NODES`` nodes gets its first graphs without them).

``--pass-graphs`` times first graphs that carry every pass's graph too (what they did before
2026-11-24), to compare on the same machine.

Targets (issue 11): cold < 10 s, warm < 2 s. Prints each repetition with the worker's own split
(TF start, load+trace, Grappler+run, convert) and the result's size, then the medians.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from explorer.engine import Engine, uploads  # noqa: E402
from explorer.model.flags import Config  # noqa: E402

TARGETS = {"cold": 10.0, "warm": 2.0}
MAKE = """
import os, sys
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
import keras, numpy as np, tensorflow as tf
from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2
directory, size, copies, formats = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split(",")
for i in range(copies):
    model = keras.applications.MobileNetV2(weights=None, input_shape=(size, size, 3))
    rng = np.random.default_rng(i)
    for w in model.weights:  # non-zero: frozen zero biases would be folded away and nothing would fuse
        v = w.numpy()
        if "variance" in w.path:
            w.assign(rng.uniform(0.5, 1.5, v.shape).astype(v.dtype))
        elif not np.any(v):
            w.assign(rng.uniform(0.1, 0.5, v.shape).astype(v.dtype))
    if "graphdef" in formats:
        fn = tf.function(lambda x: model(x, training=False)).get_concrete_function(
            tf.TensorSpec([None, size, size, 3], tf.float32, name="image"))
        with open(os.path.join(directory, f"mobilenetv2_{i}.pb"), "wb") as handle:
            handle.write(convert_variables_to_constants_v2(fn).graph.as_graph_def().SerializeToString())
    if "savedmodel" in formats:
        model.export(os.path.join(directory, f"mobilenetv2_{i}_savedmodel"), verbose=False)
"""
FILES = {"graphdef": "mobilenetv2_{}.pb", "savedmodel": "mobilenetv2_{}_savedmodel"}


def make_models(directory: str, size: int, copies: int, formats: list[str]) -> None:
    subprocess.run([sys.executable, "-c", MAKE, directory, str(size), str(copies), ",".join(formats)], check=True,
                   env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})


def timed(engine: Engine, path: str, config: Config, use_cache: bool = True,
          pass_graphs: bool = False) -> tuple[float, dict]:
    spec = uploads.spec_for_path(path)
    started = time.perf_counter()
    result = engine.inspect(spec, config, use_cache=use_cache, pass_graphs=pass_graphs)
    return time.perf_counter() - started, result


def split(result: dict) -> str:
    t, w = result.get("timings") or {}, result.get("worker") or {}
    return (f"[TF start {w.get('startup_s', 0):.1f} s, load+trace {t.get('build_s', 0):.2f} s, Grappler+run "
            f"{t.get('run_s', 0):.2f} s, convert {t.get('convert_s', 0):.2f} s; result "
            f"{len(json.dumps(result)) / 2**20:.1f} MiB, {len(result['fusions'])} fusions]")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--size", type=int, default=224, help="input height and width (default 224)")
    parser.add_argument("--formats", nargs="+", default=list(FILES), choices=list(FILES))
    parser.add_argument("--pass-graphs", action="store_true",
                        help="first graphs with the graph after every pass (as before 2026-11-24)")
    args = parser.parse_args()
    config = Config.make("cpu", {})
    print(f"load average at start: {os.getloadavg()[0]:.2f} ({os.cpu_count()} cores)", flush=True)
    with tempfile.TemporaryDirectory(prefix="import-bench-") as directory:
        started = time.perf_counter()
        make_models(directory, args.size, args.reps + 1, args.formats)
        print(f"made {args.reps + 1} MobileNetV2 {args.size}×{args.size} copies per format in "
              f"{time.perf_counter() - started:.0f} s", flush=True)
        medians = {}
        for fmt in args.formats:
            figures: dict[str, list[float]] = {"cold": [], "warm": [], "again": [], "passes": []}
            for i in range(args.reps):
                engine = Engine(cache_dir=None)
                try:
                    cold_s, cold = timed(engine, os.path.join(directory, FILES[fmt].format(i)), config,
                                         pass_graphs=args.pass_graphs)
                    warm_path = os.path.join(directory, FILES[fmt].format(i + 1))
                    warm_s, warm = timed(engine, warm_path, config, pass_graphs=args.pass_graphs)
                    again_s, again = timed(engine, warm_path, config, use_cache=False, pass_graphs=args.pass_graphs)
                    passes_s, passes = timed(engine, warm_path, config, use_cache=False, pass_graphs=True)
                finally:
                    engine.close()
                for name, value in (("cold", cold_s), ("warm", warm_s), ("again", again_s), ("passes", passes_s)):
                    figures[name].append(value)
                deferred = " (pass graphs left for the pass tab)" if warm["grappler"].get("pass_graphs_deferred") else ""
                print(f"{fmt} rep {i + 1}: cold {cold_s:.2f} s {split(cold)}\n"
                      f"{' ' * len(fmt)}        warm {warm_s:.2f} s {split(warm)}{deferred}\n"
                      f"{' ' * len(fmt)}        again {again_s:.2f} s {split(again)}\n"
                      f"{' ' * len(fmt)}        passes {passes_s:.2f} s {split(passes)} "
                      f"{len(passes['grappler']['pass_graphs'])} pass graphs", flush=True)
            medians[fmt] = {name: statistics.median(values) for name, values in figures.items()}
    print(f"\nload average at end: {os.getloadavg()[0]:.2f}")
    for fmt, m in medians.items():
        print(f"{fmt:<10} median cold {m['cold']:.2f} s (target < {TARGETS['cold']:.0f} s), warm {m['warm']:.2f} s "
              f"(target < {TARGETS['warm']:.0f} s), same model again {m['again']:.2f} s, "
              f"then its pass graphs {m['passes']:.2f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
