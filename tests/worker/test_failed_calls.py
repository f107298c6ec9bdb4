"""A call that TensorFlow fails leaves nothing behind: the same warm worker's next answer holds only its own
graphs, nothing of the failed call is cached, and an aborted worker is replaced."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections import Counter

import pytest

from explorer.engine import Engine
from explorer.errors import WorkerError
from explorer.model.flags import Config
from explorer.model.graph import Graph

pytestmark = pytest.mark.tf

# TF 2.21 with oneDNN on fuses this chain into _FusedConv2D [FusedBatchNorm, Tanh], which no kernel runs.
BROKEN = {"chain": {"contraction": "Conv2D", "bias": "none", "norm": "FusedBatchNorm", "activation": "Tanh"},
          "params": {"batch": 2, "height": 8, "width": 8, "in_channels": 4, "out_channels": 8, "filter_size": 3}}
ONEDNN_ON = Config.make("cpu", {"TF_ENABLE_ONEDNN_OPTS": "1"})
REMAPPER_OFF = Config.make("cpu", {"TF_ENABLE_ONEDNN_OPTS": "1"}, grappler={"remapping": "off"})


def fused_run_failed(result_or_error) -> bool:
    """The broken chain's fused run failed: raised (before the agreement check) or reported by it."""
    if isinstance(result_or_error, Exception):
        return "Fusion is not implemented" in str(result_or_error)
    return (result_or_error.get("agreement") or {}).get("status") == "fails"


def inspect_or_error(engine, spec, config):
    try:
        return engine.inspect(spec, config)
    except WorkerError as exc:
        return exc


def test_the_next_inspect_of_the_same_worker_holds_only_its_own_graphs(tmp_path):
    engine = Engine(cache_dir=tmp_path)
    try:
        failed = inspect_or_error(engine, BROKEN, ONEDNN_ON)
        assert fused_run_failed(failed), failed
        [worker] = engine.pool.workers()
        result = engine.inspect(BROKEN, REMAPPER_OFF)
        assert result["worker"]["pid"] == worker.pid and not result["worker"]["new_process"]  # the same warm worker
        for stage in ("traced", "optimized", "executed"):
            graph = Graph.from_dict(result["stages"][stage])
            names = Counter(n.name for n in graph.nodes)
            assert max(names.values()) == 1, f"{stage}: nodes twice: {[n for n, c in names.items() if c > 1]}"
            assert not [n for n in graph.nodes if n.fused_ops], f"{stage} holds the failed call's fused node"
        assert Graph.from_dict(result["stages"]["optimized"]).compute_ops() == ["Conv2D", "FusedBatchNormV3", "Tanh"]
        assert result["fusions"] == []
        # What the cache holds is only what the remapper-off call computed.
        cached = engine.inspect(BROKEN, REMAPPER_OFF)
        assert cached["cached"] and cached["stages"]["optimized"] == result["stages"]["optimized"]
    finally:
        engine.close()


def test_a_failed_call_is_never_cached(tmp_path):
    engine = Engine(cache_dir=tmp_path)
    try:
        key = engine.result_key("inspect", BROKEN, ONEDNN_ON)
        assert fused_run_failed(inspect_or_error(engine, BROKEN, ONEDNN_ON))
        assert engine.cache.get(key) is None
        again = inspect_or_error(engine, BROKEN, ONEDNN_ON)  # computed again, not answered from a cache
        assert fused_run_failed(again)
        assert isinstance(again, Exception) or not again["cached"]
    finally:
        engine.close()


def test_an_aborted_worker_is_replaced_and_the_pool_keeps_serving():
    engine = Engine(cache_dir=None)
    small = {"preset": "matmul_bias_relu", "params": {"m": 64, "k": 32, "n": 16}}
    try:
        engine.inspect(small)
        [first] = engine.pool.workers()

        def abort_when_busy():
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if first.lock.locked():
                    time.sleep(0.5)
                    os.kill(first.pid, signal.SIGABRT)  # what a fused kernel's failed assertion does
                    return
                time.sleep(0.05)

        threading.Thread(target=abort_when_busy, daemon=True).start()
        with pytest.raises(WorkerError) as info:
            engine.bench({"preset": "matmul_bias_relu", "params": {"m": 2048, "k": 256, "n": 256}},
                         reps=2000, warmup=0, max_seconds=60)
        assert info.value.kind == "crash" and "SIGABRT" in str(info.value)
        result = engine.inspect(small, use_cache=False)
        assert result["fusions"] and result["worker"]["pid"] != first.pid and result["worker"]["new_process"]
    finally:
        engine.close()


def test_an_inspect_whose_worker_aborts_still_shows_grapplers_graphs_and_the_unfused_run():
    """A fused kernel that aborts kills the worker mid-inspect (here: SIGABRT sent while the worker runs a model
    big enough to be caught busy). A new worker answers with Grappler's graphs made without running them and the
    unfused run, under the verdict "The fusion breaks this model"; the answer is not cached."""
    engine = Engine(cache_dir=None)
    spec = {"preset": "matmul_bias_relu", "params": {"m": 4096, "k": 2048, "n": 2048}}
    try:
        engine.inspect({"preset": "matmul_bias_relu", "params": {"m": 64, "k": 32, "n": 16}}, ONEDNN_ON)
        [first] = engine.pool.workers()

        def abort_when_busy():
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if first.lock.locked():
                    time.sleep(0.1)
                    os.kill(first.pid, signal.SIGABRT)
                    return
                time.sleep(0.02)

        threading.Thread(target=abort_when_busy, daemon=True).start()
        result = engine.inspect(spec, ONEDNN_ON)
        check = result["agreement"]
        assert check["status"] == "aborts" and check["headline"] == "The fusion breaks this model"
        assert "SIGABRT" in check["summary"] and check["reference_shapes"] == [[4096, 2048]]
        assert result["offline_grappler"] and result["worker"]["pid"] != first.pid
        optimized = Graph.from_dict(result["stages"]["optimized"])
        assert "_FusedMatMul" in optimized.compute_ops()  # Grappler's output, made without running it
        assert "MatMul" in Graph.from_dict(result["stages"]["traced"]).compute_ops()
        assert engine.cache.get(result["key"]) is None
    finally:
        engine.close()


def test_a_matrix_cell_whose_fusion_breaks_the_model_says_so_first(engine):
    from explorer.engine import matrix
    from explorer.present import charts
    from explorer.present import matrix as present

    cells = matrix.plan([], [matrix.parse_vary("TF_ENABLE_ONEDNN_OPTS=0,1")], models={"broken chain": BROKEN})
    rows = {r["label"]: r for r in matrix.run_local(engine, cells, use_cache=False)}
    on, off = rows["TF_ENABLE_ONEDNN_OPTS=1"], rows["TF_ENABLE_ONEDNN_OPTS=0"]
    assert on["status"] == "ok" and on["agreement"] == "fails"
    assert present.cell_words(on).startswith("BREAKS: ") and "Fusion is not implemented" in present.cell_words(on)
    assert off["agreement"] == "agrees" and not present.cell_words(off).startswith("BREAKS")
    text = charts.matrix_heatmap(list(rows.values())).data[0].text
    assert any("<b>BREAKS</b>" in cell for line in text for cell in line)
    assert "agreement" in present.to_csv(list(rows.values())).splitlines()[0].split(",")
