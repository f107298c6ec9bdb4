"""A graph's function library is checked as the runtime will see it, and one user's functions never meet another's.

Findings 1 and 2 of issue 20: a library with two functions of one name was checked by name (one copy
checked, the other registered), and two uploads defining different functions under one name could
not both run in one warm worker. Recursion and call depth are refused statically, before anything runs.
"""

from __future__ import annotations

import os

import pytest
from hostile_graphs import (binary, call, const, function, good, graph, node, placeholder, unary,
                    write_file)

from explorer.engine.uploads import spec_for_path
from explorer.errors import SpecError
from explorer.model.flags import Config

pytestmark = pytest.mark.tf
CPU = Config.make("cpu", {})


def run(engine, tmp_path, name: str, data: bytes):
    path = tmp_path / name
    path.write_bytes(data)
    return engine.inspect(spec_for_path(str(path)), CPU, use_cache=False)


def refusal(engine, tmp_path, name: str, data: bytes) -> str:
    with pytest.raises(SpecError) as refused:
        run(engine, tmp_path, name, data)
    message = str(refused.value)
    assert "\n" not in message and "Traceback" not in message
    return message


def ops(result, stage: str = "optimized") -> set[str]:
    return {n["op"] for n in result["stages"][stage]["nodes"]}


def harmless_f(tag: str = "") -> str:
    return function("f", [unary("r" + tag, "Relu", "x")], f"r{tag}:activations:0")


def writing_f() -> str:
    body = write_file("w", "/tmp/explorer-hostile-library") + [unary("r", "Relu", "x")]
    return function("f", body, "r:activations:0")


@pytest.mark.parametrize("order", ["bad first", "good first"])
def test_two_library_functions_of_one_name_are_refused(engine, tmp_path, order):
    functions = [writing_f(), harmless_f()] if order == "bad first" else [harmless_f(), writing_f()]
    data = graph([placeholder(), call("c", "f", "x"), unary("y", "Identity", "c")], functions)
    message = refusal(engine, tmp_path, "twice.pbtxt", data)
    assert "function 'f' twice" in message, message
    assert not os.path.exists("/tmp/explorer-hostile-library")
    assert run(engine, tmp_path, "good.pbtxt", good())["output_shapes"] == [[2]]


def test_two_uploads_with_different_functions_of_one_name_both_run_in_one_worker(engine, tmp_path):
    times_two = graph([placeholder(), call("c", "f", "x"), unary("y", "Relu", "c")],
                      [function("f", [const("two", [2.0]), binary("m", "Mul", "x", "two:output:0")], "m:z:0")])
    plus_one = graph([placeholder(), call("c", "f", "x"), unary("y", "Relu", "c")],
                     [function("f", [const("one", [1.0]), binary("a", "AddV2", "x", "one:output:0")], "a:z:0")])
    first = run(engine, tmp_path, "times_two.pbtxt", times_two)
    second = run(engine, tmp_path, "plus_one.pbtxt", plus_one)
    assert first["fingerprint"]["pid"] == second["fingerprint"]["pid"]  # one warm worker served both
    # Each ran its own f: what Grappler inlined is that model's function, not the one registered first.
    assert "Mul" in ops(first) and "AddV2" not in ops(first)
    assert "AddV2" in ops(second) and "Mul" not in ops(second)
    again = run(engine, tmp_path, "times_two_again.pbtxt", times_two + b"\n")
    assert "Mul" in ops(again) and "AddV2" not in ops(again)


def test_a_function_of_another_model_cannot_be_called(engine, tmp_path):
    """Names are made unique per model: what an earlier upload registered is no op a later graph can name."""
    owner = graph([placeholder(), call("c", "g", "x", op="g"), unary("y", "Relu", "c")],
                  [function("g", [unary("r", "Relu", "x")], "r:activations:0")])
    first = run(engine, tmp_path, "owner.pbtxt", owner)
    renamed = sorted(op for op in ops(first, "traced") if op.startswith("g"))
    assert first["output_shapes"] == [[2]] and renamed and renamed != ["g"], ops(first, "traced")
    for name in ["g", *renamed]:
        message = refusal(engine, tmp_path, "caller.pbtxt", graph([placeholder(), node("c", name, "x"),
                                                                   unary("y", "Relu", "c")]))
        assert "refused before anything ran" in message and f"op {name} " in message, message


def while_loop(name: str, source: str, cond: str, body: str) -> str:
    attrs = " ".join([
        'attr { key: "T" value { list { type: DT_FLOAT } } }',
        f'attr {{ key: "cond" value {{ func {{ name: "{cond}" }} }} }}',
        f'attr {{ key: "body" value {{ func {{ name: "{body}" }} }} }}'])
    return node(name, "While", source, attrs=attrs)


@pytest.mark.parametrize("case,words", [
    ("self", "function 'f' calls itself"),
    ("mutual", "functions call each other in a cycle: 'f' → 'g' → 'f'"),
    ("while_body", "function 'body' calls itself"),
])
def test_recursion_is_refused_before_anything_runs(engine, tmp_path, case, words):
    if case == "self":
        library = [function("f", [call("again", "f", "x"), unary("r", "Relu", "again:output:0")], "r:activations:0")]
    elif case == "mutual":
        library = [function("f", [call("c", "g", "x", op="StatefulPartitionedCall")], "c:output:0"),
                   function("g", [call("c", "f", "x")], "c:output:0")]
    else:  # a While whose body runs a While of the same body
        library = [function("body", [while_loop("inner", "x", "cond", "body")], "inner:output:0"),
                   function("cond", [const("t", [1.0], dims=[])], "t:output:0")]
    message = refusal(engine, tmp_path, f"{case}.pbtxt",
                      graph([placeholder(), while_loop("c", "x", "cond", "body") if case == "while_body" else
                             call("c", "f", "x"), unary("y", "Relu", "c")], library))
    assert words in message, message
    assert run(engine, tmp_path, "good.pbtxt", good())["output_shapes"] == [[2]]


def test_deep_and_exploding_call_chains_are_refused(engine, tmp_path):
    deep = [function(f"f{i}", [call("c", f"f{i + 1}", "x")], "c:output:0") for i in range(199)]
    deep.append(function("f199", [unary("r", "Relu", "x")], "r:activations:0"))
    message = refusal(engine, tmp_path, "deep.pbtxt", graph([placeholder(), call("c", "f0", "x"),
                                                            unary("y", "Relu", "c")], deep))
    assert "calls nest 200 deep" in message and "'f0' → 'f1' → 'f2'" in message, message
    # Each function calls the next twice: 40 levels would be 2^40 nodes once inlined.
    doubling = [function(f"d{i}", [call("a", f"d{i + 1}", "x"), call("b", f"d{i + 1}", "a:output:0")],
                         "b:output:0") for i in range(40)]
    doubling.append(function("d40", [unary("r", "Relu", "x")], "r:activations:0"))
    message = refusal(engine, tmp_path, "doubling.pbtxt", graph([placeholder(), call("c", "d0", "x"),
                                                                unary("y", "Relu", "c")], doubling))
    assert "once its function calls are inlined" in message and "over the 50,000" in message, message
