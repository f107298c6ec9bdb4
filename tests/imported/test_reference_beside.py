"""Inspect's agreement check with its reference run in a second worker (engine.reference): the same verdict,
figures and traffic account as the check made in one worker, on the real worker processes of one engine; the
second worker started only once a reference costs, and the check surviving its death."""

from __future__ import annotations

import os
import signal
import time

import psutil
import pytest

from explorer.engine import Engine
from explorer.engine.pool import REFERENCE
from explorer.engine.runner import Limits
from explorer.engine.uploads import spec_for_path
from explorer.model.flags import Config
from explorer.worker.agreement import REFERENCE as IN_ONE_WORKER, REFERENCE_BESIDE
from tests.faulty.corpus import entries

pytestmark = pytest.mark.tf

ONEDNN_ON = Config.make("cpu", {"TF_ENABLE_ONEDNN_OPTS": "1"})


def wait_for_second_worker(engine: Engine, config: Config, seconds: float = 120.0) -> None:
    deadline = time.monotonic() + seconds
    while not engine.pool.has_warm(config, REFERENCE):
        assert time.monotonic() < deadline, "no second worker was started for the check's reference"
        time.sleep(0.2)


@pytest.fixture(scope="module")
def one_worker_engine():
    engine = Engine(Limits(max_workers=2, beside_after_s=None), cache_dir=None)  # never a second worker
    yield engine
    engine.close()


@pytest.fixture(scope="module")
def beside_engine():
    engine = Engine(Limits(max_workers=4, beside_after_s=0.0), cache_dir=None)
    yield engine
    engine.close()


def test_a_model_computing_in_bfloat16_is_judged_by_bfloat16s_rounding(one_worker_engine, unknown_batch_models):
    # Its outputs are float32, but the fused kernel rounds to bfloat16 in other places than the unfused ops: with
    # float32's tolerance a fusion oneDNN makes (AMX or AVX-512 BF16) was said to change the model's numbers.
    spec = spec_for_path(str(unknown_batch_models / "mixed_bfloat16.pb"))
    check = one_worker_engine.inspect(spec, ONEDNN_ON, use_cache=False)["agreement"]
    assert check["status"] == "agrees", check["summary"]
    [output] = check["comparison"]["outputs"]
    assert "the model computes in bfloat16 behind float32 outputs" in output["tolerance"]["basis"]
    bench = one_worker_engine.bench(spec, ONEDNN_ON, reps=3, warmup=0)["agreement"]
    assert bench["within_tolerance"] and bench["tolerance"] == output["tolerance"]["rtol"]
    # XLA rounds to bfloat16 in its own places too: the three-way benchmark judges every pair the same way
    three = one_worker_engine.bench(spec, ONEDNN_ON, reps=3, warmup=0, compiler="both")["agreement"]
    assert {pair: a["within_tolerance"] for pair, a in three.items()} == dict.fromkeys(three, True), three
    assert {a["tolerance"] for a in three.values()} == {output["tolerance"]["rtol"]}


def test_a_model_drawing_random_numbers_is_not_said_to_change_with_its_fusion(beside_engine, one_worker_engine,
                                                                              unknown_batch_models):
    # Noise drawn anew on every call: the fused and unfused runs differ whatever the remapper did, so neither
    # inspect (in one worker, or with its reference beside) nor the benchmark may blame the fusion for it.
    spec = spec_for_path(str(unknown_batch_models / "noisy_dense.pb"))
    checks = [one_worker_engine.inspect(spec, ONEDNN_ON, use_cache=False)["agreement"]]
    assert checks[0]["reference"] == IN_ONE_WORKER
    beside_engine.inspect(spec, ONEDNN_ON, use_cache=False)
    wait_for_second_worker(beside_engine, ONEDNN_ON)
    checks.append(beside_engine.inspect(spec, ONEDNN_ON, use_cache=False)["agreement"])
    assert checks[-1]["reference"] == REFERENCE_BESIDE
    for check in checks:
        assert check["status"] == "varies" and check["headline"] is None, check["summary"]
        assert check["summary"].startswith("the model's outputs vary from call to call: it calls RandomUniform")
    bench = beside_engine.bench(spec, ONEDNN_ON, reps=3, warmup=0)
    assert bench["agreement"]["within_tolerance"] is None and "RandomUniform" in bench["agreement"]["varies"]
    assert bench["summary"]["speedup"]["verdict_code"] != "outputs_differ"


def figures(check: dict) -> list:
    """What a check found, without where and how long it ran."""
    outputs = lambda c: [(o["agree"], o["max_abs"], o["max_rel"], o["shape"], o["elements"])  # noqa: E731
                         for o in (c or {}).get("outputs", [])]
    return [check["status"], check["summary"], outputs(check["comparison"]),
            [(e["case"], e["status"], e["shapes"], outputs(e["comparison"])) for e in check["edges"]]]


@pytest.mark.parametrize("model", ["conv_relu.pb", "dense_relu_savedmodel", "mixed_bfloat16.pb"])
def test_the_check_beside_finds_what_the_check_in_one_worker_finds(beside_engine, one_worker_engine,
                                                                    unknown_batch_models, model):
    spec = spec_for_path(str(unknown_batch_models / model))
    inline = one_worker_engine.inspect(spec, ONEDNN_ON, use_cache=False)
    assert inline["agreement"]["reference"] == IN_ONE_WORKER
    assert not one_worker_engine.pool.workers(REFERENCE)
    first = beside_engine.inspect(spec, ONEDNN_ON, use_cache=False)
    assert first["agreement"]["reference"] in (IN_ONE_WORKER, REFERENCE_BESIDE)  # beside once the second is warm
    wait_for_second_worker(beside_engine, ONEDNN_ON)  # the reference took over 0 s: a second worker is started
    [second] = beside_engine.pool.workers(REFERENCE)
    assert psutil.Process(second.pid).nice() > psutil.Process(beside_engine.pool.workers()[0].pid).nice()  # yields
    beside = beside_engine.inspect(spec, ONEDNN_ON, use_cache=False)
    check = beside["agreement"]
    assert check["reference"] == REFERENCE_BESIDE
    assert second.requests >= 1 and second.alive(), "the reference did not run in the second worker"
    # an unknown batch: the edge inputs (zeros, large, a batch of 1 and of 0) ran on both sides
    assert {e["case"] for e in check["edges"]} >= {"zeros", "large", "empty dimension"}
    assert figures(check) == figures(inline["agreement"])
    assert check["status"] == "agrees" and check["reference_shapes"] == inline["agreement"]["reference_shapes"]
    # the traffic account's unfused graph came from the second worker's run
    assert beside["executed_tensors"]["unfused"] == inline["executed_tensors"]["unfused"]
    assert beside["executed_tensors"]["fused"] == inline["executed_tensors"]["fused"]
    assert beside["report"] == inline["report"]  # the fusion report, its traffic figures included
    assert not [f for f in os.listdir(os.environ.get("TMPDIR", "/tmp")) if f.startswith(f"explorer-check-{os.getpid()}-")]


def test_the_check_survives_its_second_worker_dying(beside_engine, unknown_batch_models):
    spec = spec_for_path(str(unknown_batch_models / "conv_relu.pb"))
    beside_engine.inspect(spec, ONEDNN_ON, use_cache=False)
    wait_for_second_worker(beside_engine, ONEDNN_ON)
    [second] = beside_engine.pool.workers(REFERENCE)
    os.kill(second.pid, signal.SIGKILL)
    result = beside_engine.inspect(spec, ONEDNN_ON, use_cache=False)
    check = result["agreement"]
    # the first worker ran the reference after all: the same verdict, nothing lost
    assert check["status"] == "agrees" and check["comparison"]["agree"] and check["edges"]
    assert "unfused" in result["executed_tensors"]
    assert second not in beside_engine.pool.workers(REFERENCE)


def test_a_fused_graph_that_fails_is_judged_in_its_own_worker(beside_engine):
    """The corpus's Conv2D + FusedBatchNorm + Tanh (no kernel implements the fusion): the fused run fails, so the
    worker checks it itself, with the second worker warm, and the verdict is the fusion's."""
    [entry] = [e for e in entries() if e["name"] == "chain_conv2d_bn_tanh"]
    spec = entry["spec"]
    beside_engine.inspect(spec, ONEDNN_ON, use_cache=False)  # makes sure the configuration has its second worker
    wait_for_second_worker(beside_engine, ONEDNN_ON)
    check = beside_engine.inspect(spec, ONEDNN_ON, use_cache=False)["agreement"]
    assert check["status"] == "fails" and check["headline"] == "The fusion breaks this model"
    assert check["fused_error"]["type"] == "UnimplementedError"
    assert beside_engine.pool.has_warm(ONEDNN_ON, REFERENCE)
