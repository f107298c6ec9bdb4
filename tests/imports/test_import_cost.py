"""A frozen model's weights stay out of what the worker returns, and its passes are still listed.

MobileNetV2 frozen (conftest's, 64×64) holds its weights as constants: the stages' pbtxt keeps each
constant's dtype and shape with a note instead of its bytes, and Grappler's per-pass dumps (the
weights as text after every pass) are not written; a model with small constants keeps them.
"""

from __future__ import annotations

import pytest

from explorer.engine.uploads import spec_for_path
from explorer.model.flags import Config

pytestmark = [pytest.mark.tf, pytest.mark.slow]
CONFIG = Config.make("cpu", {"TF_ENABLE_ONEDNN_OPTS": "0"})  # the worker test_import_models warms


def test_a_frozen_models_constants_are_elided_and_its_passes_listed(engine, models):
    path = models / "mobilenetv2.pb"
    result = engine.inspect(spec_for_path(str(path)), CONFIG)
    traced = result["pbtxt"]["traced"]
    assert 'key: "_explorer_elided"' in traced and "value elided, " in traced
    assert sum(result["elided_bytes"].values()) > path.stat().st_size  # the weights, in each stage
    assert len(traced) < path.stat().st_size  # the text is smaller than the binary weights it leaves out
    grappler = result["grappler"]
    assert "constants hold" in grappler["pass_graphs_skipped"] and grappler["pass_graphs"] == {}
    assert any(it["item"].startswith("__inference_model_") for it in grappler["items"])  # the pass list stays
    assert result["report"]["totals"]["fused_kernels"] == len(result["fusions"]) > 0

    small = engine.inspect(spec_for_path(str(models / "small.pb")), CONFIG)
    assert small["grappler"]["pass_graphs_skipped"] is None and small["grappler"]["pass_graphs"]
