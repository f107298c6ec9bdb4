"""The faulty-fusion corpus through ``diagnose``: found, pinned to the right node, a way around verified, repro
reproduces (``python -m explorer diagnose``'s engine).

    .venv/bin/python benchmarks/diagnose_corpus.py [--models NAME,...] [--no-ways] [--reps 5] [--onednn 1]

Each model of tests/fixtures/faulty/corpus.json (imported ones made by make_faulty.py in a process of their
own) is diagnosed with TF_ENABLE_ONEDNN_OPTS as given (default 1, where the corpus breaks). Printed per
model: the verdict, the node pinned (and whether it is the corpus's), the pattern and the kernel, whether
its repro script failed the same way in a fresh process, each way around (runs, agrees, its median time
per call against the unfused graph's) and the seconds the diagnosis took; then the tally, the date and the
CPU. It runs one fresh worker per check: read the tally, not the seconds, on a loaded machine.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from devkit.machine import cpu_model  # noqa: E402
from explorer.analysis.diagnosis import tally  # noqa: E402
from explorer.engine import Engine, diagnose  # noqa: E402
from tests.faulty.corpus import entries, make_imports, spec  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", help="corpus names, comma-separated (default: all)")
    parser.add_argument("--no-ways", action="store_true", help="skip verifying the ways around")
    parser.add_argument("--reps", type=int, default=5, help="timed calls of each way around")
    parser.add_argument("--onednn", default="1", choices=("0", "1"))
    args = parser.parse_args()
    chosen = [e for e in entries() if not args.models or e["name"] in args.models.split(",")]
    config = {"device": "cpu", "env": {"TF_ENABLE_ONEDNN_OPTS": args.onednn}, "grappler": {}}
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    results, expected = [], {}
    with tempfile.TemporaryDirectory() as folder:
        models = make_imports(Path(folder)) if any(e["source"] == "import" for e in chosen) else None
        engine = Engine(cache_dir=None)
        try:
            for entry in chosen:
                t0 = time.perf_counter()
                result = diagnose.run(engine, spec(entry, models), config, ways=not args.no_ways, reps=args.reps)
                result["name"], expected[entry["name"]] = entry["name"], entry["node"]
                results.append(result)
                show(entry, result, time.perf_counter() - t0)
        finally:
            engine.close()
    print(f"\nTally ({started}, {cpu_model()}, TF_ENABLE_ONEDNN_OPTS={args.onednn}): {tally(results, expected)}")


def show(entry: dict, result: dict, seconds: float) -> None:
    verdict, pinned = result["verdict"], result.get("pinned") or {}
    print(f"{entry['name']}: {verdict['fault'] or 'agrees'} ({seconds:.0f} s)")
    if pinned:
        right = "right node" if pinned["node"] == entry["node"] else f"WRONG NODE (corpus: {entry['node']})"
        print(f"  pinned {pinned['node']} {pinned['target']} [{right}]; {pinned['pattern']}; kernel "
              f"{pinned.get('kernel')} {pinned.get('executed_op') or ''}; repro "
              f"{'reproduces' if pinned['reproduces'] else 'does NOT reproduce'} in a fresh process")
    for way in result.get("ways") or ():
        timing = way.get("timing") or {}
        cost = f"{timing['configured_ms']:.3f} ms vs unfused {timing['unfused_ms']:.3f} ms" if timing else "not timed"
        print(f"  way: {way['words']}: runs={way['runs']} agrees={way.get('agrees')} ({cost})")


if __name__ == "__main__":
    main()
