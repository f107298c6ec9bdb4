"""The what-if matrix through the real engine: real workers, small sizes."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
from pathlib import Path

from explorer.engine import matrix

ROOT = Path(__file__).resolve().parents[2]
SMALL = {"m": 64, "k": 32, "n": 32, "batch": 1, "height": 8, "width": 8, "in_channels": 4, "out_channels": 4}
ONEDNN = "TF_ENABLE_ONEDNN_OPTS"


def small_plan(presets, *vary, device="cpu"):
    takes = {k: v for k, v in SMALL.items() if any(k in matrix.PRESETS[p].chain.param_names() for p in presets)}
    return matrix.plan(presets, [matrix.parse_vary(v) for v in vary], device=device, params=takes)


def test_cells_match_direct_runs_and_share_one_worker_per_configuration(engine):
    cells = small_plan(["matmul_bias_gelu_approx"], f"{ONEDNN}=0,1", "remapping=on,off")
    seen = []
    rows = matrix.run_local(engine, cells, use_cache=False, on_progress=seen.append)
    assert len(rows) == 4 and all(r["status"] == "ok" for r in rows)
    for row, cell in zip(rows, cells):
        direct = engine.inspect(cell.spec, cell.config, use_cache=False)
        assert row["verdict"] == direct["explanation"]["verdict"]
        assert row["fingerprint"]["onednn"] == direct["fingerprint"]["onednn"]
        if cell.config.grappler_dict == {"remapping": "off"}:
            assert row["verdict"] == "not fused" and row["fused_op"] == ""
    # GELU fuses into one node only with oneDNN; the fused op is named from the graph after Grappler
    gelu_on = next(r for r in rows if r["preset"] == "matmul_bias_gelu_approx" and r["settings"] ==
                   {ONEDNN: "1", "remapping": "on"})
    assert gelu_on["verdict"] == "fused" and "GeluApproximate" in gelu_on["fused_op"]
    # one worker per (device, env flags): every cell of a configuration ran in the same process
    by_config = {}
    for row in rows:
        by_config.setdefault(row["env"][ONEDNN], set()).add(row["pid"])
    assert all(len(pids) == 1 for pids in by_config.values()) and len(by_config) == 2
    assert seen[-1]["fraction"] == 1.0
    # a second run is answered from the cache
    again = matrix.run_local(engine, cells, use_cache=True)
    assert all(r["cached"] for r in again) and [r["verdict"] for r in again] == [r["verdict"] for r in rows]


def test_bench_cells_carry_the_speedup_and_simulated_ones_say_why_not(engine):
    cells = small_plan(["matmul_bias_relu"], "device=cpu,gpu-sim:ampere")
    options = matrix.BenchOptions(reps=5, warmup=1, max_seconds=20)
    rows = matrix.run_local(engine, cells, bench=options, use_cache=True)
    cpu, sim = rows
    assert cpu["status"] == "ok" and cpu["speedup"] > 0 and cpu["ci_low"] <= cpu["speedup"] <= cpu["ci_high"]
    assert cpu["pairs"] == 5 and cpu["processes"] == 1 and not cpu["bench_cached"]
    assert sim["status"] == "ok" and sim["simulated"] and sim["speedup"] is None
    assert "simulated GPU runs nothing" in sim["bench_error"]
    again = matrix.run_local(engine, cells[:1], bench=options, use_cache=True)[0]
    assert again["bench_cached"] and again["speedup"] == cpu["speedup"]


def test_a_failing_cell_is_reported_and_the_rest_run(engine):
    cells = small_plan(["matmul_bias_relu"], "device=cpu,gpu")
    rows = matrix.run_local(engine, cells, use_cache=False)
    assert rows[0]["status"] == "ok"
    assert rows[1]["status"] == "failed" and "GPU" in rows[1]["reason"]


def test_stop_leaves_the_remaining_cells_marked(engine):
    import threading

    stop = threading.Event()
    cells = small_plan(["matmul_bias_relu"], "dtype=float32,bfloat16,float16")

    def progress(p):
        if "bfloat16" in p["message"]:
            stop.set()

    rows = matrix.run_local(engine, cells, use_cache=False, on_progress=progress, stop=stop)
    assert [r["status"] for r in rows] == ["ok", "ok", "stopped"]
    assert "stopped" in rows[2]["reason"]


def test_cli_matrix_json_csv_and_errors(tmp_path):
    base = [sys.executable, "-m", "explorer", "matrix", "--presets", "matmul_bias_relu,conv2d_bias_relu",
            "--vary", "remapping=on,off", "--set", "m=32", "--set", "batch=1", "--set", "height=8",
            "--set", "width=8"]
    env = {**os.environ, "EXPLORER_CACHE_DIR": str(tmp_path)}
    out = subprocess.run(base + ["--json"], cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert data["summary"]["cells"] == 4 and data["summary"]["configurations"] == 1
    assert [c["verdict"] for c in data["cells"]] == ["fused", "not fused", "fused", "not fused"]
    assert data["axes"] == [{"name": "remapping", "kind": "grappler", "values": ["on", "off"]}]
    assert not any(c["cached"] for c in data["cells"])
    # the same matrix again, as CSV: every cell from the disk cache (no TensorFlow started)
    out = subprocess.run(base + ["--csv"], cwd=ROOT, capture_output=True, text=True, timeout=300, env=env)
    rows = list(csv.DictReader(io.StringIO(out.stdout)))
    assert len(rows) == 4 and rows[0]["label"] == "remapping=on" and rows[0]["fused_op"].startswith("_Fused")
    assert all(r["cached"] == "True" for r in rows)
    bad = subprocess.run([sys.executable, "-m", "explorer", "matrix", "--presets", "matmul_bias_relu",
                          "--vary", "TF_NOPE=1"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "TF_NOPE" in bad.stderr and "Traceback" not in bad.stderr
