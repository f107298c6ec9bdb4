"""Words the command line and the page share: what B changes from A (compare, the page's A against B and its pin),
and a stage's ops (inspect, bench and compare's proof of what ran)."""

from __future__ import annotations

from explorer.model.flags import Config
from explorer.present import compare_text
from explorer.present.text import SPELLED_OUT, ops_words


def test_a_setting_left_at_tensorflows_default_is_said_as_the_sidebar_says_it():
    a = Config.make("cpu", {}, {"remapping": "off"}).to_dict()
    b = Config.make("gpu-sim:ampere", {"TF_ENABLE_ONEDNN_OPTS": "0"}).to_dict()
    assert compare_text.config_changes(a, b) == [
        "device: cpu → gpu-sim:ampere", "TF_ENABLE_ONEDNN_OPTS: unset → 0", "remapping: off → default"]
    assert compare_text.config_changes(a, a) == []
    result = {side: {"config": config, "spec": {"preset": "matmul_bias_relu", "params": {"m": m}}}
              for side, config, m in (("a", a, 64), ("b", b, 128))}
    assert compare_text.changed(result)[-1] == "m: 64 → 128"


def test_a_networks_ops_are_counted_by_type_and_a_small_graphs_listed_in_order():
    small = ["MatMul", "BiasAdd", "Relu"]
    assert ops_words(small) == "MatMul BiasAdd Relu"
    big = ["Conv2D", "BiasAdd", "Relu"] * 20 + ["MatMul", "Softmax"]
    assert len(big) > SPELLED_OUT
    assert ops_words(big) == "62 compute ops: Conv2D ×20, BiasAdd ×20, Relu ×20, MatMul, Softmax"
    many = [f"Op{i}" for i in range(40)]
    assert ops_words(many).endswith("Op15 and 24 more types")
