"""Model specs and configurations are checked, with the field named, before TensorFlow runs."""

import json

import pytest

from explorer.errors import SpecError
from explorer.model.catalog import PRESETS
from explorer.model.chain import Chain
from explorer.model.flags import Config
from explorer.model.spec import MAX_TENSOR_BYTES, resolve

REQUIRED_PRESETS = {
    "matmul_bias_gelu_approx", "matmul_bias_gelu_exact", "matmul_bias_relu", "conv2d_bias_relu",
    "conv2d_batchnorm_relu", "conv2d_squeeze_bias", "batchnorm_add_relu",
}


def test_catalogue_has_the_issue_presets_each_with_an_explanation():
    assert REQUIRED_PRESETS <= set(PRESETS)
    for preset in PRESETS.values():
        assert len(preset.explanation) > 80 and preset.where
        spec = resolve({"preset": preset.id})
        assert spec.preset == preset.id
        json.dumps(preset.to_dict())


def test_preset_params_override_defaults_and_round_trip():
    spec = resolve({"preset": "matmul_bias_relu", "params": {"m": 128, "dtype": "float16"}})
    assert spec.p["m"] == 128 and spec.p["dtype"] == "float16" and spec.p["k"] == PRESETS["matmul_bias_relu"].defaults["k"]
    again = resolve(json.loads(spec.to_json()))
    assert again == spec


@pytest.mark.parametrize("data,field", [
    ({"preset": "nope"}, "preset"),
    ({"preset": "matmul_bias_relu", "params": {"m": -4}}, "params.m"),
    ({"preset": "matmul_bias_relu", "params": {"m": 0}}, "params.m"),
    ({"preset": "matmul_bias_relu", "params": {"m": "lots"}}, "params.m"),
    ({"preset": "matmul_bias_relu", "params": {"m": 2.5}}, "params.m"),
    ({"preset": "matmul_bias_relu", "params": {"m": True}}, "params.m"),
    ({"preset": "matmul_bias_relu", "params": {"dtype": "int7"}}, "params.dtype"),
    ({"preset": "matmul_bias_relu", "params": {"data_format": "NHWC"}}, "params.data_format"),
    ({"preset": "conv2d_bias_relu", "params": {"data_format": "NCDHW"}}, "params.data_format"),
    ({"preset": "matmul_bias_relu", "params": {"bogus": 1}}, "params.bogus"),
    ({"preset": "matmul_bias_relu", "params": {"m": 1 << 20, "k": 1 << 10}}, "sizes"),
    ({"chain": {"contraction": "MatMul", "norm": "FusedBatchNorm"}}, "chain.norm"),
    ({"chain": {"contraction": "Conv4D"}}, "chain.contraction"),
    ({"chain": {"kind": "magic"}}, "chain.kind"),
    ({"chain": {"contraction": "MatMul", "pad": True}}, "chain.pad"),
    ({"chain": {"contraction": "none", "bias": "BiasAdd", "norm": "FusedBatchNorm"}}, "chain.bias"),
    ({"chain": {"contraction": "MatMul", "squeeze": True}}, "chain.squeeze"),
    ({"chain": {"contraction": "MatMul", "squeeze": "yes"}}, "chain.squeeze"),
    ({"preset": "conv2d_squeeze_bias", "params": {"width": 3}}, "params.width"),
    ({"preset": "conv2d_batchnorm_relu", "params": {"return_intermediate": "bias"}}, "params.return_intermediate"),
    ({"chain": {}, "extra": 1}, "spec"),
    ("matmul", "spec"),
    ({}, "spec"),
    ({"preset": "matmul_bias_relu", "params": []}, "params"),
])
def test_bad_specs_name_the_field(data, field):
    with pytest.raises(SpecError) as info:
        resolve(data)
    assert info.value.field == field
    assert str(info.value).startswith(field)


def test_size_limit_names_the_tensor_and_the_limit():
    with pytest.raises(SpecError, match="^sizes: tensor x would be 1048576 × 1024 float32 = 4 GiB; the limit is 512 MiB"):
        resolve({"preset": "matmul_bias_relu", "params": {"m": 1 << 20, "k": 1 << 10}})
    with pytest.raises(SpecError, match=f"{MAX_TENSOR_BYTES >> 20} MiB"):
        resolve({"preset": "conv2d_bias_relu", "params": {"batch": 4096, "height": 512, "width": 512}})


def test_custom_chain_describes_itself_and_lists_its_params():
    chain = Chain.from_dict({"contraction": "DepthwiseConv2dNative", "bias": "BiasAdd", "activation": "Relu6"})
    assert chain.describe() == "DepthwiseConv2dNative + BiasAdd + Relu6"
    assert "multiplier" in chain.param_names() and "out_channels" not in chain.param_names()
    spec = resolve({"chain": chain.to_dict(), "params": {"in_channels": 8, "multiplier": 2}})
    assert spec.tensor_shapes()["out"] == (8, 56, 56, 16)


def test_nchw_shapes_put_channels_second():
    spec = resolve({"preset": "conv2d_bias_relu", "params": {"data_format": "NCHW", "batch": 2, "height": 5,
                                                             "width": 7, "in_channels": 3, "out_channels": 4}})
    assert spec.tensor_shapes()["x"] == (2, 3, 5, 7) and spec.tensor_shapes()["out"] == (2, 4, 5, 7)


@pytest.mark.parametrize("args,field", [
    (("tpu",), "device"),
    (("cpu", {"TF_NOPE": "1"}), "env.TF_NOPE"),
    (("cpu", {"TF_ENABLE_ONEDNN_OPTS": "2"}), "env.TF_ENABLE_ONEDNN_OPTS"),
    (("cpu", {}, {"remapper": "off"}), "grappler.remapper"),
    (("cpu", {}, {"remapping": "maybe"}), "grappler.remapping"),
])
def test_bad_configurations_name_the_field(args, field):
    with pytest.raises(SpecError) as info:
        Config.make(*args)
    assert info.value.field == field


def test_config_is_canonical_and_reproducible():
    a = Config.make("cpu", {"TF_USE_CUBLASLT": "1", "TF_ENABLE_ONEDNN_OPTS": "0"}, {"remapping": False})
    b = Config.from_dict({"device": "cpu", "grappler": {"remapping": "off"},
                          "env": {"TF_ENABLE_ONEDNN_OPTS": "0", "TF_USE_CUBLASLT": "1"}})
    assert a == b and hash(a) == hash(b)
    assert a.shell_env() == "TF_ENABLE_ONEDNN_OPTS=0 TF_USE_CUBLASLT=1"
    assert a.cli_args() == ["--device", "cpu", "--env", "TF_ENABLE_ONEDNN_OPTS=0", "--env", "TF_USE_CUBLASLT=1",
                            "--grappler", "remapping=off"]
    assert a.process_key() != Config().process_key()
    assert a.with_switch("remapping", None).process_key() == a.process_key()
