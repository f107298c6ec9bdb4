"""analysis.diagnosis on plain answers: the verdict of each fault, the remapper pattern named, the node pinned."""

from __future__ import annotations

from explorer.analysis import diagnosis
from explorer.present.diagnose_text import diagnose_text


def test_verdicts():
    failed = diagnosis.verdict({"fused_error": {"type": "UnimplementedError", "line": "Fusion is not implemented",
                                                "node": "Tanh", "kernel": "Eigen", "kernel_file": "x.h:1"}})
    assert failed["fault"] == "fails" and not failed["runs"] and failed["failed_node"] == "Tanh"
    aborted = diagnosis.verdict({"fused_aborted": {"line": "killed by SIGABRT"}})
    assert aborted["fault"] == "aborts"
    off = diagnosis.verdict({"agreement": {"agree": False, "summary": "output 0: max abs diff 0.7"}})
    assert off["fault"] == "disagrees" and off["runs"] and "0.7" in off["words"]
    fine = diagnosis.verdict({"agreement": {"agree": True, "summary": "agree"}})
    assert fine["fault"] is None
    broken_anyway = diagnosis.verdict({"unfused_error": {"type": "InvalidArgumentError", "line": "bad"}})
    assert broken_anyway["fault"] is None and "not the cause" in broken_anyway["words"]


def test_patterns():
    assert diagnosis.pattern({"op": "_FusedConv2D", "fused_ops": ["FusedBatchNorm", "Tanh"]}).startswith(
        "FindConv2DWithBatchNormAndActivation")
    assert diagnosis.pattern({"op": "_FusedConv2D", "fused_ops": ["FusedBatchNorm"]}).startswith("FindConv2DWithBatchNorm ")
    assert diagnosis.pattern({"op": "_FusedConv3D", "fused_ops": ["BiasAdd", "Add", "Mish"]}).startswith(
        "FindFusedConvWithFusedActivation")
    assert diagnosis.pattern({"op": "_FusedMatMul", "fused_ops": ["BiasAdd", "Relu"]}).startswith(
        "FindContractionWithBiasAddAndActivation")
    assert diagnosis.pattern({"op": "_FusedMatMul", "fused_ops": ["BiasAdd"]}).startswith("FindContractionWithBias ")
    assert diagnosis.pattern({"op": "_Unheard", "fused_ops": []}) == "the remapper's _Unheard fusion"


def test_pin_prefers_the_node_with_the_models_fault_and_the_one_the_error_names():
    nodes = [{"node": "a", "op": "_FusedConv2D", "fused_ops": ["BiasAdd", "Relu"], "alone": {"fault": None}},
             {"node": "b", "op": "_FusedConv2D", "fused_ops": ["BiasAdd", "Add", "Mish"], "alone": {"fault": "fails"}},
             {"node": "c", "op": "_FusedConv2D", "fused_ops": ["BiasAdd", "Add", "Mish"], "alone": {"fault": "fails"}}]
    verdict = {"fault": "fails", "failed_node": "c", "kernel": "Eigen", "kernel_file": "conv_ops_fused_impl.h:750"}
    pinned = diagnosis.pin(verdict, nodes)
    assert pinned["node"] == "c" and pinned["reproduces"] and pinned["kernel"] == "Eigen"
    assert diagnosis.pin(dict(verdict, failed_node=None), nodes)["node"] == "b"
    assert diagnosis.pin({"fault": "disagrees"}, nodes)["reproduces"] is False  # another fault than the model's
    assert diagnosis.pin({"fault": None}, nodes) is None
    assert diagnosis.pin({"fault": "fails"}, nodes[:1]) is None  # nothing alone shows a fault: not pinned


def test_tally():
    results = [{"name": "m", "verdict": {"fault": "fails"}, "pinned": {"node": "x", "reproduces": True},
                "ways": [{"runs": True, "agrees": True}]},
               {"name": "n", "verdict": {"fault": None}, "pinned": None, "ways": []}]
    assert diagnosis.tally(results, {"m": "x", "n": "y"}) == {"models": 2, "found": 1, "pinned": 1, "way_verified": 1,
                                                              "repro_reproduces": 1}


def test_xla_verdicts():
    assert diagnosis.xla_verdict({}) is None
    refused = diagnosis.xla_verdict({"xla": {"error": {"type": "InvalidArgumentError", "line": "unsupported op"},
                                             "refused": True}})
    assert refused["fault"] is None and "does not compile" in refused["words"]
    failed = diagnosis.xla_verdict({"xla": {"error": {"type": "InternalError", "line": "boom"}, "refused": False}})
    assert failed["fault"] == "fails"
    off = diagnosis.xla_verdict({"xla": {"agreement": {"agree": False, "summary": "output 0 differs"}}})
    assert off["fault"] == "disagrees" and "output 0 differs" in off["words"]
    assert diagnosis.xla_verdict({"xla": {"agreement": {"agree": True}}})["fault"] is None


def test_a_model_whose_outputs_vary_from_call_to_call_has_nothing_to_diagnose():
    varies = "the model's outputs vary from call to call: it calls RandomUniform, and two calls ... differ"
    answer = {"agreement": {"agree": False, "summary": "output 0 differs"}, "varies": varies,
              "xla": {"agreement": {"agree": False, "summary": "output 0 differs"}}, "nodes": [{"node": "Relu"}]}
    verdict = diagnosis.verdict(answer)
    assert verdict["fault"] is None and verdict["words"].startswith(f"Nothing to diagnose: {varies}")
    xla = diagnosis.xla_verdict(answer)
    assert xla["fault"] is None and "not comparable" in xla["words"]
    text = diagnose_text({"verdict": verdict, "xla": xla, "nodes": answer["nodes"]})
    assert "BREAKS" not in text and "none could be held against the remapper-off graph" in text
    # without the second call's evidence the same numbers are the fusion's fault
    assert diagnosis.verdict(dict(answer, varies=None))["fault"] == "disagrees"
