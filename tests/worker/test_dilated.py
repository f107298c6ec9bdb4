"""A dilated convolution (Keras's dilation_rate > 1) is named as a near-miss, and what the near-miss advises is
what TensorFlow fuses: checked against TensorFlow alone (``dilated_models.py``), under the machine's default
oneDNN setting and the other one."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from explorer.analysis import fix_plan
from explorer.engine.uploads import spec_for_path
from tests.tf_script import run_tf_script

SCRIPT = Path(__file__).resolve().parent / "dilated_models.py"
FIX_MODELS = Path(__file__).resolve().parent / "fix_models.py"  # its "run": a GraphDef called by TensorFlow alone

pytestmark = pytest.mark.tf


@pytest.mark.parametrize("onednn", ["0", "1"])
def test_a_dilated_convolution_is_named_and_the_advice_fuses(engine, tmp_path, onednn):
    env = {"TF_ENABLE_ONEDNN_OPTS": onednn}
    truth = json.loads(run_tf_script(SCRIPT, tmp_path, env=env).splitlines()[-1])
    result = engine.inspect(spec_for_path(str(tmp_path / "dilated")), {"env": env})
    misses = {("conv2d" if "atrous" in m["nodes"][0] else "conv1d"): m for m in result["report"]["near_misses"]
              if m["kind"] == "dilated-as-space-to-batch" and ("atrous" in m["nodes"][0] or "wavenet" in m["nodes"][0])}
    assert len(result["report"]["near_misses"]) == 4 and all(m["kind"] == "dilated-as-space-to-batch" for m in result["report"]["near_misses"])
    assert sum("same_padded" in m["nodes"][0] for m in result["report"]["near_misses"]) == 1
    (atrous,) = [m for m in result["report"]["near_misses"] if "aspp" in m["nodes"][0]]
    assert atrous["chain"] == "Conv2D + batch norm + Relu" and atrous["also"] == ["batchnorm-as-arithmetic"]
    assert "wavenet" in misses["conv1d"]["nodes"][0]
    assert misses["conv2d"]["chain"] == "Conv2D + BiasAdd + Relu" and "tf.nn.conv2d(" in misses["conv2d"]["fix"]
    assert "Squeeze → BatchToSpaceND" in misses["conv1d"]["form"] and "tf.nn.conv1d(" in misses["conv1d"]["fix"]
    optimized = {n["name"]: n["op"] for n in result["stages"]["optimized"]["nodes"]}
    for miss in misses.values():
        assert [optimized[n] for n in miss["nodes"][:1]] == ["Conv2D"] and miss["nodes"][-1] in optimized
    for layer in ("conv2d", "conv1d"):
        # TensorFlow alone: Keras's form leaves the Conv2D unfused between space-to-batch ops; the advised one fuses
        # it with the bias (and the ReLU), with the same numbers
        assert {"SpaceToBatchND", "Conv2D", "BatchToSpaceND"} <= set(truth[layer]["keras"])
        assert "_FusedConv2D" in truth[layer]["advised"] and "Conv2D" not in truth[layer]["advised"]
        assert truth[layer]["max_diff"] < 1e-5


def test_dilated_conv_writes_one_conv2d_with_dilations_and_keeps_the_result(engine, tmp_path):
    """The fix: each SpaceToBatchND → Conv2D → BatchToSpaceND becomes the Conv2D with dilations (a "same" one with
    EXPLICIT padding), its bias and ReLU then fuse; the atrous one's batch norm is folded into a bias too (the fixes
    chosen from the near-misses). TensorFlow alone runs both models on the same inputs."""
    env = {"TF_ENABLE_ONEDNN_OPTS": "1"}
    run_tf_script(SCRIPT, tmp_path, env=env)
    original = str(tmp_path / "dilated")
    inspected = engine.inspect(spec_for_path(original), {"env": env})
    assert fix_plan.choose(inspected)[0] == ["dilated-conv", "fold-batchnorm", "freeze"]
    result = engine.fix(spec_for_path(original), {"env": env}, apply=["dilated-conv", "fold-batchnorm"],
                        measure=False, out=str(tmp_path / "fixed"))
    dilated, folded = result["applied"]
    assert dilated["fix"] == "dilated-conv" and dilated["sites"] == 4 and dilated["left"] == []
    assert folded["fix"] == "fold-batchnorm" and folded["sites"] == 1
    assert not [m for m in result["near_misses_left"] if m["kind"] == "dilated-as-space-to-batch"]
    assert result["within_tolerance"]
    truth = json.loads(run_tf_script(SCRIPT, "run", original, result["model_out"], env=env).splitlines()[-1])
    before, after = truth[original], truth[result["model_out"]]
    assert "SpaceToBatchND" in before["ops"] and "SpaceToBatchND" not in after["ops"]
    assert "BatchToSpaceND" not in after["ops"] and "_FusedConv2D" in after["fused"]
    assert {"_FusedConv2D [BiasAdd, Relu]": 2, "_FusedConv2D [BiasAdd]": 2} == {
        row["fused"]: row["count"] for row in result["fusions_after"]}
    for name, values in before["outputs"].items():
        assert np.max(np.abs(np.asarray(values) - np.asarray(after["outputs"][name]))) < 1e-4, name


def test_dilated_conv_takes_the_padding_the_crops_leave_and_refuses_crops_beyond_it(engine, tmp_path):
    """Space-to-batch written by hand (a frozen GraphDef): paddings [1, 3] cropped by [0, 2] are a Conv2D with
    dilations 2 and EXPLICIT padding [1, 1], checked against TensorFlow alone; crops beyond the paddings are no
    padding at all, and the fix says so instead of rewriting."""
    env = {"TF_ENABLE_ONEDNN_OPTS": "1"}
    run_tf_script(SCRIPT, "graphs", tmp_path, env=env)
    original = str(tmp_path / "padded.pb")
    padded = engine.fix(spec_for_path(original), {"env": env}, apply=["dilated-conv"], measure=False,
                        out=str(tmp_path / "padded_fixed.pb"))
    (applied,) = padded["applied"]
    assert applied["sites"] == 1 and applied["left"] == []
    truth = json.loads(run_tf_script(FIX_MODELS, "run", original, padded["model_out"], env=env).splitlines()[-1])
    assert truth[padded["model_out"]]["fused"] == {"_FusedConv2D[BiasAdd,Relu]": 1}
    assert truth[original]["fused"] == {}
    (before,), (after,) = truth[original]["outputs"], truth[padded["model_out"]]["outputs"]
    assert np.max(np.abs(np.asarray(before) - np.asarray(after))) < 1e-4

    cropped = engine.fix(spec_for_path(str(tmp_path / "cropped.pb")), {"env": env}, apply=["dilated-conv"],
                         measure=False, out=str(tmp_path / "cropped_fixed.pb"))
    assert cropped["applied"] == [] and cropped["model_out"] is None
    assert "take off more than the paddings" in cropped["skipped"]["dilated-conv"]
