"""The engine on real TensorFlow, in real worker processes, on this machine's CPU."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import psutil
import pytest

from explorer.engine import Engine
from explorer.engine.runner import Limits
from explorer.errors import SpecError, WorkerError
from explorer.model.flags import Config
from explorer.model.graph import Graph

pytestmark = pytest.mark.tf

SMALL_MATMUL = {"m": 64, "k": 32, "n": 16}
SMALL_CONV = {"batch": 2, "height": 8, "width": 8, "in_channels": 4, "out_channels": 8, "filter_size": 3}
# oneDNN's default depends on the CPU (off without AVX-512): tests say which they mean.
ONEDNN_ON = Config.make("cpu", {"TF_ENABLE_ONEDNN_OPTS": "1"})
ONEDNN_OFF = Config.make("cpu", {"TF_ENABLE_ONEDNN_OPTS": "0"})
REMAPPER_OFF = Config.make("cpu", grappler={"remapping": "off"})
GELU_APPROX_OPS = {"Pow", "Mul", "AddV2", "Tanh"}


def optimized(result) -> Graph:
    return Graph.from_dict(result["stages"]["optimized"])


def fused_nodes(graph: Graph):
    return [n for n in graph.nodes if n.fused_ops]


@pytest.mark.parametrize("preset,activation", [
    ("matmul_bias_gelu_approx", "GeluApproximate"),
    ("matmul_bias_gelu_exact", "GeluExact"),
])
def test_onednn_fuses_matmul_bias_gelu_into_one_node(engine, preset, activation):
    result = engine.inspect({"preset": preset, "params": SMALL_MATMUL}, ONEDNN_ON)
    assert result["fingerprint"]["onednn"] is True
    graph = optimized(result)
    assert graph.compute_ops() == ["_FusedMatMul"]
    (node,) = fused_nodes(graph)
    assert node.fused_ops == ("BiasAdd", activation)
    executed = Graph.from_dict(result["stages"]["executed"])
    assert [n.op for n in fused_nodes(executed)] == ["_MklNativeFusedMatMul"]
    (fusion,) = result["fusions"]
    assert fusion["op"] == "_FusedMatMul"
    assert {"MatMul", "BiasAdd"} <= set(fusion["absorbed_ops"])


def test_gelu_fusion_absorbs_every_gelu_op(engine):
    result = engine.inspect({"preset": "matmul_bias_gelu_approx", "params": SMALL_MATMUL}, ONEDNN_ON)
    traced = Graph.from_dict(result["stages"]["traced"])
    (fusion,) = result["fusions"]
    traced_compute = {n.name for n in traced.nodes if n.op not in ("_Arg", "_Retval", "Const", "Identity")}
    assert traced_compute <= set(fusion["absorbed"])
    assert GELU_APPROX_OPS <= set(fusion["absorbed_ops"])


@pytest.mark.parametrize("preset,left", [
    ("matmul_bias_gelu_approx", {"Square", "Tanh"}),
    ("matmul_bias_gelu_exact", {"Erfc"}),
])
def test_without_onednn_only_matmul_and_bias_fuse(engine, preset, left):
    result = engine.inspect({"preset": preset, "params": SMALL_MATMUL}, ONEDNN_OFF)
    assert result["fingerprint"]["onednn"] is False
    graph = optimized(result)
    (node,) = fused_nodes(graph)
    assert node.op == "_FusedMatMul" and node.fused_ops == ("BiasAdd",)
    assert left <= set(graph.compute_ops())
    assert "MatMul" not in graph.compute_ops() and "BiasAdd" not in graph.compute_ops()
    assert result["grappler"]["remapper_log"], "the remapper logs the MatMul+BiasAdd fusion"
    assert any("Fuse MatMul with BiasAdd" in line for line in result["grappler"]["remapper_log"])


@pytest.mark.parametrize("config", [ONEDNN_ON, ONEDNN_OFF], ids=["onednn", "stock"])
def test_conv2d_bias_relu_fuses(engine, config):
    result = engine.inspect({"preset": "conv2d_bias_relu", "params": SMALL_CONV}, config)
    graph = optimized(result)
    (node,) = fused_nodes(graph)
    assert node.op == "_FusedConv2D" and node.fused_ops == ("BiasAdd", "Relu")
    assert graph.compute_ops() == ["_FusedConv2D"]


def test_remapper_off_leaves_the_traced_ops(engine):
    result = engine.inspect({"preset": "matmul_bias_relu", "params": SMALL_MATMUL}, REMAPPER_OFF)
    graph = optimized(result)
    assert not fused_nodes(graph)
    assert sorted(graph.compute_ops()) == ["BiasAdd", "MatMul", "Relu"]
    assert result["fusions"] == []
    passes = [p["pass"] for it in result["grappler"]["items"] for i in it["iterations"] for p in i["passes"]]
    assert "remapper" not in passes


def test_grappler_pass_pipeline_is_captured(engine):
    result = engine.inspect({"preset": "matmul_bias_gelu_approx", "params": SMALL_MATMUL}, ONEDNN_ON)
    from explorer.analysis.grappler_log import main_run

    run = main_run(result["grappler"])
    assert run is not None and len(run["iterations"]) == 2
    remapper = [p for it in run["iterations"] for p in it["passes"] if p["pass"] == "remapper"]
    assert len(remapper) == 2 and all(p["changed"] for p in remapper)
    # the second remapper pass is the one that folds the GELU into the _FusedMatMul
    second = remapper[1]
    assert second["dump"] and os.path.basename(second["dump"]) in result["grappler"]["pass_graphs"]
    after = Graph.from_dict(result["grappler"]["pass_graphs"][os.path.basename(second["dump"])])
    assert [n.fused_ops for n in fused_nodes(after)] == [("BiasAdd", "GeluApproximate")]
    # The worker sends each pass as a delta of the one before; made whole, each graph has the size
    # Grappler's own log gives for that pass, and every edge lands on a node of it.
    checked = 0
    for p in (p for it in run["iterations"] for p in it["passes"]):
        graph = result["grappler"]["pass_graphs"].get(os.path.basename(p.get("dump") or ""))
        if graph is None or p.get("nodes") is None:
            continue
        names = [n["name"] for n in graph["nodes"]]
        assert len(names) == p["nodes"] and len(set(names)) == len(names), p["pass"]
        assert {i["src"] for n in graph["nodes"] for i in n["inputs"]} <= set(names), p["pass"]
        checked += 1
    assert checked >= 4


def test_bench_outputs_agree_and_prove_each_graph(engine):
    result = engine.bench({"preset": "matmul_bias_gelu_approx", "params": {"m": 512, "k": 64, "n": 128}},
                          ONEDNN_ON, reps=12, warmup=2)
    assert result["agreement"]["within_tolerance"], result["agreement"]
    assert result["agreement"]["max_abs"] < 1e-3
    proof = result["proof_summary"]
    assert proof["verified"] and result["reinstantiated_during_timing"] == 0
    assert proof["fused_executed"] == ["_MklNativeFusedMatMul"]
    assert "Tanh" in proof["unfused_executed"] and "_MklNativeFusedMatMul" not in proof["unfused_executed"]
    assert len(result["samples_ns"]["fused"]) == len(result["samples_ns"]["unfused"]) == 12
    summary = result["summary"]
    assert summary["fused"]["median_ms"] > 0 and summary["speedup"]["estimate"] > 0


def test_bench_agreement_without_onednn(engine):
    result = engine.bench({"preset": "conv2d_bias_relu", "params": SMALL_CONV}, ONEDNN_OFF, reps=6, warmup=1)
    assert result["agreement"]["within_tolerance"]
    assert result["proof_summary"]["fused_executed"] == ["_FusedConv2D"]
    assert set(result["proof_summary"]["unfused_executed"]) == {"Conv2D", "BiasAdd", "Relu"}


def test_gpu_request_without_gpu_is_refused_clearly(monkeypatch):
    # No GPU for this worker on any machine: a GPU worker keeps the caller's CUDA_VISIBLE_DEVICES.
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    engine = Engine(cache_dir=None)
    try:
        with pytest.raises(WorkerError) as info:
            engine.inspect({"preset": "matmul_bias_relu", "params": SMALL_MATMUL}, Config.make("gpu"))
    finally:
        engine.close()
    assert info.value.kind == "no_gpu"
    assert "No GPU" in str(info.value)


SMALL_BN = {"batch": 2, "height": 4, "width": 4, "channels": 8}
BN_TRAINING_FP16 = dict(SMALL_BN, training=True, dtype="float16")


@pytest.mark.parametrize("preset,params,env,grappler,absorbed", [
    # Inference: the layout optimizer wraps the fused node in transposes; the Add and Relu vanish.
    ("batchnorm_add_relu", SMALL_BN, {}, {}, {"FusedBatchNormV3", "AddV2", "Relu"}),
    ("batchnorm_relu", SMALL_BN, {}, {}, {"FusedBatchNormV3", "Relu"}),
    # Training needs float16, NHWC and the persistent-BN flag; the layout optimizer would move it to NCHW.
    ("batchnorm_relu", BN_TRAINING_FP16, {"TF_USE_CUDNN_BATCHNORM_SPATIAL_PERSISTENT": "1"},
     {"layout_optimizer": "off"}, {"FusedBatchNormV3", "Relu"}),
])
def test_simulated_gpu_batch_norm_fusions_are_mapped_and_predicted(engine, preset, params, env, grappler, absorbed):
    result = engine.inspect({"preset": preset, "params": params}, Config.make("gpu-sim:ampere", env, grappler))
    [fusion] = result["fusions"]  # the fused node keeps the batch norm's name: the chain's head, not its end
    assert fusion["op"] == "_FusedBatchNormEx"
    assert set(fusion["absorbed_ops"]) - {"Const"} == absorbed
    explanation = result["explanation"]
    assert explanation["verdict"] == "fused" and explanation["agrees"]
    assert all(check["ok"] for check in explanation["checks"])


def test_simulated_gpu_training_batch_norm_names_what_is_missing(engine):
    result = engine.inspect({"preset": "batchnorm_relu", "params": dict(SMALL_BN, training=True)},
                            Config.make("gpu-sim:ampere"))
    failed = {c["name"] for c in result["explanation"]["checks"] if c["ok"] is False}
    assert failed == {"training: float16", "TF_USE_CUDNN_BATCHNORM_SPATIAL_PERSISTENT=1"}
    assert result["explanation"]["verdict"] == "not fused" and not result["fusions"]


def test_gpu_worker_environment_lets_workers_share_one_gpu(monkeypatch):
    # A real GPU worker process starts here too (TensorFlow finds no GPU: no machine has a GPU 99):
    # its environment is the one a GPU machine would give it.
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "99")
    monkeypatch.setenv("TF_USE_CUBLASLT", "1")  # a flag in the parent's environment must not leak in
    engine = Engine(cache_dir=None)
    try:
        gpu = engine.fingerprint(Config.make("gpu", {"TF_MATMUL_AUTOTUNE_ENABLE": "1"}))
        cpu = engine.fingerprint(Config.make("cpu"))
    finally:
        engine.close()
    assert gpu["gpu_memory_growth"] and gpu["cuda_visible_devices"] == "99"
    assert gpu["flags"] == {"TF_MATMUL_AUTOTUNE_ENABLE": "1"}
    assert gpu["gpus"] == [] and gpu["cuda_build"]
    assert cpu["cuda_visible_devices"] == "-1" and not cpu["gpu_memory_growth"]


def test_bad_spec_is_refused_before_any_worker_starts():
    engine = Engine(cache_dir=None)
    try:
        with pytest.raises(SpecError, match="params.m"):
            engine.inspect({"preset": "matmul_bias_relu", "params": {"m": -1}})
        with pytest.raises(SpecError, match="MiB"):
            engine.inspect({"preset": "matmul_bias_relu", "params": {"m": 1 << 20, "k": 1 << 10}})
        assert engine.pool.workers() == []
    finally:
        engine.close()


def _kill_when_busy(engine, sig, delay=0.5, config=None):
    """Send ``sig`` to the first busy worker (of ``config`` if given) once it has worked ``delay`` s."""
    def run():
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            busy = [w for w in engine.pool.workers() if w.lock.locked()
                    and (config is None or w.config.process_key() == config.process_key())]
            if busy:
                time.sleep(delay)
                os.kill(busy[0].pid, sig)
                return
            time.sleep(0.05)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def test_crashed_worker_is_reported_and_replaced():
    engine = Engine(cache_dir=None)
    try:
        engine.inspect({"preset": "matmul_bias_relu", "params": SMALL_MATMUL})  # warm
        first_pid = engine.pool.workers()[0].pid
        _kill_when_busy(engine, signal.SIGKILL)
        with pytest.raises(WorkerError) as info:
            engine.bench({"preset": "matmul_bias_relu", "params": {"m": 2048, "k": 256, "n": 256}},
                         reps=2000, warmup=0, max_seconds=60)
        assert info.value.kind == "crash" and "SIGKILL" in str(info.value)
        result = engine.inspect({"preset": "matmul_bias_relu", "params": SMALL_MATMUL}, use_cache=False)
        assert result["worker"]["pid"] != first_pid and result["worker"]["new_process"]
    finally:
        engine.close()


def test_hung_worker_times_out_and_the_next_request_works():
    engine = Engine(limits=Limits(inspect_s=6), cache_dir=None)
    try:
        engine.inspect({"preset": "matmul_bias_relu", "params": SMALL_MATMUL})  # warm
        # Freeze the worker: from here on it reads nothing and answers nothing, like a hung one.
        [hung] = engine.pool.workers()
        os.kill(hung.pid, signal.SIGSTOP)
        with pytest.raises(WorkerError) as info:
            engine.inspect({"preset": "matmul_bias_relu", "params": {"m": 65, "k": 32, "n": 16}})
        assert info.value.kind == "timeout"
        # the engine's own limit (6 s, not the 120 s default) ended the wait, and the hung process was stopped
        assert "(6 s)" in str(info.value), str(info.value)
        assert not hung.alive() and hung not in engine.pool.workers()
        result = engine.inspect({"preset": "matmul_bias_relu", "params": SMALL_MATMUL}, use_cache=False)
        assert result["fusions"] and result["worker"]["pid"] != hung.pid
    finally:
        engine.close()


def test_worker_over_its_memory_cap_is_stopped():
    engine = Engine(limits=Limits(memory_bytes=1200 << 20), cache_dir=None)
    try:
        with pytest.raises(WorkerError) as info:
            # Peaks near 1.8 GiB here (an idle worker holds ~0.6 GiB); m=8192 peaked at 1.23 GiB, too
            # close to the cap for the 4 Hz memory watch to catch every time.
            engine.inspect({"preset": "matmul_bias_relu", "params": {"m": 12288, "k": 4096, "n": 4096}})
        assert info.value.kind == "memory" and "cap" in str(info.value)
        result = engine.inspect({"preset": "matmul_bias_relu", "params": SMALL_MATMUL})
        assert result["fusions"]
    finally:
        engine.close()


def test_a_fault_in_one_session_leaves_the_others_untouched():
    engine = Engine(cache_dir=None)
    try:
        other = Config.make("cpu", {"TF_ENABLE_ONEDNN_OPTS": "0"})
        engine.inspect({"preset": "matmul_bias_relu", "params": SMALL_MATMUL})  # session A's worker
        engine.inspect({"preset": "conv2d_bias_relu", "params": SMALL_CONV}, other)  # session B's worker
        b_worker = next(w for w in engine.pool.workers() if w.config.process_key() == other.process_key())
        outcome = {}

        def session_b():
            # B keeps asking for graphs while A's worker is killed under it.
            outcome["b"] = [engine.inspect({"preset": "conv2d_bias_relu", "params": dict(SMALL_CONV, batch=2 + i)},
                                           other)["fusions"] for i in range(4)]

        _kill_when_busy(engine, signal.SIGKILL, config=Config())  # only session A's worker
        thread = threading.Thread(target=session_b)
        with pytest.raises(WorkerError) as info:
            thread.start()
            engine.bench({"preset": "matmul_bias_relu", "params": {"m": 2048, "k": 256, "n": 256}},
                         reps=2000, warmup=0, max_seconds=60)
        thread.join(120)
        assert info.value.kind == "crash"
        assert len(outcome["b"]) == 4 and all(outcome["b"])
        assert b_worker.alive() and b_worker in engine.pool.workers()
    finally:
        engine.close()



# A server that exits outright (no close()) while a worker it started ahead of need is still importing TensorFlow:
# that worker is in a session of its own, so no signal of the server's reaches it; its closed stdin must end it.
ABANDON = """
import os, time, psutil
from explorer.engine import Engine
from explorer.model.flags import Config
Engine(cache_dir=None).prestart(Config.make("cpu", {"TF_ENABLE_ONEDNN_OPTS": "0"}))
for _ in range(300):
    workers = [p for p in psutil.Process().children() if "explorer.worker" in p.cmdline()]
    if workers:
        break
    time.sleep(0.05)
print(*(f"{p.pid}:{p.create_time()}" for p in workers), flush=True)
os._exit(0)
"""


def test_a_worker_whose_server_exits_while_it_starts_exits_too():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-c", ABANDON], cwd=root, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": root})
    assert out.returncode == 0, out.stderr[-3000:]
    started = [tuple(word.split(":")) for word in out.stdout.split()]
    assert len(started) == 1, out.stdout  # the start was in flight when the server went

    def alive(pid: str, created: str) -> bool:
        try:
            process = psutil.Process(int(pid))
            return process.create_time() == float(created) and process.status() != psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return False

    deadline = time.monotonic() + 60  # its TensorFlow import (~5 s), then its stdin's end
    while any(alive(*s) for s in started) and time.monotonic() < deadline:
        time.sleep(0.25)
    assert not any(alive(*s) for s in started), "the worker outlived its server"


# A server that exits normally (SIGTERM, Ctrl-C: its atexit closes the engine) while a worker it started ahead of
# need is still importing TensorFlow: the start's thread is a daemon, frozen at the exit.
CLOSE_WHILE_STARTING = """
import time, psutil
from explorer.engine import Engine
from explorer.model.flags import Config
engine = Engine(cache_dir=None)
engine.prestart(Config.make("cpu", {"TF_ENABLE_ONEDNN_OPTS": "0"}))
for _ in range(300):
    workers = [p for p in psutil.Process().children() if "explorer.worker" in p.cmdline()]
    if workers:
        break
    time.sleep(0.05)
print(len(workers), flush=True)
engine.close()
"""


def test_closing_while_a_worker_starts_leaves_no_process_and_no_folder(tmp_path):
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    out = subprocess.run([sys.executable, "-c", CLOSE_WHILE_STARTING], cwd=root, capture_output=True, text=True,
                         timeout=180, env={**os.environ, "PYTHONPATH": root, "TMPDIR": str(tmp_path)})
    assert out.returncode == 0 and out.stdout.split() == ["1"], (out.stdout, out.stderr[-3000:])  # one in flight
    assert [p.name for p in tmp_path.iterdir()] == []  # its folder (dumps, stderr) went with it
    assert not [p for p in psutil.process_iter(["cmdline", "environ"]) if "explorer.worker" in (p.info["cmdline"] or [])
                and (p.info["environ"] or {}).get("TMPDIR", "").startswith(str(tmp_path))]
