"""Layer stacks as data: every way a stack can be wrong is refused before TensorFlow, naming layer and field."""

from __future__ import annotations

import copy
import json

import pytest

from explorer.engine.cache import ResultCache
from explorer.errors import SpecError
from explorer.model import stack_examples
from explorer.model.flags import Config
from explorer.model.layers import LAYER_TYPES, field_help
from explorer.model.limits import MAX_TENSOR_BYTES
from explorer.model.spec import resolve
from explorer.model.stack import (
    MAX_LAYERS,
    StackSpec,
    StackSpecError,
    parse,
)
from explorer.present.command import command_line


def stack(*layers, shape=(1, 8, 8, 4), **top):
    return {"input": {"shape": list(shape), "dtype": "float32"}, "layers": list(layers), **top}


CONV = {"type": "Conv2D", "name": "conv", "filters": 4}


# (what is wrong, the stack, the exact start of the message: where + field)
BAD = [
    ("not JSON", "{nope", "stack: not valid JSON"),
    ("not an object", [1, 2], "stack: expected a JSON object"),
    ("unknown top field", stack(CONV, extra=1), "stack: extra: unknown field"),
    ("bad name", stack(CONV, name=""), "stack: name:"),
    ("name with a slash", stack(CONV, name="my/model"), "stack: name: expected letters, digits, _ . -"),
    ("bad seed", stack(CONV, seed=-1), "stack: seed: expected a whole number"),
    ("no input", {"layers": [CONV]}, "input: expected"),
    ("unknown input field", {"input": {"shape": [1, 4], "size": 3}, "layers": [CONV]}, "input: size: unknown field"),
    ("rank-1 input", stack(CONV, shape=(4,)), "input: shape: expected a list of 2..5"),
    ("zero dimension", stack(CONV, shape=(1, 0, 8, 4)), "input: shape[1]: expected a whole number"),
    ("bad dtype", {"input": {"shape": [1, 4], "dtype": "int8"}, "layers": [CONV]}, "input: dtype: expected one of"),
    ("huge input", stack(CONV, shape=(1024, 1024, 1024, 4)), "input: shape: tensor"),
    ("no layers", stack(), "stack: layers: expected a non-empty list"),
    ("layer not an object", stack("Conv2D"), "layers[0]: expected a layer object"),
    ("bad layer name", stack(dict(CONV, name="a b")), "layers[0]: name: expected letters"),
    ("reserved name", stack(dict(CONV, name="prev")), "layers[0]: name: 'prev' is reserved"),
    ("duplicate name", stack(CONV, CONV), "layers[1]: name: 'conv' is already used"),
    ("unknown type", stack({"type": "Conv9D"}), "layers[0]: type: expected one of"),
    ("unknown field", stack(dict(CONV, kernel=3)), "layers[0] (conv): kernel: unknown field"),
    ("negative filters", stack(CONV, dict(CONV, name="conv2", filters=-2)),
     "layers[1] (conv2): filters: expected a whole number 1..4096, got -2"),
    ("fractional units", stack({"type": "Dense", "units": 2.5}, shape=(2, 4)), "layers[0]: units: expected a whole"),
    ("bool as number", stack(dict(CONV, filters=True)), "layers[0] (conv): filters: expected a whole"),
    ("missing required", stack({"type": "Dense"}, shape=(2, 4)), "layers[0]: units: required"),
    ("bad activation", stack(dict(CONV, activation="gelu")), "layers[0] (conv): activation: expected one of"),
    ("bad bool", stack(dict(CONV, use_bias="yes")), "layers[0] (conv): use_bias: expected true or false"),
    ("bad padding", stack(dict(CONV, padding="full")), "layers[0] (conv): padding: expected one of same, valid"),
    ("kernel list length", stack(dict(CONV, kernel_size=[3, 3, 3])), "layers[0] (conv): kernel_size: expected a whole number or a list of 2"),
    ("bad epsilon", stack({"type": "BatchNormalization", "epsilon": 0}), "layers[0]: epsilon: expected a number"),
    ("activation required", stack({"type": "Activation"}), "layers[0]: activation: required"),
    ("wrong rank", stack(CONV, shape=(2, 4)), "layers[0] (conv): type: Conv2D needs a 4-D input"),
    ("Conv3D rank", stack({"type": "Conv3D", "filters": 2}), "layers[0]: type: Conv3D needs a 5-D input"),
    ("Conv1D rank", stack({"type": "Conv1D", "filters": 2}), "layers[0]: type: Conv1D needs a 3-D input"),
    ("window too big", stack(dict(CONV, kernel_size=9, padding="valid")), "layers[0] (conv): kernel_size: window"),
    ("pool too big", stack({"type": "MaxPooling2D", "pool_size": 9, "padding": "valid"}), "layers[0]: pool_size: window"),
    ("padding too big", stack({"type": "ZeroPadding2D", "padding": 17}), "layers[0]: padding: expected a whole number 0..16"),
    ("padding per dim", stack({"type": "ZeroPadding3D", "padding": [1, 1]}, shape=(1, 4, 4, 4, 2)),
     "layers[0]: padding: expected a whole number or a list of 3"),
    ("ZeroPadding2D rank", stack({"type": "ZeroPadding2D"}, shape=(2, 4)), "layers[0]: type: ZeroPadding2D needs a 4-D input"),
    ("unknown input name", stack(CONV, {"type": "Add", "inputs": ["conv", "nope"]}), "layers[1]: inputs: no earlier layer named 'nope'"),
    ("one input", stack(CONV, {"type": "Add", "inputs": ["conv"]}), "layers[1]: inputs: expected a list of 2..2"),
    ("later layer", stack({"type": "Add", "inputs": ["input", "conv"]}, CONV), "layers[0]: inputs: no earlier layer named 'conv'"),
    ("shapes differ", stack(dict(CONV, filters=8), {"type": "Add", "inputs": ["input", "conv"]}),
     "layers[1]: inputs: the inputs' shapes differ"),
    ("AddN inputs required", stack({"type": "AddN"}), "layers[0]: inputs: required"),
    ("power range", stack({"type": "Power", "exponent": 100}), "layers[0]: exponent: expected a number -16..16"),
    ("reshape count", stack({"type": "Reshape", "target_shape": [3, -1]}), "layers[0]: target_shape: [3, -1] does not divide"),
    ("reshape size", stack({"type": "Reshape", "target_shape": [5, 5]}), "layers[0]: target_shape: [5, 5] holds 25"),
    ("two -1", stack({"type": "Reshape", "target_shape": [-1, -1]}), "layers[0]: target_shape: at most one -1"),
    ("huge output", stack({"type": "Dense", "units": 65536}, shape=(4096, 1024)), "layers[0]: output: tensor"),
    ("huge weights", stack({"type": "Dense", "units": 65536}, shape=(1, 4096)), "layers[0]: kernel: the weights"),
    ("block repeat", stack({"type": "Block", "repeat": 0, "layers": [CONV]}), "layers[0]: repeat: expected a whole number 1..64"),
    ("block empty", stack({"type": "Block", "layers": []}), "layers[0]: layers: expected a non-empty list"),
    ("block field", stack({"type": "Block", "layers": [CONV], "filters": 2}), "layers[0]: filters: unknown field"),
    ("nested layer", stack({"type": "Block", "name": "b", "layers": [CONV, dict(CONV, name="c2", strides=0)]}),
     "layers[0] (b).layers[1] (c2): strides: expected a whole number 1..8, got 0"),
    ("too many layers", stack({"type": "Block", "repeat": 64, "layers": [{"type": "Activation", "activation": "relu"}] * 5}),
     f"layers[0].layers[1]: more than {MAX_LAYERS} layers"),
]


@pytest.mark.parametrize("what,data,start", BAD, ids=[b[0] for b in BAD])
def test_every_mistake_is_named_by_layer_and_field(what, data, start):
    with pytest.raises(StackSpecError) as info:
        parse(json.dumps(data) if not isinstance(data, str) else data)
    assert str(info.value).startswith(start), str(info.value)
    assert "\n" not in str(info.value)
    # Through the engine's own entry point it is the SpecError every caller already handles.
    if isinstance(data, dict):
        with pytest.raises(SpecError) as again:
            resolve({"stack": data})
        assert str(again.value) == str(info.value)


def test_the_model_size_limit_counts_every_tensor():
    big = [16, 1024 * 1024]  # 16 Mi floats = 64 MiB a tensor: under the per-tensor limit
    layers = [{"type": "Activation", "activation": "relu"}] * 40
    with pytest.raises(StackSpecError, match=r"^stack: layers: activations and weights add up to"):
        parse(stack(*layers, shape=big))
    assert 64 << 20 < MAX_TENSOR_BYTES


def test_resolve_carries_a_stack_like_any_spec():
    data = stack_examples.example("resnet_basic_block")
    spec = resolve({"stack": data})
    assert isinstance(spec, StackSpec) and spec.preset is None
    assert spec.label() == "layer stack resnet_basic_block"
    assert resolve(spec.to_dict()) == spec and resolve(spec) is spec
    assert json.loads(spec.to_json()) == {"stack": data}
    assert spec.p == {"dtype": "float32"}
    with pytest.raises(SpecError, match="no size parameters"):
        spec.with_params(batch=2)
    with pytest.raises(SpecError, match="only 'stack'"):
        resolve({"stack": data, "params": {}})
    # Cache keys: equal stacks share one, any edit makes another.
    edited = copy.deepcopy(data)
    edited["layers"][0]["layers"][0]["filters"] = 8
    config = Config()
    assert ResultCache.key("inspect", spec, config) == ResultCache.key("inspect", resolve({"stack": copy.deepcopy(data)}), config)
    assert ResultCache.key("inspect", spec, config) != ResultCache.key("inspect", resolve({"stack": edited}), config)
    assert command_line(spec.to_dict(), Config.make("cpu", {"TF_ENABLE_ONEDNN_OPTS": "1"})) == \
        "python -m explorer inspect --spec resnet_basic_block.json --device cpu --env TF_ENABLE_ONEDNN_OPTS=1"


def test_blocks_expand_with_their_own_names_and_skips():
    spec = parse(stack({"type": "Block", "name": "res", "repeat": 3, "layers": [
        dict(CONV, activation="relu"), {"type": "Add", "name": "skip", "inputs": ["block_in", "conv"]}]},
        {"type": "AddN", "inputs": ["input", "res", "prev"]}))
    names = [layer.name for layer in spec.layers]
    assert names == ["res_0.conv", "res_0.skip", "res_1.conv", "res_1.skip", "res_2.conv", "res_2.skip", "addn_6"]
    by_name = {layer.name: layer for layer in spec.layers}
    assert by_name["res_1.conv"].inputs == ("res_0.skip",)  # each repetition takes the previous one's output
    assert by_name["res_1.skip"].inputs == ("res_0.skip", "res_1.conv")  # block_in: what entered this repetition
    assert by_name["addn_6"].inputs == ("input", "res_2.skip", "res_2.skip")  # a Block's name is its last output


def test_shapes_and_defaults_are_inferred():
    spec = parse(stack(dict(CONV, strides=2), {"type": "MaxPooling2D"}, {"type": "Flatten"},
                       {"type": "Dense", "units": 3}, shape=(2, 9, 9, 4)))
    assert [layer.shape for layer in spec.layers] == [(2, 5, 5, 4), (2, 3, 3, 4), (2, 36), (2, 3)]
    assert spec.layers[1].params["strides"] == (2, 2)  # pooling steps by its window unless told
    assert spec.layers[0].params["activation"] == "none" and spec.layers[0].params["use_bias"] is True
    padded = parse(stack({"type": "ZeroPadding2D", "padding": [1, 3]}, dict(CONV, padding="valid"),
                         {"type": "ZeroPadding2D"}, shape=(2, 9, 9, 4)))
    assert [layer.shape for layer in padded.layers] == [(2, 11, 15, 4), (2, 9, 13, 4), (2, 11, 15, 4)]


def test_every_ready_example_is_valid_and_every_layer_type_is_documented():
    for name in stack_examples.NAMES:
        assert parse(stack_examples.example(name)).name == name
    help_ = field_help()
    assert set(help_) == set(LAYER_TYPES)
    assert all(f["help"] for fields in help_.values() for f in fields)
    used = {"relu", "relu6", "elu", "leaky_relu", "tanh", "sigmoid", "gelu_approximate", "gelu_exact", "swish",
            "hard_swish", "mish"}
    assert used <= set(LAYER_TYPES["Activation"][2][0].choices)


def test_the_readable_json_is_the_same_stack_one_layer_a_line():
    from explorer.model.stack import to_text

    for name in stack_examples.NAMES:
        data = stack_examples.example(name)
        text = to_text(data)
        assert json.loads(text) == data
        layers = sum(1 for line in text.splitlines() if line.strip().startswith('{"type"'))
        assert layers == len(json.dumps(data).split('{"type"')) - 1  # every layer (and Block) on its own line
