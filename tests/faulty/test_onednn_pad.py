"""oneDNN's own fusion, which runs with the remapper off too: its layout pass folds a Pad into the convolution
after it (``_MklNativePadWith…Conv2D``). On TF 2.21 (measured 2026-11-29, Intel Xeon with AMX; oneDNN forced on
here, so that it holds on every x86 CPU) a Pad of the batch axis is dropped and one of the channel axis fails. The
agreement check's reference (the remapper off) shares the fold, so the explorer holds each run to the shapes the
traced graph declares, and runs a model that fails both ways once more with oneDNN off."""

from __future__ import annotations

import pytest

from explorer.engine.model_failure import ONEDNN_OFF
from explorer.engine.uploads import spec_for_path
from explorer.errors import WorkerError
from explorer.model.flags import Config

pytestmark = pytest.mark.tf

ON = Config.make("cpu", {"TF_ENABLE_ONEDNN_OPTS": "1"})
OFF = Config.make("cpu", {"TF_ENABLE_ONEDNN_OPTS": "0"})


def test_a_dropped_batch_padding_is_a_verdict_though_the_unfused_reference_shares_it(engine, faulty_models):
    model = spec_for_path(str(faulty_models / "pad_batch.pb"))
    result = engine.inspect(model, ON, use_cache=False)
    check = result["agreement"]
    assert check["status"] == "differs" and check["headline"], check["summary"]
    assert "output 0 has shape [1, 6, 6, 4], where the model's traced graph declares [2, 6, 6, 4]" in check["summary"]
    assert "the unfused reference (remapper off) has it too" in check["summary"]
    assert "_MklNativePadWith" in check["summary"] and "TF_ENABLE_ONEDNN_OPTS=0" in check["summary"]
    without = engine.inspect(model, OFF, use_cache=False)
    assert without["agreement"]["status"] == "agrees" and without["output_shapes"] == [[2, 6, 6, 4]]


def test_the_diagnosis_finds_onednn_off_the_way_and_does_not_blame_xla(engine, faulty_models):
    found = engine.diagnose(spec_for_path(str(faulty_models / "pad_batch.pb")), ON, reps=3)
    assert found["verdict"]["fault"] == "disagrees"
    assert found["pinned"] is None  # no remapper fusion's ops, run alone, show it
    ways = {w["way"]: w for w in found["ways"]}
    assert ways["remapper-off"]["runs"] and not ways["remapper-off"]["agrees"]
    assert ways["onednn-off"]["runs"] and ways["onednn-off"]["agrees"]
    assert found["xla"]["fault"] is None and "keeps to the shapes the model declares" in found["xla"]["words"]


def test_a_model_onednn_fails_both_ways_says_it_runs_without_onednn(engine, faulty_models):
    model = spec_for_path(str(faulty_models / "pad_channel.pb"))
    with pytest.raises(WorkerError) as failed:
        engine.inspect(model, ON, use_cache=False)
    assert "input depth must be evenly divisible by filter depth" in failed.value.message
    assert failed.value.message.endswith(ONEDNN_OFF)
    assert engine.inspect(model, OFF, use_cache=False)["agreement"]["status"] == "agrees"


def test_a_benchmark_of_it_is_no_gain(engine, faulty_models):
    result = engine.bench(spec_for_path(str(faulty_models / "pad_batch.pb")), ON, reps=3, warmup=1)
    assert result["agreement"]["within_tolerance"] is False
    assert "where the model's traced graph declares [2, 6, 6, 4]" in result["agreement"]["off_declared"]
    assert result["summary"]["speedup"]["verdict"] == "NOT A GAIN: the outputs have another shape than the model declares"
