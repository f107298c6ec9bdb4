"""What B changes from A, in words: one wording for the command line's compare, the page's A against B and its pin."""

from __future__ import annotations

from explorer.model.flags import Config
from explorer.present import compare_text


def test_a_setting_left_at_tensorflows_default_is_said_as_the_sidebar_says_it():
    a = Config.make("cpu", {}, {"remapping": "off"}).to_dict()
    b = Config.make("gpu-sim:ampere", {"TF_ENABLE_ONEDNN_OPTS": "0"}).to_dict()
    assert compare_text.config_changes(a, b) == [
        "device: cpu → gpu-sim:ampere", "TF_ENABLE_ONEDNN_OPTS: unset → 0", "remapping: off → default"]
    assert compare_text.config_changes(a, a) == []
    result = {side: {"config": config, "spec": {"preset": "matmul_bias_relu", "params": {"m": m}}}
              for side, config, m in (("a", a, 64), ("b", b, 128))}
    assert compare_text.changed(result)[-1] == "m: 64 → 128"
