"""Fixes as graph rewrites, each on small models made here, against TensorFlow's own run of the models.

``fix_models.py`` exports the models (seeded non-zero weights and batch-norm statistics) and is the
oracle: it runs the original and the fixed model directly with TensorFlow (no explorer code), giving
their outputs on the same input and the fused ops of the fixed model's optimized graph. The engine's
fix is run without timing (``measure=False``: the outputs are still compared in the worker), with oneDNN
on (``TF_ENABLE_ONEDNN_OPTS=1``, so the tests hold on a CPU where it is off by default), and the oracle
runs under the same setting.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from explorer.engine.uploads import spec_for_path
from explorer.model import stack_examples
from explorer.present.fix_text import fix_text
from tests.tf_script import run_tf_script

SCRIPT = Path(__file__).resolve().parent / "fix_models.py"
ONEDNN = {"TF_ENABLE_ONEDNN_OPTS": "1"}


def _script(*args) -> str:
    return run_tf_script(SCRIPT, *args, env=ONEDNN)


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> Path:
    directory = tmp_path_factory.mktemp("fix_models")
    _script("export", str(directory))
    return directory


@pytest.fixture(scope="module")
def fixed(engine, models, tmp_path_factory):
    """{(model, fix): the engine's fix result}, each fixed model written under a folder of this module."""
    out = tmp_path_factory.mktemp("fixed")
    runs = {("bn_cnn", "fold-batchnorm"), ("bn_bf16", "fold-batchnorm"), ("bn_nchw", "fold-batchnorm"), ("bn_cnn.pb", "fold-batchnorm"), ("bn_cnn", "freeze"),
            ("adds", "bias-add"), ("bn_preact", "fold-batchnorm"), ("bn_dense_residual", "fold-batchnorm"), ("bias_preact", "bias-add"), ("second_bias", "bias-add"), ("conv1d", "squeeze-after-activation"),
            ("dense3d", "bias-before-reshape"), ("moments", "fold-batchnorm"), ("moments", "freeze"),
            ("dense_gelu4d", "bias-before-reshape"), ("dense_gelu_residual", "bias-before-reshape")}
    return {(name, fix): engine.fix(spec_for_path(str(models / name)), {"env": ONEDNN}, apply=[fix], measure=False,
                                    out=str(out / f"{name.replace('.', '_')}-{fix}"))
            for name, fix in sorted(runs)}


@pytest.fixture(scope="module")
def oracle(models, fixed):
    """{path: {"fused", "outputs"}} for every original and fixed model, from TensorFlow alone."""
    paths = sorted({str(models / name) for name, _ in fixed} | {r["model_out"] for r in fixed.values() if r["model_out"]})
    return json.loads(_script("run", *paths).splitlines()[-1])


def fused_counts(fusions: list[dict]) -> dict:
    return {row["fused"].replace(" [", "[").replace(", ", ","): row["count"] for row in fusions}


def agrees_with_tensorflow(oracle, original: str, fixed: str) -> float:
    a, b = oracle[original]["outputs"], oracle[fixed]["outputs"]
    assert len(a) == len(b)
    return max(float(np.max(np.abs(np.asarray(x) - np.asarray(y)))) for x, y in zip(a, b))


def assert_every_batch_norm_folded(result: dict, sites: int) -> None:
    """fold-batchnorm folded ``sites`` batch norms, left none, and the fixed model agrees with the original."""
    (applied,) = result["applied"]
    assert applied["sites"] == sites and applied["left"] == []
    assert not [m for m in result["near_misses_left"] if m["kind"] == "batchnorm-as-arithmetic"]
    assert result["within_tolerance"]


@pytest.mark.parametrize("name", ["bn_cnn", "bn_cnn.pb"])
def test_fold_batchnorm_folds_every_batch_norm_and_keeps_the_result(models, fixed, oracle, name):
    result = fixed[(name, "fold-batchnorm")]
    (applied,) = result["applied"]
    assert applied["fix"] == "fold-batchnorm" and applied["sites"] == 4 and applied["left"] == []
    norms = [m for m in result["near_misses_ranked"] if m["kind"] == "batchnorm-as-arithmetic"]
    # Every batch-norm near-miss is gone after (frozen, Grappler folds the bias-less conv's scale itself).
    assert len(norms) >= 3 and all(m["fixed_by"] == ["fold-batchnorm"] for m in norms)
    assert not [m for m in result["near_misses_left"] if m["kind"] == "batchnorm-as-arithmetic"]
    assert result["within_tolerance"] and result["max_abs_diff"] <= result["tolerance"]
    out = result["model_out"]
    # A SavedModel keeps its weights as variables (a SavedModel again); a frozen graph stays a GraphDef.
    assert (os.path.isdir(out) and (Path(out) / "variables").is_dir()) if name == "bn_cnn" else out.endswith(".pb")
    assert agrees_with_tensorflow(oracle, str(models / name), out) < 1e-4
    assert fused_counts(result["fusions_after"]) == oracle[out]["fused"]  # what TensorFlow itself fuses
    # The activations after the folded batch norms join the convolutions and the Dense (stock and oneDNN).
    assert {"_FusedConv2D[BiasAdd,Relu]", "_FusedConv2D[BiasAdd,Relu6]", "_FusedMatMul[BiasAdd,Relu]"} <= set(
        fused_counts(result["fusions_after"]))
    # The conv without a bias fuses too (frozen, with oneDNN, Grappler had already fused it with its shift).
    assert result["fused_kernels_after"] >= result["fused_kernels_before"] + (name == "bn_cnn")
    assert "use_bias=True" in applied["advice"]


def test_fold_batchnorm_folds_a_mixed_precision_batch_norm_through_its_casts(models, fixed, oracle, engine):
    """Keras's mixed_bfloat16 policy computes a batch norm in float32: Conv2D → Cast → Mul → AddV2 → Cast back.
    Neither the near-miss nor the fold saw through the Casts (MobileNetV2 in bfloat16: 52 contractions unfused,
    no near-miss named). Folded, the bias is added in bfloat16 and the Casts go; a float32 batch norm keeps its
    Cast to float32, after the bias."""
    original = engine.inspect(spec_for_path(str(models / "bn_bf16")), {"env": ONEDNN})
    norms = [m for m in original["report"]["near_misses"] if m["kind"] == "batchnorm-as-arithmetic"]
    assert len(norms) == 2 and all("Cast to float32" in m["form"] and "mixed-precision" in m["form"] for m in norms)
    casts = {n["dtype"] for n in original["stages"]["optimized"]["nodes"] if n["op"] == "Cast"}
    assert casts == {"float32", "bfloat16"}  # each Cast's dtype is the one it makes
    result = fixed[("bn_bf16", "fold-batchnorm")]
    assert_every_batch_norm_folded(result, 2)
    out = result["model_out"]
    reference = np.asarray(oracle[str(models / "bn_bf16")]["outputs"][0])
    assert agrees_with_tensorflow(oracle, str(models / "bn_bf16"), out) <= 0.05 * float(np.max(np.abs(reference)))
    assert fused_counts(result["fusions_after"]) == oracle[out]["fused"]  # what TensorFlow itself fuses
    traced = Counter(n["op"] for n in engine.inspect(result["fixed_spec"], {"env": ONEDNN})["stages"]["traced"]["nodes"])
    before = Counter(n["op"] for n in original["stages"]["traced"]["nodes"])
    assert traced["BiasAdd"] == before["BiasAdd"] + 2 and traced["Mul"] == traced["Rsqrt"] == 0
    assert traced["Cast"] < before["Cast"]


def test_fold_batchnorm_folds_a_channels_first_batch_norm_along_its_channels(models, fixed, oracle, engine):
    """Channels first, a batch norm's scale and shift are [1, C, 1, 1]: the near-miss finder read only [.., C] as per
    channel (the convs stayed unfused, no near-miss named them) and the fold refused NCHW. Folded, the bias is an NCHW
    BiasAdd, which oneDNN fuses with the convolution and its activation."""
    original = engine.inspect(spec_for_path(str(models / "bn_nchw")), {"env": ONEDNN})
    norms = [m for m in original["report"]["near_misses"] if m["kind"] == "batchnorm-as-arithmetic"]
    assert len(norms) == 2  # one after the conv without bias, one after the conv its bias fused into
    result = fixed[("bn_nchw", "fold-batchnorm")]
    assert_every_batch_norm_folded(result, 2)
    out = result["model_out"]
    assert agrees_with_tensorflow(oracle, str(models / "bn_nchw"), out) < 1e-4
    assert fused_counts(result["fusions_after"]) == oracle[out]["fused"]  # what TensorFlow itself fuses
    assert {"_FusedConv2D[BiasAdd,Relu]", "_FusedConv2D[BiasAdd,Relu6]"} <= set(fused_counts(result["fusions_after"]))
    traced = engine.inspect(result["fixed_spec"], {"env": ONEDNN})["stages"]["traced"]["nodes"]
    assert {n["attrs"].get("data_format") for n in traced if n["op"] == "BiasAdd" and "conv2d" in n["name"]} == {"NCHW"}


def assert_one_site_left_for_a_trap(models, fixed, oracle, name: str, fix: str, why: str) -> dict:
    """``fix`` rewrote one site of ``name`` and left one, saying ``why`` (a pattern TensorFlow's remapper fails on);
    the fixed model agrees with the original, fuses what TensorFlow alone fuses and meets no failure. Its fusions,
    as TensorFlow counts them."""
    result = fixed[(name, fix)]
    (applied,) = result["applied"]
    (left,) = applied["left"]
    assert applied["sites"] == 1 and why in left["why"] and result["within_tolerance"]
    out = result["model_out"]
    assert agrees_with_tensorflow(oracle, str(models / name), out) < 1e-4
    assert fused_counts(result["fusions_after"]) == oracle[out]["fused"]
    assert result["tensorflow_failed_after"] == []
    return oracle[out]["fused"]


def test_a_fold_leaves_out_the_site_that_would_lead_tensorflows_remapper_to_fail(models, fixed, oracle):
    """Pre-activation residual blocks (Xception's middle flow), oneDNN on: folded, the first block's conv + bias + add
    + relu would be a pattern oneDNN's remapper fuses though the add is read by the next skip too; it then fails and
    TensorFlow drops every fusion of the model (1 → 0 kernels on Xception before this). That batch norm is left as it
    is, with why; the other, whose sum is the model's output, folds and fuses. TensorFlow alone agrees."""
    fused = assert_one_site_left_for_a_trap(models, fixed, oracle, "bn_preact", "fold-batchnorm",
                                            "read by a Relu and by more) part of a contraction + BiasAdd + Add + Relu "
                                            "fusion, which TensorFlow's remapper fails on")
    assert fused["_FusedConv2D[BiasAdd,Add]"] == 1  # the second block's conv, bias and skip


def test_a_fold_leaves_out_a_dense_whose_residual_relu_would_make_grappler_give_up(models, fixed, oracle):
    """Dense + batch norm + residual add + ReLU, oneDNN on: folded, MatMul + BiasAdd + Add + Relu is a fusion for which
    the remapper writes a node with no op, and TensorFlow runs the model with no Grappler at all. That batch norm
    stays; the second Dense's folds and fuses. TensorFlow alone agrees."""
    fused = assert_one_site_left_for_a_trap(models, fixed, oracle, "bn_dense_residual", "fold-batchnorm",
                                            "writes a node with no op")
    assert fused == {"_FusedMatMul[BiasAdd]": 1}


def test_bias_add_leaves_out_a_bias_that_would_lead_the_remapper_to_fail(models, fixed, oracle):
    """A convolution's bias written with + is no bias to the remapper (nothing fuses); as a BiasAdd, the first conv of
    a pre-activation block would make the pattern oneDNN's remapper fails on. It stays; the second becomes a BiasAdd
    and fuses with its conv and the skip. TensorFlow alone agrees."""
    fused = assert_one_site_left_for_a_trap(models, fixed, oracle, "bias_preact", "bias-add",
                                            "TensorFlow's remapper fails on")
    assert fused == {"_FusedConv2D[BiasAdd,Add]": 1}


def test_a_fixed_model_on_which_tensorflows_remapper_fails_is_said_to(engine):
    """Where a fixed copy meets a TensorFlow failure the original did not, the report says so beside the fused
    kernels it lost. The rewrites now avoid the failures known, so the report is assembled from two real inspects
    that differ in just that: the pre-activation stack example with oneDNN on (the remapper fails)
    as the fixed copy, the same stack with oneDNN off (it does not) as the original."""
    from explorer.analysis.fix_report import assemble

    preact = {"stack": stack_examples.example("preact_residual")}
    stack = engine.inspect(preact, {"env": ONEDNN})
    original = engine.inspect(preact, {"env": {"TF_ENABLE_ONEDNN_OPTS": "0"}})
    variants = [{"name": "all", "fixes": ["bias-add"], "records": [{"fix": "bias-add", "sites": [], "left": []}]}]
    bench = {"pairs": None, "agreement": {"all": {"max_abs": 0.0, "max_rel": 0.0, "tolerance": 1e-3,
                                                  "within_tolerance": True}}}
    result = dict(assemble(original, variants, {"all": stack}, bench, None), fingerprint=None, skipped={})
    (failed,) = result["tensorflow_failed_after"]
    assert failed.startswith("Grappler's remapper failed on this graph")
    assert f"WARNING: on the fixed model, not on the original: {failed}" in fix_text(result)


def test_attention_scores_with_a_mask_of_one_head_fuse_and_a_2d_mask_is_named(models, engine):
    """q·kᵀ × scale + mask: oneDNN's _MklFusedBatchMatMulV2 takes a [1, 1, q, k] mask; a [q, k] one leaves the three
    ops unfused, and the near-miss names the shape that fuses (TensorFlow alone says so for the [1, 1, q, k] one)."""
    flat = engine.inspect(spec_for_path(str(models / "attention_mask2d")), {"env": ONEDNN})
    (miss,) = [m for m in flat["report"]["near_misses"] if m["kind"] == "attention-scores"]
    assert "[batch, 1, queries, keys] (here [6,6])" in miss["needs"] and "tf.reshape(mask" in miss["fix"]
    assert not [f for f in flat["fusions"] if "BatchMatMul" in f["op"]]
    per_head = engine.inspect(spec_for_path(str(models / "attention_mask4d")), {"env": ONEDNN})
    assert [f["describe"] for f in per_head["fusions"]] == ["BatchMatMulV2 + Mul + AddV2 → _MklFusedBatchMatMulV2 [Mul, Add]"]
    assert not [m for m in per_head["report"]["near_misses"] if m["kind"] == "attention-scores"]
    tensorflow = json.loads(_script("run", str(models / "attention_mask4d")).splitlines()[-1])
    assert "_MklFusedBatchMatMulV2[Mul,Add]" in tensorflow[str(models / "attention_mask4d")]["fused"]


def test_freeze_turns_variables_into_constants(models, fixed, oracle):
    result = fixed[("bn_cnn", "freeze")]
    (applied,) = result["applied"]
    assert applied["fix"] == "freeze" and applied["sites"] == len(applied["nodes"]) > 20
    assert result["model_out"].endswith(".pb")  # nothing is a variable any more
    assert agrees_with_tensorflow(oracle, str(models / "bn_cnn"), result["model_out"]) < 1e-4
    assert fused_counts(result["fusions_after"]) == oracle[result["model_out"]]["fused"]


def test_bias_add_rewrites_biases_only(models, fixed, oracle, engine):
    result = fixed[("adds", "bias-add")]
    (applied,) = result["applied"]
    assert applied["sites"] == 2  # the conv's and the matmul's; the residual add of two convolutions is no bias
    assert agrees_with_tensorflow(oracle, str(models / "adds"), result["model_out"]) < 1e-4
    traced = engine.inspect(result["fixed_spec"], {"env": ONEDNN})["stages"]["traced"]["nodes"]
    ops = Counter(n["op"] for n in traced)
    assert ops["BiasAdd"] == 2 and ops["AddV2"] == 1
    assert fused_counts(result["fusions_after"]) == oracle[result["model_out"]]["fused"]


def test_bias_add_merges_a_second_bias_so_that_the_activation_fuses(models, fixed, oracle, engine):
    """x ⊛ w + b1 + b2 → Relu: TensorFlow fuses the contraction with its BiasAdd and leaves the Add and the Relu out.
    The near-miss names it (not where no activation follows: nothing more would fuse), and bias-add sums the two
    biases into the BiasAdd, after which TensorFlow fuses the Relu too."""
    before = engine.inspect(spec_for_path(str(models / "second_bias")), {"env": ONEDNN})
    misses = [m for m in before["report"]["near_misses"] if m["kind"] == "second-bias"]
    assert sorted(m["chain"] for m in misses) == ["Conv2D + BiasAdd + Relu", "MatMul + BiasAdd + Relu"]
    assert oracle[str(models / "second_bias")]["fused"] == {"_FusedConv2D[BiasAdd]": 2, "_FusedMatMul[BiasAdd]": 1}
    result = fixed[("second_bias", "bias-add")]
    (applied,) = result["applied"]
    assert applied["sites"] == 3  # the conv with no activation after it too: one Add fewer
    assert "tf.nn.bias_add(x, b1 + b2)" in applied["advice"] and "instead of x + b" not in applied["advice"]
    assert not [m for m in result["near_misses_left"] if m["kind"] == "second-bias"]
    assert agrees_with_tensorflow(oracle, str(models / "second_bias"), result["model_out"]) < 1e-4
    after = fused_counts(result["fusions_after"])
    assert after == oracle[result["model_out"]]["fused"]
    assert after == {"_FusedConv2D[BiasAdd,Relu]": 1, "_FusedConv2D[BiasAdd]": 1, "_FusedMatMul[BiasAdd,Relu]": 1}


def test_squeeze_after_activation_brings_a_conv1d_activation_into_its_fused_op(models, fixed, oracle, engine):
    """Keras' Conv1D is Conv2D → Squeeze → BiasAdd → activation: TensorFlow fuses Conv2D + Squeeze + BiasAdd and the
    activation runs alone. The near-miss names it, and the fix applies the bias and the activation before the
    Squeeze, after which TensorFlow fuses [BiasAdd, Relu] and [BiasAdd, Elu]. A Tanh fuses after no Conv2D: left."""
    before = engine.inspect(spec_for_path(str(models / "conv1d")), {"env": ONEDNN})
    misses = [m for m in before["report"]["near_misses"] if m["kind"] == "activation-after-squeeze"]
    assert sorted(m["chain"] for m in misses) == ["Conv2D + BiasAdd + Elu", "Conv2D + BiasAdd + Relu"]
    assert oracle[str(models / "conv1d")]["fused"] == {"_FusedConv2D[BiasAdd]": 3}
    result = fixed[("conv1d", "squeeze-after-activation")]
    (applied,) = result["applied"]
    assert applied["sites"] == 2
    assert not [m for m in result["near_misses_left"] if m["kind"] == "activation-after-squeeze"]
    assert agrees_with_tensorflow(oracle, str(models / "conv1d"), result["model_out"]) < 1e-4
    after = fused_counts(result["fusions_after"])
    assert after == oracle[result["model_out"]]["fused"]
    assert after == {"_FusedConv2D[BiasAdd,Relu]": 1, "_FusedConv2D[BiasAdd,Elu]": 1, "_FusedConv2D[BiasAdd]": 1}


def test_a_dilated_conv1d_takes_two_fixes_and_each_says_it_resolved_the_chain_with_the_other(models, engine,
                                                                                             tmp_path):
    """Keras' Conv1D with dilation_rate 2 and a Relu: one near-miss (space-to-batch) that also needs the Relu before
    the Squeeze. Both fixes are chosen; together they fuse Conv2D + BiasAdd + Relu, which neither does alone."""
    original = str(models / "conv1d_dilated")
    before = engine.inspect(spec_for_path(original), {"env": ONEDNN})
    (miss,) = before["report"]["near_misses"]
    assert miss["kind"] == "dilated-as-space-to-batch" and miss["also"] == ["activation-after-squeeze"]
    assert "its activation too once applied before the Squeeze" in miss["fix"]
    result = engine.fix(spec_for_path(original), {"env": ONEDNN}, measure=False, out=str(tmp_path / "fixed"))
    applied = {a["fix"]: a for a in result["applied"]}
    for fix in ("dilated-conv", "squeeze-after-activation"):
        assert len(applied[fix]["chains"]) == 1 and applied[fix]["with_others"] == 1, applied[fix]
    assert "1 near-miss resolved together with the other fixes" in fix_text(result)
    truth = json.loads(_script("run", original, result["model_out"]).splitlines()[-1])
    assert truth[result["model_out"]]["fused"] == {"_FusedConv2D[BiasAdd,Relu]": 1}
    assert fused_counts(result["fusions_after"]) == truth[result["model_out"]]["fused"]
    assert agrees_with_tensorflow(truth, original, result["model_out"]) < 1e-4


def test_a_conv1d_batch_norm_is_folded_and_its_relu_joins_the_conv(models, engine, tmp_path):
    """Conv1D + BatchNormalization + ReLU: the batch norm (Mul, AddV2) follows the Conv1D's Squeeze. It is named, with
    the ReLU's fix beside it; folded, its bias follows the Squeeze, and then the Squeeze moves past the ReLU: both
    convs become _FusedConv2D [BiasAdd, Relu], checked against TensorFlow alone."""
    original = str(models / "conv1d_bn")
    before = engine.inspect(spec_for_path(original), {"env": ONEDNN})
    misses = before["report"]["near_misses"]
    assert [m["kind"] for m in misses] == ["batchnorm-as-arithmetic"] * 2
    assert all(m["also"] == ["activation-after-squeeze"] and "→ Squeeze → batch norm" in m["form"] for m in misses)
    result = engine.fix(spec_for_path(original), {"env": ONEDNN}, measure=False, out=str(tmp_path / "fixed"))
    applied = {a["fix"]: a for a in result["applied"]}
    assert applied["fold-batchnorm"]["sites"] == 2 and applied["fold-batchnorm"]["left"] == []
    assert applied["squeeze-after-activation"]["sites"] == 2
    assert result["near_misses_left"] == []
    truth = json.loads(_script("run", original, result["model_out"]).splitlines()[-1])
    assert truth[original]["fused"] == {"_FusedConv2D[BiasAdd]": 1}
    assert truth[result["model_out"]]["fused"] == {"_FusedConv2D[BiasAdd,Relu]": 2}
    assert fused_counts(result["fusions_after"]) == truth[result["model_out"]]["fused"]
    assert agrees_with_tensorflow(truth, original, result["model_out"]) < 1e-4


def test_inspect_prints_the_fix_command_with_the_model_as_given(models):
    """The command under the near-misses is one to copy: the model's path as the command line named it."""
    path = str(models / "second_bias")
    out = subprocess.run([sys.executable, "-m", "explorer", "inspect", "--model", path, "--env",
                          "TF_ENABLE_ONEDNN_OPTS=1"], cwd=Path(__file__).resolve().parents[2], capture_output=True,
                         text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    assert "second bias" in out.stdout
    command = out.stdout.split("Rewrites for these near-misses: ")[1].splitlines()[1].strip()
    assert shlex.split(command) == ["python", "-m", "explorer", "fix", "--model", path, "--device", "cpu", "--env",
                                    "TF_ENABLE_ONEDNN_OPTS=1"]


def test_bias_before_reshape_moves_a_dense_layers_bias(models, fixed, oracle):
    result = fixed[("dense3d", "bias-before-reshape")]
    (applied,) = result["applied"]
    assert applied["sites"] == 2 and len(applied["chains"]) == 2
    assert not [m for m in result["near_misses_left"] if m["kind"] == "reshape-before-bias"]
    assert agrees_with_tensorflow(oracle, str(models / "dense3d"), result["model_out"]) < 1e-4
    after = fused_counts(result["fusions_after"])
    assert after == oracle[result["model_out"]]["fused"]
    assert sum(n for op, n in after.items() if op.startswith("_FusedMatMul")) == 2


@pytest.mark.parametrize("name", ["dense_gelu4d", "dense_gelu_residual"])
def test_bias_before_reshape_brings_a_gelu_after_the_bias_too(models, fixed, oracle, name):
    """Keras 3's Dense(activation="gelu") on a 4-D tensor: moving the bias alone left the Reshape between BiasAdd
    and the GELU (+1 kernel, 1.03×); the GELU's element-wise ops move before the Reshape too, and TensorFlow fuses
    [BiasAdd, GeluExact]. A Transformer's MLP (x + Dense(gelu)(x) on a 3-D input): the GELU's ops were taken to
    run on until the residual add (which reads x too), and then nothing moved."""
    result = fixed[(name, "bias-before-reshape")]
    (applied,) = result["applied"]
    assert applied["sites"] == 1
    assert agrees_with_tensorflow(oracle, str(models / name), result["model_out"]) < 1e-4
    after = fused_counts(result["fusions_after"])
    assert after == oracle[result["model_out"]]["fused"]
    assert after.get("_FusedMatMul[BiasAdd,GeluExact]") == 1, after


def test_a_normalisation_of_the_inputs_own_moments_is_not_folded(models, fixed, oracle):
    result = fixed[("moments", "fold-batchnorm")]
    assert result["applied"] == [] and result["model_out"] is None  # nothing rewritten: no copy to check or time
    assert result["skipped"] == {"fold-batchnorm": "rewrote nothing: the model holds nothing of its form"}
    # Its captured constant (the shift) is written as a Const where a fix does rewrite the model: freeze.
    frozen = fixed[("moments", "freeze")]
    assert frozen["applied"][0]["sites"] > 0 and Path(frozen["model_out"]).is_file()
    assert agrees_with_tensorflow(oracle, str(models / "moments"), frozen["model_out"]) < 1e-5


def test_per_op_time_comes_from_the_executed_graph_and_ranks_the_near_misses(engine, models, fixed):
    from explorer.analysis import op_time

    spec, config = spec_for_path(str(models / "bn_cnn")), {"env": ONEDNN}
    result, profile = engine.inspect(spec, config), engine.profile(spec, config, calls=5)
    executed = {n["name"]: n["op"] for n in result["stages"]["executed"]["nodes"]}
    assert profile["calls"] == 5 and profile["call_ms"] > 0
    assert profile["nodes"] and all(executed[name] == entry["op"] for name, entry in profile["nodes"].items())
    convolutions = [name for name, op in executed.items() if "Conv2D" in op]
    assert convolutions and all(profile["nodes"][name]["ms"] > 0 for name in convolutions)  # every conv ran, timed
    timed = op_time.attach(result, profile)["report"]
    times = timed["op_time"]["nodes"]
    for miss in timed["near_misses"]:
        assert miss["time_ms"] == pytest.approx(sum(times.get(n, 0.0) for n in miss["nodes"]))
        assert miss["share"] == pytest.approx(miss["time_ms"] / timed["op_time"]["total_ms"])
    ranked = [m["time_ms"] for m in fixed[("bn_cnn", "fold-batchnorm")]["near_misses_ranked"]]
    assert ranked == sorted(ranked, reverse=True) and ranked[0] > 0
