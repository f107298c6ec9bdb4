"""No false alarm: every preset and every layer-stack example computes the same with and without the remapper,
oneDNN on and off, within the tolerance the agreement check gives its dtype and ops (real networks:
tests/realmodels/test_real_models_agree.py)."""

from __future__ import annotations

import pytest

from explorer.model import stack_examples
from explorer.model.catalog import PRESETS
from explorer.model.flags import Config

pytestmark = pytest.mark.tf

# Which oneDNN each run means: forced on and off (its default depends on the CPU).
ONEDNN = {"on": Config.make("cpu", {"TF_ENABLE_ONEDNN_OPTS": "1"}), "off": Config.make("cpu", {"TF_ENABLE_ONEDNN_OPTS": "0"})}


def assert_agrees(result):
    check = result["agreement"]
    assert check["status"] == "agrees", check["summary"]
    assert check["headline"] is None and check["comparison"]["agree"]
    assert check["inputs"]["tensors"] and check["inputs"]["how"]
    # the check compared something real: every output, with its tolerance and where it differs most
    assert check["comparison"]["count"]["fused"] == check["comparison"]["count"]["reference"] >= 1
    for output in check["comparison"]["outputs"]:
        assert output["elements"] == 0 or output["max_abs_at"] is not None or output["tolerance"]["rtol"] == 0


@pytest.mark.parametrize("onednn", ["on", "off"])
@pytest.mark.parametrize("preset", list(PRESETS))
def test_every_preset_agrees(engine, preset, onednn):
    result = engine.inspect({"preset": preset}, ONEDNN[onednn])
    if result["fingerprint"]["onednn"] != (onednn == "on"):
        pytest.fail(f"TF_ENABLE_ONEDNN_OPTS did not set oneDNN {onednn}")
    assert_agrees(result)


@pytest.mark.parametrize("onednn", ["on", "off"])
@pytest.mark.parametrize("name", stack_examples.NAMES)
def test_every_layer_stack_example_agrees(engine, name, onednn):
    assert_agrees(engine.inspect({"stack": stack_examples.example(name)}, ONEDNN[onednn]))
