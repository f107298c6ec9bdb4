"""The explorer against TensorFlow on real networks: counts as served, near-misses found, fixes verified.

Each network is exported once per session (``conftest.networks``: keras.applications with weights=None
at 32×32, a Transformer encoder block, an old-style Conv2D/Dense stack, seeded non-zero weights and
batch-norm statistics) and run directly by TensorFlow (``conftest.direct``: the serving signature with
run metadata, batch unknown, no explorer code). The explorer's engine inspects the same SavedModel.
"""

from __future__ import annotations

from collections import Counter

import pytest

from tests.realmodels.counting import counts

pytestmark = pytest.mark.tf

NETWORKS = ("mobilenetv3small", "efficientnetb0", "resnet50", "convnexttiny", "transformer", "oldstyle")


def kinds(result, kind: str) -> list[dict]:
    return [m for m in result["report"]["near_misses"] if m["kind"] == kind]


@pytest.mark.parametrize("onednn", ["0", "1"])
@pytest.mark.parametrize("name", NETWORKS)
def test_counts_agree_with_tensorflow_serving_the_signature(inspected, direct, name, onednn):
    result = inspected(name, onednn)
    truth = direct[onednn][name]
    assert counts(result) == (truth["fused"], truth["unfused"])
    assert result["report"]["totals"]["contractions_unfused"] == truth["unfused"]  # Einsum counted too
    # Functions XLA must compile (ConvNeXt's grouped 7×7 convolutions) are clusters, their ops counted.
    clusters = [c for c in result["xla_clusters"] if c.get("kind") == "must-compile"]
    assert len(clusters) == truth["must_compile"]
    if clusters:
        assert result["report"]["totals"]["xla_must_compile"] == {"Conv2D": truth["must_compile"]}
        assert any("XLA must compile" in w for w in result["warnings"])


def test_fixing_the_batch_says_what_it_changed(inspected, direct):
    served = inspected("mobilenetv3small", "1")
    assert "dims" not in served
    fixed = inspected("mobilenetv3small", "1", fixed_dims=True)
    assert fixed["dims"]["changed"] is True
    assert fixed["dims"]["as_served"] == {k.replace("[", " [").replace(",", ", "): v
                                          for k, v in direct["1"]["mobilenetv3small"]["fused"].items()}
    assert fixed["dims"]["fixed"]["_FusedConv2D [BiasAdd]"] == fixed["dims"]["as_served"]["_FusedConv2D [BiasAdd]"] - 1
    assert any(d["node"].endswith("logits_1/BiasAdd") for d in fixed["dims"]["nodes"])
    assert any("Fixing the unknown dimensions" in w for w in fixed["warnings"])


@pytest.mark.parametrize("onednn", ["0", "1"])
def test_batch_norm_as_arithmetic_after_a_fused_convolution_is_named(inspected, direct, onednn):
    result = inspected("resnet50", onednn)
    found = [m for m in kinds(result, "batchnorm-as-arithmetic") if m["after_fused"]]
    assert len(found) == direct[onednn]["resnet50"]["after_fused"]["Mul"] == 53
    assert all(m["needs"] and m["fix"] for m in found)


def test_transformer_near_misses_are_named(inspected, direct):
    result = inspected("transformer", "1")
    truth = direct["1"]["transformer"]
    assert truth["layer_norm_ops"] == 0
    assert len(kinds(result, "layernorm-as-arithmetic")) == truth["squared_difference"] == 2
    assert len(kinds(result, "einsumdense-batchmatmul")) == truth["unfused"]["BatchMatMulV2"]
    assert len(kinds(result, "einsum")) == truth["einsum"] == 2
    assert len(kinds(result, "reshape-before-bias")) == truth["unfused"]["MatMul"]
    for miss in kinds(result, "layernorm-as-arithmetic"):
        assert "_MklLayerNorm" in miss["needs"] and "rank" in miss["needs"]


@pytest.mark.parametrize("onednn", ["0", "1"])
@pytest.mark.parametrize("name", ["efficientnetb0", "oldstyle", "transformer"])
def test_every_offered_fix_is_verified_by_running_it(inspected, direct, name, onednn):
    result = inspected(name, onednn)
    for miss in result["report"]["near_misses"]:
        assert "verified" in miss
        if not miss["changes"]:
            continue
        assert miss["verified"] is True, miss
        (setting,), = miss["changes"]  # the one setting the engine ran
        assert setting["kind"] == "env" and setting["name"] == "TF_ENABLE_ONEDNN_OPTS"
        op, _, fused = miss["fused_with_fix"].partition(" [")
        key = f"{op}[{fused.rstrip(']').replace(', ', ',')}]" if fused else op
        assert direct[setting["value"]][name]["fused"].get(key), (key, direct[setting["value"]][name]["fused"])


def test_a_fix_that_does_not_fix_is_not_offered(inspected, direct):
    result = inspected("efficientnetb0", "0", checked=True)
    sigmoid = [m for m in kinds(result, "activation-left-out") if m["chain"].endswith("+ Sigmoid")]
    assert len(sigmoid) == direct["0"]["efficientnetb0"]["after_fused"]["Sigmoid"] == 16
    for miss in sigmoid:
        assert miss["changes"] == [] and miss["verified"] is False
        assert "no setting fuses it here" in miss["fix"]
    old = inspected("oldstyle", "0", checked=True)
    dense = [m for m in kinds(old, "activation-left-out") if m["chain"].endswith("+ Sigmoid")]
    assert len(dense) == 1 and dense[0]["verified"] is True and dense[0]["changes"]
    tanh = [m for m in kinds(old, "activation-left-out") if m["chain"].endswith("+ Tanh")]
    assert len(tanh) == 1 and tanh[0]["changes"] == [] and tanh[0]["verified"] is False


def test_fusions_absorb_only_what_the_rewrite_removed(inspected):
    for name in ("convnexttiny", "efficientnetb0"):
        result = inspected(name, "1")
        absorbed = Counter(op for f in result["fusions"] for op in f["absorbed_ops"])
        assert not absorbed.keys() & {"AddV2", "AddN", "Identity", "IdentityN"}, (name, absorbed)


def test_onednn_pad_and_conv_is_a_fusion_not_a_rename(inspected):
    for name, op in (("resnet50", "_MklNativePadWithFusedConv2D"), ("efficientnetb0", "_MklNativePadWithConv2D")):
        result = inspected(name, "1")
        fusions = [f for f in result["fusions_by_pair"]["optimized->executed"] if f["op"] == op]
        assert len(fusions) == 1 and "Pad" in fusions[0]["absorbed_ops"], name
        assert not [r for r in result["renames_by_pair"]["optimized->executed"] if r[2] == op]
