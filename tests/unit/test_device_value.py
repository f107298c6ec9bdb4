"""A device is one value (kind and profile) read in one place; "leave TensorFlow's default" is one value."""

from __future__ import annotations

import pytest

from explorer.engine.matrix import parse_vary, plan
from explorer.errors import SpecError
from explorer.model.devices import DEFAULT_PROFILE, GPU_PROFILES, Device, is_simulated
from explorer.model.experiment import Experiment
from explorer.model.flags import FORMER_UNSET, UNSET, UNSET_SPELLINGS, Config
from explorer.model.stack_examples import example


@pytest.mark.parametrize("text, kind, profile", [
    ("cpu", "cpu", None), ("gpu", "gpu", None), ("gpu-sim", "gpu-sim", DEFAULT_PROFILE),
    ("gpu-sim:h100", "gpu-sim", "h100"), ("gpu-sim:volta", "gpu-sim", "volta"),
])
def test_a_device_text_is_parsed_once_into_kind_and_profile(text, kind, profile):
    device = Device.parse(text)
    assert (device.kind, device.profile) == (kind, profile)
    assert Device.of(str(device)) == device  # the canonical text reads back as the same value
    assert Config.make(text).device == str(device)
    assert is_simulated(str(device)) == device.simulated == (kind == "gpu-sim")


@pytest.mark.parametrize("text", ["tpu", "cpu:h100", "gpu:a100", "gpu-sim:nope", "", 3, None])
def test_a_wrong_device_is_refused_in_one_line(text):
    with pytest.raises(SpecError) as caught:
        Device.parse(text)
    assert caught.value.field == "device" and "\n" not in str(caught.value)


def test_every_profile_is_a_device():
    for name in GPU_PROFILES:
        assert Device.parse(f"gpu-sim:{name}").profile == name


def test_one_value_leaves_the_default_and_the_old_spelling_still_reads():
    assert UNSET in UNSET_SPELLINGS
    # "default" is how the page wrote a switch left alone before: a Config still takes it, as it did
    assert Config.make("cpu", None, {"remapping": FORMER_UNSET}).grappler == ()
    assert Config.make("cpu", None, {"remapping": "off"}).with_switch("remapping", FORMER_UNSET).grappler == ()
    cells = plan(["matmul_bias_relu"], [parse_vary("remapping=off,default")])
    assert [c.config.grappler for c in cells] == [(("remapping", "off"),), ()]
    cells = plan(["matmul_bias_relu"], [parse_vary(f"TF_ENABLE_ONEDNN_OPTS=0,{UNSET}")])
    assert [c.config.env for c in cells] == [(("TF_ENABLE_ONEDNN_OPTS", "0"),), ()]


def test_a_link_leaves_a_flag_unset_with_the_one_value():
    base = Experiment(config=Config.make("cpu", {"TF_ENABLE_ONEDNN_OPTS": "1"}))
    query = Experiment().to_query(base)
    assert query["TF_ENABLE_ONEDNN_OPTS"] == UNSET
    assert Experiment.from_query(query, base) == (Experiment(), [])


def test_a_fix_setting_changes_one_part_of_the_experiment():
    exp = Experiment(model={"preset": "matmul_bias_relu", "params": {"m": 64}})
    assert exp.with_setting("env", "TF_ENABLE_ONEDNN_OPTS", "0").config.env == (("TF_ENABLE_ONEDNN_OPTS", "0"),)
    off = exp.with_setting("grappler", "remapping", "off")
    assert off.config.grappler == (("remapping", "off"),) and off.with_setting("grappler", "remapping", None) == exp
    assert exp.with_setting("device", "", "gpu-sim:h100").config.device == "gpu-sim:h100"
    bigger = exp.with_setting("param", "m", 128)
    assert bigger.model["params"]["m"] == 128 and bigger.model["preset"] == "matmul_bias_relu"
    assert bigger.replace(model=exp.model) == exp  # nothing else changed
    chain = Experiment(model={"chain": {"contraction": "MatMul", "bias": "BiasAdd", "activation": "Relu"}})
    assert chain.with_setting("chain", "activation", "Tanh").model["chain"]["activation"] == "Tanh"
    stack = Experiment(model={"stack": example("layout_fp32")})
    for exp_, kind, name, value in ((stack, "chain", "activation", "Tanh"), (exp, "size", "m", 1),
                                    (exp, "param", "m", -3)):
        with pytest.raises(SpecError):  # not a setting of this model, or not a value it takes
            exp_.with_setting(kind, name, value)
