"""Which remapper catalogue rows have a preset that fuses as catalogued, per device/oneDNN mode.

    .venv/bin/python benchmarks/coverage.py [--write]

Runs every preset (default parameters) on the CPU with oneDNN on and off, and on the simulated
Ampere GPU with the GPU flags on, and prints the table. ``--write`` stores it in
explorer/model/coverage.json, which `python -m explorer presets` reports (tests re-check it live).
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from explorer.engine import Engine  # noqa: E402
from explorer.errors import ExplorerError  # noqa: E402
from explorer.model.catalog import PRESETS, fused_as_catalogued  # noqa: E402
from explorer.model.coverage import GPU_PARAMS, MODES, OUTPUT, TOTAL_ROWS, summary  # noqa: E402
from explorer.model.flags import Config  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true")
    args = parser.parse_args()
    engine = Engine(cache_dir=None)
    table: dict[str, dict[str, str]] = {}
    try:
        for preset in PRESETS.values():
            table[preset.id] = {}
            for mode, (device, env) in MODES.items():
                try:
                    params = GPU_PARAMS.get(preset.id, {}) if device.startswith("gpu") else {}
                    r = engine.inspect({"preset": preset.id, "params": params}, Config.make(device, env))
                    ok = fused_as_catalogued(preset.id, r["stages"]["optimized"]["nodes"])
                    status = "fused" if ok else "not fused"
                    if r.get("warnings"):
                        status += " (TF warning)"
                except ExplorerError as exc:
                    status = f"error: {str(exc)[:80]}"
                table[preset.id][mode] = status
                print(f"{preset.id:<28} {mode:<12} {status}", flush=True)
    finally:
        engine.close()
    data = {"measured": time.strftime("%Y-%m-%d"), "table": table,
            "rows": {p.id: list(p.rows) for p in PRESETS.values()}}
    print()
    for mode, rows in summary(data).items():
        print(f"{mode:<12} catalogue rows with a preset fused as catalogued: {rows}/{TOTAL_ROWS}")
    if args.write:
        OUTPUT.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
        print(f"wrote {OUTPUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
