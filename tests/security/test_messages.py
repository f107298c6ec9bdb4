"""Every refusal is one line that says exactly what is wrong and the limit, whatever names the file holds.

Finding 7 of issue 20 (the page's half is in test_page_uploads.py): "InvalidArgumentError: }" for a Const
claiming 10¹² elements, "[Op:__inference_model_0_graph]" for a 10¹⁰-element RandomUniform,
"TensorFlow failed: RecursionError" for a deeply nested .pbtxt, "op - (node '-')" for an empty
saved_model.pb, and refusal lines carrying a raw newline, a NUL or a 100 KB node name.
"""

from __future__ import annotations

import shutil

import pytest
from hostile_graphs import binary, const, dtype, good, graph, node, placeholder, unary, write_file

from explorer.engine.uploads import spec_for_path
from explorer.errors import SpecError
from explorer.model.flags import Config

pytestmark = pytest.mark.tf
CPU = Config.make("cpu", {})


def refusal(engine, path) -> str:
    with pytest.raises(SpecError) as refused:
        engine.inspect(spec_for_path(str(path)), CPU, use_cache=False)
    message = str(refused.value)
    assert "\n" not in message and "\x00" not in message and "Traceback" not in message, message
    assert len(message) < 2500, len(message)
    return message


def shaped(op: str, dims, dtype_attr: str = "dtype") -> bytes:
    """``op`` told its shape by the constant ``dims`` (BroadcastTo and Tile take it second, after x)."""
    shape = const("shape", dims, kind="DT_INT64")
    kinds = {dtype_attr: "DT_FLOAT"} if dtype_attr == "T" else {dtype_attr: "DT_FLOAT", "T": "DT_INT64"}
    if op in ("BroadcastTo", "Tile"):
        kinds["Tidx" if op == "BroadcastTo" else "Tmultiples"] = "DT_INT64"
    attrs = " ".join(f'attr {{ key: "{k}" value {{ type: {v} }} }}' for k, v in kinds.items())
    inputs = {"Fill": ("shape", "one"), "BroadcastTo": ("x", "shape"), "Tile": ("x", "shape")}.get(op, ("shape",))
    body = [shape, const("one", [1.0], dims=[]), node("big", op, *inputs, attrs=attrs)]
    return graph([placeholder()] + body + [binary("y", "Mul", "big", "x")])


@pytest.mark.parametrize("case,data,words", [
    ("const", graph([placeholder(), const("big", [1.0], dims=[1000000, 1000000]), binary("y", "Mul", "x", "big")]),
     "op Const (node 'big' in graph) asks for a tensor of 10¹² elements (3.64 TiB), over the 512 MiB per-tensor limit"),
    ("random", shaped("RandomUniform", [100000, 100000]),
     "op RandomUniform (node 'big' in graph) asks for a tensor of 10¹⁰ elements (37.3 GiB), over the 512 MiB"),
    ("fill", shaped("Fill", [50000, 50000], "T"),
     "op Fill (node 'big' in graph) asks for a tensor of 2.5 × 10⁹ elements"),
    ("broadcast", shaped("BroadcastTo", [100000, 100000], "T"),
     "op BroadcastTo (node 'big' in graph) asks for a tensor of 10¹⁰ elements"),
    ("tile", shaped("Tile", [100000000], "T"),
     "op Tile (node 'big' in graph) asks for a tensor of 2 × 10⁸ elements (763 MiB)"),
    ("list", graph([placeholder(), const("shape", [-1], dims=[], kind="DT_INT32"),
                    const("slots", [2**31 - 1], dims=[], kind="DT_INT32"),
                    node("big", "TensorListReserve", "shape", "slots",
                         attrs=dtype("element_dtype") + " " + dtype("shape_type", "DT_INT32")),
                    node("n", "TensorListLength", "big"), unary("y", "Relu", "x")]),
     "op TensorListReserve (node 'big' in graph) asks for a list of at least 2.1 × 10⁹ slots (48 GiB)"),
    ("many", graph([placeholder()] + [const(f"c{i}", [1.0], dims=[100, 1000, 1000]) for i in range(6)]
                   + [binary("y", "Mul", "x", "c0")]),
     "its tensors of stated size hold 2.24 GiB together, over the 2 GiB per-model limit"),
])
def test_sizes_the_graph_states_are_refused_before_anything_runs(engine, tmp_path, case, data, words):
    path = tmp_path / f"{case}.pbtxt"
    path.write_bytes(data)
    message = refusal(engine, path)
    assert "refused before anything ran" in message and words in message, message


def test_a_deeply_nested_text_graph_is_named_as_such(engine, tmp_path):
    depth = 5000
    nested = 'attr { key: "k" value { func { name: "f" ' * depth + "} } }" * depth
    path = tmp_path / "nested.pbtxt"
    path.write_text(f'node {{ name: "x" op: "NoOp" {nested} }}\n')
    message = refusal(engine, path)
    assert "nests deeper than" in message and "RecursionError" not in message, message


def test_an_empty_saved_model_pb_is_named_as_such(engine, bases, tmp_path):
    directory = tmp_path / "empty_sm"
    shutil.copytree(bases / "tiny_savedmodel", directory)
    (directory / "saved_model.pb").write_bytes(b"")
    message = refusal(engine, directory)
    assert "saved_model.pb holds no graph (an empty or truncated file" in message, message
    assert "op -" not in message and "'-'" not in message


@pytest.mark.parametrize("name,shown", [
    ("evil\nname", "'evil\\nname'"),
    ("nul\x00name", "'nul\\x00name'"),
    ("escape\x1b[31mred", "'escape\\x1b[31mred'"),
    ("n" * 100_000, "'" + "n" * 199 + "…'"),
])
def test_names_in_a_refusal_are_escaped_and_cut(engine, tmp_path, name, shown):
    path = tmp_path / "named.pbtxt"
    path.write_bytes(graph([placeholder()] + write_file(name) + [unary("y", "Relu", "x")]))
    message = refusal(engine, path)
    assert f"op WriteFile (node {shown} in graph): writes files" in message, message[:600]
    assert engine.inspect(spec_for_path(str(_good(tmp_path))), CPU, use_cache=False)["output_shapes"] == [[2]]


def _good(tmp_path):
    path = tmp_path / "good.pbtxt"
    path.write_bytes(good())
    return path
