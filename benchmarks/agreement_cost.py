"""What the agreement check costs: inspect's seconds with and without it, on the real networks.

    .venv/bin/python benchmarks/agreement_cost.py [--networks resnet50,...] [--reps 3] [--onednn 1]
                                                  [--where beside|inline] [--keep DIR]

Each network of tests/realmodels (keras.applications with weights=None at 32×32, a Transformer encoder block,
an old-style Conv2D/Dense stack; seeded non-zero weights) is exported as a SavedModel and inspected through the
engine, no result cache, first graphs only (no fixes checked), alternately with the check (what every inspect
does) and without it (the worker asked to skip it; the same analysis after), ``--reps`` times each after one
untimed warm-up of each. ``--where beside`` (the default, what the engine does once a configuration's reference
costs): the reference runs in the configuration's second warm worker at the same time as the fused run;
``inline``: in the same worker after it. Printed per network: the median seconds with and without, the ratio,
the check's own seconds (what inspect waited for it), and what the check found. Target: under 25 % more
(docs/agreement.md).
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

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "realmodels"))

from devkit.machine import cpu_model  # noqa: E402
from explorer.analysis.annotate import annotate  # noqa: E402
from explorer.engine import Engine  # noqa: E402
from explorer.engine.pool import REFERENCE  # noqa: E402
from explorer.engine.runner import Limits  # noqa: E402
from explorer.engine.payloads import inspect_payload  # noqa: E402
from explorer.model import compilers  # noqa: E402
from explorer.model.flags import Config  # noqa: E402
from explorer.model.spec import resolve  # noqa: E402

SCRIPT = ROOT / "tests" / "realmodels" / "networks.py"
DEFAULT = "mobilenetv3small,efficientnetb0,resnet50,convnexttiny,transformer,oldstyle"


def export(directory: Path, names: list[str]) -> None:
    missing = [n for n in names if not (directory / n / "saved_model.pb").exists()]
    if missing:
        proc = subprocess.run([sys.executable, str(SCRIPT), "export", str(directory), *missing], capture_output=True,
                              text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
        if proc.returncode:
            raise SystemExit(proc.stderr[-2000:])


def with_check(engine, spec, config) -> tuple[float, dict]:
    """Inspect as the engine makes it (the check included): its seconds and its result."""
    started = time.perf_counter()
    result = engine.inspect(spec, config, use_cache=False)
    return time.perf_counter() - started, result


def without_check(engine, spec, config) -> tuple[float, dict]:
    """The same request with the worker asked to skip the check, and the same analysis after."""
    started = time.perf_counter()
    answer, info = engine.request(config, compilers.FIRST.inspect_op, dict(inspect_payload(spec, config),
                                                                           agreement="off"))
    result = annotate({**answer, "config": config.to_dict(), "worker": info, "cached": False, "key": "",
                       "spec": spec.public_dict()})
    return time.perf_counter() - started, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--networks", default=DEFAULT)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--onednn", default="1", choices=("0", "1"))
    parser.add_argument("--where", default="beside", choices=("beside", "inline"),
                        help="where the reference runs: a second warm worker, or the same worker after")
    parser.add_argument("--keep", metavar="DIR", help="export into DIR (kept) instead of a temporary directory")
    args = parser.parse_args()
    names = args.networks.split(",")
    from conftest import saved_model_spec  # the tests' spec of an exported SavedModel

    directory = Path(args.keep or tempfile.mkdtemp(prefix="agreement-cost-"))
    directory.mkdir(parents=True, exist_ok=True)
    print(f"{time.strftime('%Y-%m-%d %H:%M')} | CPU: {cpu_model()} | {os.cpu_count()} cores | "
          f"load {os.getloadavg()[0]:.1f} | TF_ENABLE_ONEDNN_OPTS={args.onednn} | {args.reps} reps each | "
          f"reference {args.where}", flush=True)
    export(directory, names)
    config = Config.make("cpu", {"TF_ENABLE_ONEDNN_OPTS": args.onednn})
    engine = Engine(Limits(beside_after_s=0.0 if args.where == "beside" else None), cache_dir=None)
    ratios = []
    print(f"{'network':<18}{'with s':>9}{'without s':>11}{'ratio':>8}{'check s':>9}  found")
    try:
        engine.pool.get(config)
        if args.where == "beside":
            engine.pool.get(config, REFERENCE)
        for name in names:
            spec = resolve(saved_model_spec(directory, name))
            variants = {"with": with_check, "without": without_check}
            for variant in variants.values():  # untimed: the model loaded, its functions traced once
                variant(engine, spec, config)
            seconds = {v: [] for v in variants}
            check_s, found = [], ""
            for rep in range(args.reps):
                order = list(variants) if rep % 2 == 0 else list(reversed(variants))
                for variant in order:
                    took, result = variants[variant](engine, spec, config)
                    seconds[variant].append(took)
                    if variant == "with":
                        check_s.append(result["agreement"]["seconds"])
                        found = f"{result['agreement']['status']}: {result['agreement']['summary']}"
            with_s, without_s = statistics.median(seconds["with"]), statistics.median(seconds["without"])
            ratios.append(with_s / without_s)
            print(f"{name:<18}{with_s:>9.2f}{without_s:>11.2f}{with_s / without_s:>7.2f}x"
                  f"{statistics.median(check_s):>9.2f}  {found[:90]}", flush=True)
    finally:
        engine.close()
    print(f"median ratio {statistics.median(ratios):.2f}x, worst {max(ratios):.2f}x (target: under 1.25x) | "
          f"load after {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
