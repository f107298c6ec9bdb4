"""The readers whose structure is declared as JSON Schemas (schemas.py, chain.SCHEMA, stack.STACK, layers.LAYER_SCHEMAS)
name the mistake a person reading the document in order meets first, word for word as the hand-written checks did
before them: an object's own fault, then its fields in their declared order (an unknown field: the first in the
document; a missing one where it would have been read), each field's own fault before its items'."""

from __future__ import annotations

import pytest

from explorer.errors import SpecError
from explorer.model import json_text, stack
from explorer.model.chain import Chain
from explorer.model.imported import resolve_import
from explorer.model.spec import resolve

DIGEST = "a" * 64
IMAGE = {"shape": [1, 8, 8, 4]}

CASES = [
    ("a field's items before a later field", stack.parse,
     {"input": IMAGE, "layers": [{"type": "Conv2D", "kernel_size": [0, 3], "padding": "x", "filters": 2}]},
     "layers[0]: kernel_size: expected a whole number 1..15, got 0"),
    ("the first unknown field in the document", stack.parse,
     {"input": IMAGE, "layers": [{"type": "Conv2D", "filters": 2, "zzz": 1, "aaa": 2}]},
     "layers[0]: zzz: unknown field; expected one of type, name, filters, kernel_size, strides, padding, activation, "
     "use_bias"),
    ("a required field where it is read", stack.parse,
     {"input": {"shape": [1, 4]}, "layers": [{"type": "Dense", "activation": "bad"}]},
     "layers[0]: units: required (output features)"),
    ("the input's shape, item by item, before its dtype", stack.parse,
     {"input": {"dtype": "int8", "shape": [0, 4]}, "layers": []},
     "input: shape[0]: expected a whole number 1..1048576, got 0"),
    ("the -1s counted after each size is read", stack.parse,
     {"input": IMAGE, "layers": [{"type": "Reshape", "target_shape": [-1, -1, 0]}]},
     "layers[0]: target_shape: expected a whole number 1..1048576, got 0"),
    ("a field only one format has, before its form", resolve_import,
     {"format": "graphdef", "digest": DIGEST, "signature": 5},
     "import.signature: only a SavedModel has signatures, not a graphdef"),
    ("the format before later fields", resolve_import, {"fixed_dims": 1, "format": "onnx", "digest": "x"},
     "import.format: 'onnx' is not one of ['graphdef', 'savedmodel', 'keras']"),
    ("a chain's kind first", Chain.from_dict, {"activation": "gelu", "kind": "bad"},
     "chain.kind: 'bad' is not one of ['chain', 'hash_bucket', 'batchnorm_fold', 'batch_matmul_scale_add', "
     "'layer_norm', 'instance_norm', 'batchnorm_grad']"),
    ("a parameter as text, in the chain's order", resolve,
     {"chain": {"contraction": "MatMul"}, "params": {"n": "0x10", "m": " 0 "}},
     "params.m: 0 is out of range; allowed 1..1048576"),
]


@pytest.mark.parametrize("what,read,data,message", CASES, ids=[c[0] for c in CASES])
def test_the_first_mistake_in_reading_order_is_named(what, read, data, message):
    with pytest.raises(SpecError) as info:
        read(data)
    assert str(info.value) == message


def test_refusal_gives_the_path_with_the_missing_or_unknown_field():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {}}, "required": ["b"],
              "additionalProperties": False}
    assert json_text.refusal({"a": 1, "b": 2}, schema) is None
    assert json_text.refusal({"a": 1}, schema, in_order=True) == (["b"], "missing")
    assert json_text.refusal({"b": 1, "z": 1, "c": 1}, schema, in_order=True)[0] == ["z"]
    assert json_text.refusal({"b": 1, "z": 1, "c": 1}, schema)[0] == ["c"]  # without: the first by name


def test_a_long_value_is_quoted_whole_or_cut_as_each_reader_did():
    long = "x" * 100
    with pytest.raises(SpecError, match=f"^chain.bias: '{long}' is not one of"):
        Chain.from_dict({"bias": long})
    with pytest.raises(SpecError, match=r"padding: expected one of same, valid; got 'x{58}…$"):
        stack.parse({"input": IMAGE, "layers": [{"type": "Conv2D", "filters": 2, "padding": long}]})
