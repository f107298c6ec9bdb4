"""The explorer against TensorFlow on real networks: the agreement tally and seconds per inspect.

    .venv/bin/python benchmarks/real_models.py [--networks mobilenetv3small,efficientnetb0,...] [--keep DIR]

Each network (keras.applications with weights=None at 32×32, seeded non-zero weights and batch-norm
statistics; see tests/realmodels/networks.py) is exported as a SavedModel, run directly by TensorFlow
(its serving signature with run metadata, no explorer code) and inspected by the engine, with oneDNN
off and on (TF_ENABLE_ONEDNN_OPTS=0/1). Printed per network and setting: whether the fused-op and
unfused-contraction counts agree, the near-misses found (by kind), the fixes offered and how many of
them the direct run confirms (the setting applied, the chain's fused op present), and the seconds of
an inspect (a warm worker, no result cache: first graphs, then with the fixes checked).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "realmodels"))

from devkit.machine import cpu_model  # noqa: E402
from explorer.engine import Engine  # noqa: E402
from tests.realmodels.counting import counts  # noqa: E402

SCRIPT = ROOT / "tests" / "realmodels" / "networks.py"
DEFAULT = "mobilenetv3small,mobilenetv2,efficientnetb0,resnet50,densenet121,convnexttiny"


def script(*args, env=None) -> str:
    proc = subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", **(env or {})})
    if proc.returncode:
        raise SystemExit(proc.stderr[-2000:])
    return proc.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--networks", default=DEFAULT)
    parser.add_argument("--keep", metavar="DIR", help="export into DIR (kept) instead of a temporary directory")
    args = parser.parse_args()
    names = args.networks.split(",")
    from conftest import saved_model_spec  # the tests' spec of an exported SavedModel

    directory = Path(args.keep or tempfile.mkdtemp(prefix="real-models-"))
    directory.mkdir(parents=True, exist_ok=True)
    print(f"{time.strftime('%Y-%m-%d %H:%M')} | CPU: {cpu_model()} | {os.cpu_count()} cores | "
          f"load {os.getloadavg()[0]:.1f}", flush=True)
    missing = [n for n in names if not (directory / n / "saved_model.pb").exists()]
    if missing:
        script("export", str(directory), *missing)
    direct = {flag: json.loads(script("direct", str(directory), *names,
                                      env={"TF_ENABLE_ONEDNN_OPTS": flag}).splitlines()[-1]) for flag in ("0", "1")}
    engine = Engine(cache_dir=None)
    tally = Counter()
    print(f"{'network':<18}{'oneDNN':>7}{'counts':>8}{'check':>9}{'near-misses':>13}{'fixes offered':>15}"
          f"{'confirmed':>11}{'inspect s':>11}{'+fixes s':>10}  near-miss kinds")
    try:
        for name in names:
            for flag in ("0", "1"):
                spec, config = saved_model_spec(directory, name), {"env": {"TF_ENABLE_ONEDNN_OPTS": flag}}
                engine.inspect(spec, config, use_cache=False)  # warm the worker and the load
                started = time.perf_counter()
                engine.inspect(spec, config, use_cache=False)
                first = time.perf_counter() - started
                started = time.perf_counter()
                result = engine.check_fixes(spec, config, engine.inspect(spec, config, use_cache=False))
                checked = time.perf_counter() - started
                truth = direct[flag][name]
                agree = counts(result) == (truth["fused"], truth["unfused"])
                misses = result["report"]["near_misses"]
                offered = [m for m in misses if m["changes"]]
                confirmed = 0
                for miss in offered:
                    (setting,), = miss["changes"]
                    op, _, ops = (miss.get("fused_with_fix") or "").partition(" [")
                    key = f"{op}[{ops.rstrip(']').replace(', ', ',')}]" if ops else op
                    other = direct.get(str(setting.get("value")), {}).get(name, {}) if setting["name"] == \
                        "TF_ENABLE_ONEDNN_OPTS" else {}
                    confirmed += bool(other.get("fused", {}).get(key))
                check = (result.get("agreement") or {}).get("status", "?")  # fused against unfused, and declared shapes
                tally.update(runs=1, agree=agree, misses=len(misses), offered=len(offered), confirmed=confirmed,
                             verified=sum(1 for m in offered if m["verified"]), checks_agree=check == "agrees")
                kinds = ", ".join(f"{k} {n}" for k, n in Counter(m["kind"] for m in misses).most_common())
                print(f"{name:<18}{flag:>7}{'agree' if agree else 'DIFFER':>8}{check:>9}{len(misses):>13}{len(offered):>15}"
                      f"{confirmed:>11}{first:>11.2f}{checked:>10.2f}  {kinds}", flush=True)
    finally:
        engine.close()
    print(f"\nTally: counts agree in {tally['agree']} of {tally['runs']} runs; the fused graph's outputs agree with the "
          f"unfused one's in {tally['checks_agree']}; {tally['misses']} near-misses found; "
          f"{tally['offered']} fixes offered, {tally['verified']} verified by the engine, "
          f"{tally['confirmed']} confirmed by TensorFlow run directly")
    return 0 if tally["agree"] == tally["runs"] and tally["confirmed"] == tally["offered"] else 1


if __name__ == "__main__":
    sys.exit(main())
