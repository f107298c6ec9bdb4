"""Every corpus model through the engine: the verdict, the fused node responsible (its ops alone fail in a fresh
process, as the model did), the pattern and kernel named; and the ways around it, each run, for one model of
each source. oneDNN is forced on (the corpus's faults need it), so this holds on every x86 CPU."""

from __future__ import annotations

import pytest

from explorer.engine import diagnose
from explorer.errors import WorkerError
from explorer.present.diagnose_text import diagnose_text
from tests.faulty.corpus import ONEDNN_OFF, ONEDNN_ON, entries, spec

CORPUS = entries()
WAYS_FOR = {"chain_conv2d_bn_tanh", "stack_conv_skip_mish", "import_conv3d_add_mish"}


@pytest.mark.parametrize("entry", CORPUS, ids=[e["name"] for e in CORPUS])
def test_corpus_model_is_diagnosed(engine, faulty_models, entry):
    result = diagnose.run(engine, spec(entry, faulty_models), ONEDNN_ON, ways=entry["name"] in WAYS_FOR, reps=3)
    verdict = result["verdict"]
    assert verdict["fault"] == "fails" and verdict["runs"] is False, verdict
    assert result["xla"]["fault"] is None, result["xla"]  # XLA compiles these ops itself, and agrees
    assert "breaks this model" in verdict["words"]
    pinned = result["pinned"]
    assert pinned is not None, [(n["node"], n.get("alone")) for n in result["nodes"]]
    assert pinned["node"] == entry["node"]
    assert pinned["target"] == entry["fused"]
    assert pinned["reproduces"] and pinned["fault_alone"] == "fails"
    assert pinned["pattern"].startswith("Find")  # a matcher of remapper.cc, not the fallback words
    assert pinned["kernel"] == entry["kernel"]  # as TensorFlow's log names it (None: it names none)
    # the other fused nodes, run alone, agree: the fault is pinned, not smeared over every fusion
    for node in result["nodes"]:
        if node["describe"].split(" → ")[1] != entry["fused"]:  # a fusion of another pattern
            assert node["alone"]["fault"] is None, node
    if entry["name"] in WAYS_FOR:
        ways = {w["way"]: w for w in result["ways"]}
        assert ways["remapper-off"]["runs"] and ways["remapper-off"]["agrees"]
        assert ways["onednn-off"]["runs"] and ways["onednn-off"]["agrees"]
        for way in ways.values():
            assert way["timing"]["configured_ms"] > 0 and way["timing"]["unfused_ms"] > 0
    if entry["source"] == "import" and "Mish" in entry["fused"]:
        # only that fusion prevented: Mish's softplus split into log1p(exp(x)), the contraction's own fusion kept
        split = {w["way"]: w for w in result["ways"]}["split-mish"]
        assert split["runs"] and split["agrees"], split
        assert split["fused"] and all("Mish" not in f for f in split["fused"]), split["fused"]
        assert split["verdict"]["agreement"]["agree"]


def test_a_fusion_that_works_is_no_fault(engine):
    result = diagnose.run(engine, {"preset": "conv2d_bias_relu", "params": {"height": 16, "width": 16}}, ONEDNN_ON)
    assert result["verdict"]["fault"] is None and result["verdict"]["runs"]
    assert result["verdict"]["agreement"]["agree"]
    assert [n["op"] for n in result["nodes"]] == ["_FusedConv2D"]
    assert result["pinned"] is None and result["ways"] == []
    assert result["xla"]["fault"] is None and result["xla"]["agreement"]["agree"]  # XLA too, against the same reference
    assert result["warnings"] == []  # Grappler optimised it


def test_a_grappler_that_gave_up_is_said_though_the_outputs_agree(engine):
    """MatMul + BiasAdd + Add + Relu with oneDNN: the remapper writes a node with no op, Grappler gives up and
    TensorFlow runs the function unoptimised (a graph rewrite's defect: on every x86 CPU with oneDNN on). The outputs
    agree, so the verdict alone said nothing was wrong."""
    spec = {"chain": {"contraction": "MatMul", "bias": "BiasAdd", "side_add": True, "activation": "Relu"},
            "params": {"m": 32, "k": 16, "n": 8}}
    result = diagnose.run(engine, spec, ONEDNN_ON)
    assert result["verdict"]["fault"] is None and result["verdict"]["runs"]
    (warning,) = result["warnings"]
    assert "no Grappler optimisation at all" in warning and "does not specify an operation" in warning
    assert f"WARNING: {warning}" in diagnose_text(result).splitlines()[1]
    # the ways around it, run: with the remapper off Grappler optimises the model again
    ways = {way["way"]: way for way in result["ways"]}
    assert set(ways) == {"remapper-off", "onednn-off"} and all(w["runs"] and w["agrees"] for w in ways.values())
    assert ways["remapper-off"]["warnings"] == [] and ways["onednn-off"]["warnings"] == []
    assert "the remapper off for this model: runs and agrees;" in diagnose_text(result)


def test_a_remapper_that_failed_is_said_and_the_ways_around_it_run(engine):
    """Pre-activation residual blocks with oneDNN (the stack example preact_residual): the remapper
    fuses conv + bias + add + relu though the add is read by the next skip too, fails ('Mutation::Apply error'), and
    TensorFlow drops every fusion it made. The outputs agree, so only the log says that nothing fused."""
    from explorer.model.stack_examples import example

    stack = {"stack": example("preact_residual")}
    inspected = engine.inspect(stack, ONEDNN_ON)
    assert "remapper failed: INVALID_ARGUMENT: Mutation::Apply error" in inspected["remapper_failed"]
    assert inspected["fusions"] == [] and inspected["grappler"]["remapper_log"]  # it logged fusions, kept none
    assert any(w.startswith("Grappler's remapper failed on this graph") for w in inspected["warnings"])
    result = diagnose.run(engine, stack, ONEDNN_ON, reps=3)
    assert result["verdict"]["fault"] is None and result["pinned"] is None
    (warning,) = result["warnings"]
    assert "dropped every change it made" in warning
    ways = {way["way"]: way for way in result["ways"]}
    assert set(ways) == {"remapper-off", "onednn-off"} and all(w["runs"] and w["agrees"] for w in ways.values())
    assert ways["onednn-off"]["warnings"] == []  # without oneDNN the remapper fuses each conv + bias
    assert engine.inspect(stack, ONEDNN_OFF)["remapper_failed"] is None


def test_an_imported_model_the_remapper_fails_on_gets_a_rewrite_that_keeps_its_other_fusions(engine, faulty_models,
                                                                                           tmp_path):
    """The same blocks as a frozen GraphDef: beside the settings, split-add computes each sum the remapper fails on
    twice, so that it fuses each convolution with its bias and fails on nothing (oneDNN still on)."""
    from explorer.engine.uploads import spec_for_path

    model = spec_for_path(str(faulty_models / "preact_residual.pb"))
    assert engine.inspect(model, ONEDNN_ON)["remapper_failed"]
    result = diagnose.run(engine, model, ONEDNN_ON, reps=3, out=str(tmp_path / "split"))
    ways = {way["way"]: way for way in result["ways"]}
    assert set(ways) == {"remapper-off", "onednn-off", "split-add"}
    split = ways["split-add"]
    assert split["runs"] and split["agrees"] and split["warnings"] == [], split  # and Grappler optimises it
    assert split["fused"] == ["_FusedConv2D [BiasAdd]"] and split["model_out"].endswith(".pb")
    fixed = engine.inspect(spec_for_path(split["model_out"]), ONEDNN_ON)
    assert fixed["remapper_failed"] is None
    assert [(f["op"], f["fused_ops"]) for f in fixed["fusions"]] == [("_FusedConv2D", ["BiasAdd"])] * 3


def test_an_imported_fused_batch_norm_is_folded_away_as_the_way_that_keeps_the_remapper(engine, faulty_models, tmp_path):
    # Conv2D + FusedBatchNorm (an op with is_training false) + Tanh: folding the batch norm into the convolution's
    # weights and bias prevents only the fusion that breaks: the remapper fuses Conv2D + BiasAdd instead (TF 2.21
    # lets Tanh join a MatMul's fusion only), and the model runs and agrees
    entry = next(e for e in CORPUS if e["name"] == "import_conv_bn_tanh")
    out = str(tmp_path / "folded")
    result = diagnose.run(engine, spec(entry, faulty_models), ONEDNN_ON, ways=True, reps=3, out=out)
    ways = {w["way"]: w for w in result["ways"]}
    fold = ways["fold-batchnorm"]
    assert fold["runs"] and fold["agrees"], fold
    assert fold["fused"] == ["_FusedConv2D [BiasAdd]"], fold["fused"]
    assert fold["model_out"] and fold["model_out"].endswith(".pb") and (tmp_path / "folded.pb").stat().st_size > 0
    assert fold["timing"]["configured_ms"] > 0


def test_a_bench_of_a_model_the_fusion_breaks_says_so_and_times_nothing(engine):
    entry = next(e for e in CORPUS if e["name"] == "chain_conv2d_bn_mish")
    with pytest.raises(WorkerError) as info:
        engine.bench(spec(entry), ONEDNN_ON, reps=3, warmup=0)
    assert info.value.message.startswith("THE FUSION BREAKS THIS MODEL: the fused variant fails (UnimplementedError: "
                                         "Fusion is not implemented: [FusedBatchNorm,Mish])"), info.value.message
    assert "the unfused one (remapper off) runs, so there is nothing to time" in info.value.message and "Traceback" not in info.value.message
    # the worker that saw it serves the next bench with that one's graphs only: a model that fuses and runs
    result = engine.bench({"preset": "conv2d_bias_relu", "params": {"height": 8, "width": 8}}, ONEDNN_ON, reps=3,
                          warmup=0)
    fused = [n["op"] for n in result["proof"]["fused"]["fused_nodes"]]  # as executed: oneDNN's name for it
    assert len(fused) == 1 and fused[0].endswith("FusedConv2D"), fused
    assert "Relu" in result["proof"]["unfused"]["executed_ops"] and result["agreement"]["within_tolerance"]


def test_a_comparison_whose_side_the_fusion_breaks_names_that_side(engine):
    entry = next(e for e in CORPUS if e["name"] == "chain_conv2d_bn_mish")
    with pytest.raises(WorkerError) as info:
        engine.compare(spec(entry), ONEDNN_ON, spec(entry), ONEDNN_OFF, processes=1, reps=3, warmup=0)
    assert info.value.message.startswith("THE FUSION BREAKS THIS MODEL: A fails at this setting (UnimplementedError"), \
        info.value.message
    assert "runs with the remapper off, so there is nothing to time" in info.value.message
