"""analysis.agreement: the fused run's outputs against the unfused reference's (pure numpy)."""

from __future__ import annotations

import json

import ml_dtypes
import numpy as np

from explorer.analysis.agreement import compare, edges_judged, headline, judged, tolerance, variation

CONV = ["Placeholder", "Conv2D", "BiasAdd", "Relu", "Identity"]


def reference(shape=(8, 16), seed=0):
    return np.random.default_rng(seed).normal(size=shape).astype(np.float32)


def test_identical_outputs_agree_and_the_result_is_plain_json():
    y = reference()
    result = compare([y.copy()], [y], ops=CONV)
    assert result["agree"] and result["worst"] == 0 and result["count"] == {"fused": 1, "reference": 1}
    out = result["outputs"][0]
    assert out["max_abs"] == 0 and out["outside"] == 0 and out["why"] is None
    assert out["shape"] == {"fused": [8, 16], "reference": [8, 16]} and out["dtype"]["reference"] == "float32"
    assert json.loads(json.dumps(result, allow_nan=False)) == result


def test_float32_reordered_sums_agree_and_a_wrong_kernel_does_not():
    y = reference()
    noise = y * (1 + 1e-5 * np.random.default_rng(1).choice([-1, 1], size=y.shape))
    assert compare([noise.astype(np.float32)], [y], ops=CONV)["agree"]
    wrong = y.copy()
    wrong[3, 5] += 0.5
    result = compare([wrong], [y], ops=CONV)
    out = result["outputs"][0]
    assert not result["agree"] and out["outside"] == 1
    assert out["max_abs_at"] == [3, 5] and out["max_rel_at"] == [3, 5]
    assert abs(out["max_abs"] - 0.5) < 1e-6 and "beyond tolerance" in out["why"] and "[3, 5]" in result["summary"]


def test_tolerance_follows_dtype_and_ops():
    elementwise = tolerance("float32", ["BiasAdd", "Relu"])["rtol"]
    summing = tolerance("float32", CONV)
    assert elementwise < tolerance("float32", ["Tanh"])["rtol"] < summing["rtol"]
    assert any("another order" in b for b in summing["basis"])
    assert tolerance("float32", CONV, tf32=True)["rtol"] > summing["rtol"]  # TF32 contractions
    assert tolerance("float32", ["Relu"], tf32=True)["rtol"] == elementwise  # no contraction: TF32 irrelevant
    assert tolerance("float32", ["_FusedConv2D"])["rtol"] == summing["rtol"]
    assert tolerance("float32", ["FusedBatchNormV3"])["rtol"] == summing["rtol"]
    assert tolerance("float32", ["ExpandDims"])["rtol"] == elementwise  # "Exp" is a family, not a substring
    assert tolerance("bfloat16", CONV)["rtol"] > tolerance("float16", CONV)["rtol"] > summing["rtol"]
    assert tolerance("float64", CONV)["rtol"] < summing["rtol"]
    for exact in ("int32", "int64", "bool", "uint8", "string"):
        assert tolerance(exact, CONV)["rtol"] == 0.0


def test_integer_and_bool_outputs_must_match_exactly():
    same = np.arange(12).reshape(3, 4)
    assert compare([same.copy()], [same])["agree"]
    off = same.copy()
    off[2, 1] += 1
    out = compare([off], [same])["outputs"][0]
    assert not out["agree"] and out["outside"] == 1 and out["max_abs_at"] == [2, 1] and out["max_abs"] == 1
    flags = np.array([True, False, True])
    assert not compare([~flags], [flags])["agree"]


def test_nan_where_the_reference_is_finite_is_a_disagreement():
    y = reference()
    x = y.copy()
    x[0, 0] = np.nan
    x[1, 1] = np.inf
    out = compare([x], [y], ops=CONV)["outputs"][0]
    assert not out["agree"] and out["nan"] == {"fused": 1, "reference": 0} and out["inf"]["fused"] == 1
    assert out["nonfinite_where_reference_finite"] == 2 and "non-finite" in out["why"]
    assert np.isfinite(out["max_abs"])  # differences are over elements finite on both sides


def test_matching_specials_agree_and_fused_finite_where_reference_is_not_is_only_reported():
    y = reference()
    y[0, 0], y[0, 1] = np.nan, -np.inf
    x = y.copy()
    assert compare([x], [y])["agree"]
    x[0, 1] = np.inf  # sign of an infinity changed
    assert not compare([x], [y])["agree"]
    x = y.copy()
    x[0, 0] = 1.0  # the fused graph did no worse
    out = compare([x], [y])["outputs"][0]
    assert out["agree"] and out["finite_where_reference_nonfinite"] == 1


def test_shape_dtype_and_count_mismatches_disagree():
    y = reference()
    assert "shape" in compare([y[:4]], [y])["outputs"][0]["why"]
    assert "dtype" in compare([y.astype(np.float64)], [y])["outputs"][0]["why"]
    result = compare([y], [y, y])
    assert not result["agree"] and result["count"] == {"fused": 1, "reference": 2}


def test_relative_difference_is_floored_at_the_outputs_typical_magnitude():
    # A sum that cancels to ~0 carries the rounding of its large terms: not a disagreement.
    y = reference((64, 64))
    y[5, 5] = 1e-9
    x = y.copy()
    x[5, 5] = 2e-5
    out = compare([x], [y], ops=CONV)["outputs"][0]
    assert out["agree"] and out["max_rel"] < 1e-4


def test_half_precision_outputs_compare_in_their_own_tolerance():
    y = reference()
    for dtype in (ml_dtypes.bfloat16, np.float16):
        half = y.astype(dtype)
        rounded = (y * (1 + 2e-3)).astype(dtype)
        result = compare([rounded], [half], ops=CONV)
        assert result["agree"], result["summary"]
        assert result["outputs"][0]["dtype"]["reference"] in ("bfloat16", "float16")
        assert not compare([(y + 1.0).astype(dtype)], [half], ops=CONV)["agree"]


def test_float32_outputs_of_a_model_computing_in_half_precision_take_its_tolerance():
    # A mixed-precision model (Keras's mixed_bfloat16): the fused kernel rounds to bfloat16 once, the unfused
    # ops after each step, so their float32 outputs differ by bfloat16 rounding, which is no broken fusion.
    y = reference()
    rounded = y * (1 + 8e-3)
    assert not compare([rounded], [y], ops=CONV)["agree"]
    mixed = compare([rounded], [y], ops=CONV, computed=["bfloat16", "float32"])
    assert mixed["agree"], mixed["summary"]
    assert mixed["outputs"][0]["tolerance"]["rtol"] == tolerance("bfloat16", CONV)["rtol"]
    assert "the model computes in bfloat16 behind float32 outputs" in mixed["outputs"][0]["tolerance"]["basis"]
    assert mixed["summary"].endswith("within 0.1 (the model computes in bfloat16 behind float32 outputs)")
    assert not compare([y + 1.0], [y], ops=CONV, computed=["bfloat16"])["agree"]
    # Only a narrower dtype widens it: float64 ops behind float32 outputs, or integers, leave it as it was.
    assert tolerance("float32", CONV, computed=["float64", "int32"]) == tolerance("float32", CONV)
    assert tolerance("float16", CONV, computed=["bfloat16"])["rtol"] == tolerance("bfloat16", CONV)["rtol"]
    assert tolerance("int64", CONV, computed=["bfloat16"])["rtol"] == 0.0
    # TF32 is float32's: a model computing in float16 is judged in float16's tolerance, TF32 or not.
    assert tolerance("float32", CONV, tf32=True, computed=["float16"]) == tolerance("float32", CONV,
                                                                                     computed=["float16"])


def test_outputs_that_vary_from_call_to_call_are_not_held_against_the_fusion():
    # A model that draws random numbers (RandomUniform) differs from its unfused run whatever the fusion did:
    # two calls of the fused graph on the same inputs show it, and then nothing is said of the fusion's numbers.
    y = reference()
    noise = np.random.default_rng(3).uniform(0, 0.1, y.shape).astype(np.float32)
    basis = {"ops": CONV + ["RandomUniform"], "tf32": False, "computed": ["float32"], "random": ["RandomUniform"],
             "varies": None}
    assert variation([y + noise], [y + noise], basis) is None  # a model whose calls repeat: nothing varies
    varies = variation([y + noise], [y + noise[::-1]], basis)
    assert varies.startswith("the model's outputs vary from call to call: it calls RandomUniform, and two calls")
    plain = judged([y + noise], None, [y], None, basis)
    assert plain["status"] == "differs" and headline(plain)
    found = judged([y + noise], None, [y], None, dict(basis, varies=varies))
    assert found["status"] == "varies" and headline(found) is None
    assert found["summary"] == f"{varies}, so the unfused run's numbers say nothing of the fusion"
    assert judged([y], None, [y], None, dict(basis, varies=varies))["status"] == "agrees"


def test_empty_and_scalar_outputs():
    empty = np.zeros((0, 4), np.float32)
    assert compare([empty], [empty.copy()])["agree"]
    assert compare([np.float32(2.0)], [np.float32(2.0)])["agree"]
    out = compare([np.float32(3.0)], [np.float32(2.0)])["outputs"][0]
    assert not out["agree"] and out["max_abs_at"] == []
    assert compare([], [])["summary"] == "no outputs to compare"


def test_a_speedup_between_variants_that_disagree_is_not_a_gain():
    from explorer.analysis import stats

    rng = np.random.default_rng(3)
    fused = [int(v) for v in 1e6 * rng.lognormal(0, 0.05, 60)]
    unfused = [int(v) for v in 2e6 * rng.lognormal(0, 0.05, 60)]
    raw = {"samples_ns": {"fused": fused, "unfused": unfused}}
    agree = {"max_abs": 1e-6, "max_rel": 1e-6, "tolerance": 1e-3, "within_tolerance": True, "tf32": False}
    assert stats.bench_summary(dict(raw, agreement=agree))["speedup"]["verdict_code"] == "faster"
    differ = dict(agree, max_abs=0.696, within_tolerance=False)
    sp = stats.bench_summary(dict(raw, agreement=differ))["speedup"]
    assert sp["verdict_code"] == "outputs_differ" and sp["verdict"].startswith("NOT A GAIN")
    assert sp["timing_verdict_code"] == "faster" and sp["estimate"] > 1.5  # the timing kept, not counted as a gain
    rows = stats.sweep_table([(64, dict(raw, agreement=differ)), (128, dict(raw, agreement=agree))])
    assert stats.fusion_pays_from(rows) == 128  # a point whose outputs differ is not where fusion pays


def test_an_edge_input_the_model_refuses_either_way_is_worded_as_not_compared():
    # an embedding's ids at 2^30 are out of range with the remapper on and off alike: nothing about the fusion
    from explorer.analysis.agreement import concluded, edges_judged
    from explorer.present.agreement import lines

    y = reference()
    basis = {"ops": CONV, "tf32": False, "computed": ["float32"], "random": [], "varies": None}
    error = {"type": "InvalidArgumentError", "message": "indices[0,0] = 1073741824 is not in [0, 100)", "node": None,
             "op": None}
    edges = edges_judged([{"case": "large", "outputs": None, "error": error, "inputs": "ids at 2^30", "shapes": [],
                           "seconds": 0.1}], [{"case": "large", "outputs": None, "error": error, "seconds": 0.1}], basis)
    check = concluded({"inputs": None}, judged([y], None, [y], None, basis), edges, 0.5)
    assert check["status"] == "agrees" and headline(check) is None
    assert lines(check)[-1] == ("  edge inputs, large (ids at 2^30): not compared (they fail unfused too: not the fusion's doing) - "
                                "fails with the remapper on and off alike: indices[0,0] = 1073741824 is not in [0, 100)")


def test_an_output_off_the_declared_shape_is_wrong_whatever_the_reference_says():
    # oneDNN's Pad fold with the remapper on and off alike: both runs drop the batch padding, so they agree with
    # each other; the traced graph's own shapes say they are wrong.
    basis = {"ops": ["Pad", "_FusedConv2D", "_MklNativePadWithFusedConv2D"], "tf32": False, "computed": ["float32"],
             "random": [], "varies": None, "declared": [[2, 6, 6, 4]]}
    short = np.ones((1, 6, 6, 4), np.float32)
    both = judged([short], None, [short], None, basis)
    assert both["status"] == "differs" and headline(both) and both["comparison"]["agree"]
    assert both["summary"] == (
        "output 0 has shape [1, 6, 6, 4], where the model's traced graph declares [2, 6, 6, 4]; the unfused reference "
        "(remapper off) has it too: a rewrite that runs with the remapper off made it (oneDNN's layout pass ran "
        "_MklNativePadWithFusedConv2D: a Pad folded into a convolution; try TF_ENABLE_ONEDNN_OPTS=0)")
    whole = np.ones((2, 6, 6, 4), np.float32)
    alone = judged([short], None, [whole], None, basis)
    assert alone["status"] == "differs" and "has it too" not in alone["summary"]
    assert judged([whole], None, [whole], None, basis)["status"] == "agrees"
    # a dimension the graph leaves open is not held against a run; nor is a run of other inputs (an edge case)
    assert judged([short], None, [short], None, dict(basis, declared=[[None, 6, 6, 4]]))["status"] == "agrees"
    edge = {"case": "empty dimension", "outputs": [short[:0]], "error": None, "inputs": "0", "shapes": [[0, 6, 6, 3]],
            "seconds": 0.0}
    assert edges_judged([edge], [edge], basis)[0]["status"] == "agrees"


def test_what_the_check_cannot_see_is_said_where_onednn_fused_on_its_own():
    from explorer.present.agreement import shared_fusions

    late = [{"describe": "Pad + _FusedConv2D → _MklNativePadWithFusedConv2D [BiasAdd]"}] * 2
    result = {"fusions_by_pair": {"optimized->executed": late}, "agreement": {"status": "agrees"}}
    said = shared_fusions(result)
    assert said.startswith("oneDNN's own fusions when executed (Pad + _FusedConv2D → _MklNativePadWithFusedConv2D "
                           "[BiasAdd]) run in the unfused reference too")
    assert said.endswith("oneDNN off (TF_ENABLE_ONEDNN_OPTS=0) checks them")
    assert shared_fusions(dict(result, fusions_by_pair={"optimized->executed": []})) is None
    assert shared_fusions(dict(result, agreement={"status": "skipped"})) is None  # the remapper off: no check
