"""The what-if matrix on a real local Ray (2 CPUs): the same answers as the local engine, the node
that ran each cell, GPU cells refused when the cluster has none, and a killed worker's cells
retried or failed with the reason, never dropped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from explorer.engine import Engine, matrix, ray_backend
from explorer.present import matrix as present

ray = pytest.importorskip("ray")  # pinned in requirements.txt; a missing install must not pass silently
ROOT = Path(__file__).resolve().parents[2]
ONEDNN = "TF_ENABLE_ONEDNN_OPTS"


def small(presets, *vary, **kw):
    return matrix.plan(presets, [matrix.parse_vary(v) for v in vary], params={"m": 32, "k": 16, "n": 16}, **kw)


def test_cli_ray_local_that_cannot_start_says_why_in_one_line(tmp_path):
    deep = tmp_path / ("d" * 60) / ("e" * 60)  # Ray's socket paths under it pass the 107 bytes a socket may have
    deep.mkdir(parents=True)
    out = subprocess.run([sys.executable, "-m", "explorer", "matrix", "--presets", "matmul_bias_relu",
                          "--vary", "remapping=on,off", "--ray", "local", "--no-cache"],
                         cwd=ROOT, capture_output=True, text=True, timeout=400,
                         env={**os.environ, "TMPDIR": str(deep), "RAY_TMPDIR": str(deep)})
    assert out.returncode != 0 and "Traceback" not in out.stderr, out.stderr
    assert "--ray local: could not start Ray: " in out.stderr and "107 bytes" in out.stderr, out.stderr

def test_cli_ray_local_starts_and_stops_its_own_ray():
    out = subprocess.run([sys.executable, "-m", "explorer", "matrix", "--presets", "matmul_bias_relu",
                          "--vary", "remapping=on,off", "--set", "m=32", "--ray", "local", "--no-cache"],
                         cwd=ROOT, capture_output=True, text=True, timeout=400)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "remapping=on   fused _FusedMatMul[BiasAdd+Relu]" in lines[1] and "not fused" in lines[2]
    assert "2 ok | ran on: TensorFlow" in out.stdout and " on node " in out.stdout


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR",
             runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}})
    yield
    ray.shutdown()


def test_same_results_as_the_local_engine_with_the_node_named(local_ray, engine):
    cells = small(["matmul_bias_gelu_approx", "matmul_bias_relu"], f"{ONEDNN}=0,1")
    local = matrix.run_local(engine, cells, use_cache=False)
    local = [(r["verdict"], r["fused_op"], r["fingerprint"]["onednn"]) for r in local]
    remote_engine = Engine(cache_dir=None)
    try:
        rows = ray_backend.run(remote_engine, cells, "local", use_cache=False)
    finally:
        remote_engine.close()
    assert [(r["verdict"], r["fused_op"], r["fingerprint"]["onednn"]) for r in rows] == local
    node_id = ray.get_runtime_context().get_node_id()
    assert all(r["status"] == "ok" and r["node"]["node_id"] == node_id and r["attempts"] == 1 for r in rows)


def test_gpu_cells_are_unrunnable_not_pending(local_ray):
    cells = small(["matmul_bias_relu"], "device=gpu,gpu-sim:ampere")
    eng = Engine(cache_dir=None)
    started = time.monotonic()
    try:
        gpu, sim = ray_backend.run(eng, cells, "local", use_cache=False)
    finally:
        eng.close()
    assert gpu["status"] == "unrunnable" and "no GPU" in gpu["reason"]
    assert sim["status"] == "ok" and sim["simulated"]  # a simulated GPU needs none
    assert time.monotonic() - started < 300


def _ray_children() -> list[tuple[int, int]]:
    """(pid, parent pid) of explorer worker subprocesses whose parent is a Ray worker."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            if "-m explorer.worker" not in cmd:
                continue
            ppid = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1]
            parent = Path(f"/proc/{ppid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if parent.startswith("ray::"):
            found.append((int(pid), int(ppid)))
    return found


def test_a_killed_worker_leaves_the_matrix_complete(local_ray):
    cells = small(["matmul_bias_relu"], f"{ONEDNN}=0,1", "remapping=on,off")
    eng = Engine(cache_dir=None)
    out: dict = {}
    thread = threading.Thread(target=lambda: out.update(rows=ray_backend.run(
        eng, cells, "local", use_cache=False, bench=matrix.BenchOptions(reps=5, warmup=1, max_seconds=10))))
    thread.start()
    victim, deadline = None, time.monotonic() + 120
    while victim is None and time.monotonic() < deadline:
        children = _ray_children()
        victim = children[0][0] if children else None
        time.sleep(0.05)
    assert victim is not None, "no worker subprocess of a Ray task appeared"
    environ = dict(item.split("=", 1) for item in
                   Path(f"/proc/{victim}/environ").read_bytes().decode().split("\0") if "=" in item)
    # built from scratch: nothing of Ray's, no OMP_NUM_THREADS=1, the project importable
    assert not any(k.startswith("RAY_") for k in environ) and "OMP_NUM_THREADS" not in environ
    assert str(ROOT) in environ["PYTHONPATH"].split(os.pathsep)
    os.kill(victim, signal.SIGKILL)
    thread.join(timeout=600)
    eng.close()
    rows = out["rows"]
    assert len(rows) == 4  # none dropped
    hit = [r for r in rows if r.get("retried_because")]
    assert hit, rows
    for row in hit:
        assert "SIGKILL" in row["retried_because"][0]
        assert row["status"] == "ok" and row["attempts"] == 2 or row["status"] == "failed" and "SIGKILL" in row["reason"]
    ok = [r for r in rows if r["status"] == "ok"]
    assert all(r["verdict"] for r in ok)
    # remapping=off cells are not fused: no fusion speedup is shown in them, only why
    assert all(r["speedup"] > 0 for r in ok if r["verdict"] != "not fused")
    assert all(r["speedup"] is None and "nothing to compare" in r["bench_error"] for r in ok if r["verdict"] == "not fused")


def test_a_lost_ray_worker_is_retried_and_the_matrix_completes(local_ray):
    """The Ray worker running a configuration dies (as on a lost node): Ray retries the task once."""
    cells = small(["matmul_bias_relu"], "remapping=on,off")
    eng = Engine(cache_dir=None)
    out: dict = {}
    thread = threading.Thread(target=lambda: out.update(rows=ray_backend.run(eng, cells, "local", use_cache=False)))
    thread.start()
    deadline, killed = time.monotonic() + 120, None
    while killed is None and time.monotonic() < deadline:
        children = _ray_children()
        if children:
            killed = children[0][1]
            os.kill(killed, signal.SIGKILL)  # the ray:: worker process itself
        time.sleep(0.05)
    assert killed is not None, "no Ray worker with an explorer worker subprocess appeared"
    thread.join(timeout=600)
    eng.close()
    rows = out["rows"]
    assert len(rows) == 2
    for row in rows:
        assert row["status"] == "ok" and row["node"]["task_pid"] != killed or \
            row["status"] == "failed" and "WorkerCrashedError" in row["reason"]
    # Ray does not tell the caller it retried: the task reports its attempt and the cell words it
    for row in (r for r in rows if r["status"] == "ok"):
        assert row["ray_retries"] == 1 and row["attempts"] == 1, row
        assert present.retry_words(row) == "retried by Ray: 1 attempt lost"
        assert "retried by Ray: 1 attempt lost" in present.table([row]) and \
            "retried by Ray: 1 attempt lost" in present.to_csv([row])


def test_an_unreachable_cluster_is_a_clear_error_at_once():
    started = time.monotonic()
    out = subprocess.run([sys.executable, "-m", "explorer", "matrix", "--presets", "matmul_bias_relu",
                          "--vary", "remapping=on,off", "--ray", "127.0.0.1:1"],
                         cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "cannot reach a Ray cluster at 127.0.0.1:1" in out.stderr
    assert time.monotonic() - started < 60  # not Ray's minutes of retries
