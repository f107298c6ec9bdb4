"""Replicated benchmarks through the real engine: N fresh worker processes, one after another."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from explorer.analysis import replicated, stats
from explorer.errors import SpecError

ROOT = Path(__file__).resolve().parents[2]
SMALL = {"preset": "matmul_bias_relu", "params": {"m": 64, "k": 32, "n": 32}}


def test_one_process_is_todays_result_labelled_quick(engine):
    result = engine.bench(SMALL, reps=8, warmup=1)
    assert result["mode"] == "quick: one process" and result["processes"] == 1
    sp = result["summary"]["speedup"]
    today = stats.speedup(result["samples_ns"]["fused"], result["samples_ns"]["unfused"])
    assert {k: v for k, v in sp.items() if k not in ("mode", "verdict")} == {k: v for k, v in today.items()
                                                                         if k != "verdict"}
    assert sp["verdict"] == replicated.QUICK_VERDICTS[today["verdict_code"]]  # said as one process's (#31)
    assert "this one process" in sp["verdict"] or today["verdict_code"] == "unknown"
    assert sp["mode"] == replicated.QUICK_MODE
    assert result["worker"]["pid"] in {w.pid for w in engine.pool.workers()}  # the warm pool's worker


def test_several_processes_each_fresh_with_per_process_samples(engine):
    warm = {w.pid for w in engine.pool.workers()}
    seen = []
    result = engine.bench(SMALL, reps=8, warmup=1, processes=2, on_progress=seen.append)
    assert result["mode"] == "replicated" and result["processes"] == 2
    pids = [p["pid"] for p in result["per_process"]]
    assert len(set(pids)) == 2 and not set(pids) & warm  # fresh processes, not the pool's warm worker
    assert all(p["reps_done"] == 8 and len(p["samples_ns"]["fused"]) == 8 for p in result["per_process"])
    sp = result["summary"]["speedup"]
    expected = replicated.replicated_speedup({v: [p["samples_ns"][v] for p in result["per_process"]]
                                              for v in ("fused", "unfused")})
    assert sp == expected
    assert sp["n_processes"] == 2 and sp["n_pairs_per_process"] == [8, 8] and sp["between_share"] is not None
    assert len(result["samples_ns"]["fused"]) == 16  # pooled, for the charts
    assert result["isolation"]["others_running_at_start"] == 0
    assert any(m["message"].startswith("process 2/2") for m in seen)
    assert "2 processes × 8 pairs" in replicated.run_words(sp)
    assert not any(w.pid in pids for w in engine.pool.workers())  # closed, not kept


def test_a_graph_request_waits_for_the_whole_replicated_benchmark(engine):
    """The bench slot is held from the first process to the last: nothing times beside it."""
    done = {}
    holding = threading.Event()

    def progress(p):
        # "process 1/2: ..." comes from inside the bench slot: the benchmark holds it from then on.
        if p.get("message", "").startswith("process 1/"):
            holding.set()

    def bench():
        result = engine.bench(SMALL, reps=6, warmup=1, processes=2, on_progress=progress)
        done["bench"] = time.monotonic()
        done["result"] = result

    thread = threading.Thread(target=bench)
    thread.start()
    assert holding.wait(timeout=120), "the benchmark never reached its first process"
    engine.inspect({"preset": "matmul_bias_relu", "params": {"m": 8, "k": 8, "n": 8}}, use_cache=False)
    done["inspect"] = time.monotonic()
    thread.join()
    assert done["inspect"] >= done["bench"]
    assert done["result"]["isolation"]["overlaps_seen"] == 0


@pytest.mark.parametrize("processes", [0, -1, 21, 2.5, "3"])
def test_bad_process_counts_are_refused_before_anything_runs(engine, processes):
    with pytest.raises(SpecError, match="processes"):
        engine.bench(SMALL, reps=5, processes=processes)


def test_cli_processes_prints_the_replicated_speedup():
    out = subprocess.run([sys.executable, "-m", "explorer", "bench", "matmul_bias_relu", "--set", "m=32",
                          "--set", "k=16", "--set", "n=16", "--reps", "6", "--warmup", "1", "--processes", "2",
                          "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert "replicated: 2 processes × 6 pairs" in out.stdout
    bad = subprocess.run([sys.executable, "-m", "explorer", "bench", "matmul_bias_relu", "--processes", "0"],
                         cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "processes" in bad.stderr and "Traceback" not in bad.stderr


def test_repeatability_script_prints_pairs_and_counts():
    """The script the lead runs on a quiet machine, here with tiny sizes: its lines and counts."""
    out = subprocess.run([sys.executable, "benchmarks/repeatability.py", "matmul_bias_relu", "--set", "m=32",
                          "--set", "k=16", "--set", "n=16", "--pairs", "1", "--processes", "2", "--reps", "5",
                          "--warmup", "1"], cwd=ROOT, capture_output=True, text=True, timeout=400)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    pair = next(i for i, ln in enumerate(lines) if ln.startswith("pair  1:"))
    assert "2 processes × 5 pairs" in lines[pair] and "2 processes × 5 pairs" in lines[pair + 1]
    assert "within ±5%:" in lines[pair + 2] and "inside the first's rerun interval:" in lines[pair + 2]
    assert "a rerun lands in" in lines[pair]
    counts = next(ln for ln in lines if ln.startswith("within ±5% of each other:"))
    assert "/1;" in counts and "(target on a quiet machine: at least 1 of 1 each)" in counts
    assert "inside the first's interval for the speedup:" in counts
    assert any(ln.startswith("machine: TensorFlow") for ln in lines)
