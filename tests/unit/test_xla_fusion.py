"""analysis.xla_fusion on XLA results captured from the real worker (tests/fixtures/xla/xla__*.json).

The expected groups are read off each fixture's HLO module here, by a walk of its own, and compared
with what the analysis says; no TensorFlow is imported.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from explorer.analysis import xla_fusion

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "xla"
CASES = sorted(p.stem.removeprefix("xla__") for p in FIXTURES.glob("xla__*.json"))


def load(case: str) -> dict:
    return json.loads((FIXTURES / f"xla__{case}.json").read_text())


def op_names_inside(module: dict, comp_names: list[str]) -> set[str]:
    """Every op_name in these computations and the ones they call (an independent walk)."""
    comps = {c["name"]: c for c in module["computations"]}
    names, todo, seen = set(), list(comp_names), set()
    while todo:
        comp = todo.pop()
        if comp in seen:
            continue
        seen.add(comp)
        for ins in comps[comp]["instructions"]:
            if ins["op_name"] and ins["op_name"] not in ("XLA_Args", "XLA_Retvals"):
                names.add(ins["op_name"])
            todo += ins["called_computations"]
    return names


def entry(module: dict) -> dict:
    return next(c for c in module["computations"] if c["is_entry"])


def test_fixtures_exist():
    assert {"matmul_bias_gelu_approx", "matmul_bias_gelu_exact", "conv2d_bias_relu", "layer_norm"} <= set(CASES)


@pytest.mark.parametrize("case", CASES)
def test_each_fusion_holds_exactly_the_ops_its_metadata_names(case):
    data = load(case)
    groups = {g["node"]: g for g in xla_fusion.xla_fusions(data["module"], data["traced"]["nodes"])}
    fusions = [i for i in entry(data["module"])["instructions"] if i["opcode"] == "fusion"]
    assert fusions, "every fixture model has at least one XLA fusion"
    for ins in fusions:
        assert set(groups[ins["name"]]["tf_ops"]) == op_names_inside(data["module"], ins["called_computations"])
        assert groups[ins["name"]]["category"] == ("library" if ins["fusion_kind"] == "kCustom" else "fusion")


@pytest.mark.parametrize("case", CASES)
def test_every_traced_op_is_accounted_for(case):
    data = load(case)
    nodes = data["traced"]["nodes"]
    groups = xla_fusion.xla_fusions(data["module"], nodes)
    accounting = xla_fusion.account(groups, nodes, data["hlo"]["hlo"])
    assert list(accounting) == [n["name"] for n in nodes]
    named = {ins["op_name"] for c in data["module"]["computations"] for ins in c["instructions"]}
    for node in nodes:
        a = accounting[node["name"]]
        assert a["status"] in xla_fusion.STATUS_WORDS
        if node["name"] in named:  # carried by some HLO instruction: it must be in a group
            assert a["where"], node
            assert a["status"] in ("fusion", "library", "outside")
        else:
            assert a["status"] in ("argument", "no_hlo") and a["where"] == []
        if a["status"] == "no_hlo":
            assert a["note"]
    for op in ("Const", "Identity"):
        assert all(accounting[n["name"]]["status"] == "no_hlo" for n in nodes if n["op"] == op)


def test_gelu_matmul_is_a_plain_dot_and_the_bias_and_gelu_one_loop_fusion():
    for case in ("matmul_bias_gelu_approx", "matmul_bias_gelu_exact"):
        data = load(case)
        nodes = data["traced"]["nodes"]
        groups = xla_fusion.xla_fusions(data["module"], nodes)
        dots = [g for g in groups if g["kind"] == "dot"]
        loops = [g for g in groups if g["kind"] == "loop"]
        assert [g["tf_ops"] for g in dots] == [["MatMul"]]
        assert dots[0]["description"] == "dot: MatMul (outside any fusion)"
        gelu = [n["name"] for n in nodes if n["name"].startswith("Gelu/") and n["op"] != "Const"]
        assert len(loops) == 1 and loops[0]["tf_ops"] == ["BiasAdd"] + gelu
        assert loops[0]["description"].startswith(f"loop fusion of {len(gelu) + 1} ops: BiasAdd, Gelu/")


def test_conv2d_stays_a_convolution_outside_the_bias_relu_fusion():
    data = load("conv2d_bias_relu")
    groups = xla_fusion.xla_fusions(data["module"], data["traced"]["nodes"])
    by_kind = {g["kind"]: g for g in groups}
    assert by_kind["convolution"]["tf_ops"] == ["Conv2D"]
    assert by_kind["loop"]["tf_ops"] == ["BiasAdd", "Relu"]


def test_layer_norm_mean_sits_in_several_fusions():
    data = load("layer_norm")
    groups = xla_fusion.xla_fusions(data["module"], data["traced"]["nodes"])
    holding = [g["node"] for g in groups if "moments/mean" in g["tf_ops"]]
    assert len(holding) >= 2
    assert xla_fusion.account(groups, data["traced"]["nodes"])["moments/mean"]["where"] == holding


def test_ynnpack_custom_fusion_is_a_library_call():
    data = load("layer_norm_default")
    groups = xla_fusion.xla_fusions(data["module"], data["traced"]["nodes"])
    custom = [g for g in groups if g["kind"] == "custom"]
    assert custom and all(g["category"] == "library" and "YNNPACK" in g["words"] for g in custom)


def test_resolver_strips_call_prefixes_and_joined_locations():
    nodes = [{"name": "Gelu/mul", "op": "Mul"}, {"name": "PartitionedCall", "op": "PartitionedCall"}]
    resolve = xla_fusion.resolver(nodes)
    assert resolve("Gelu/mul") == "Gelu/mul"
    assert resolve("StatefulPartitionedCall/Gelu/mul") == "Gelu/mul"
    assert resolve("Gelu/Tanh;PartitionedCall/Gelu/Tanh") == "PartitionedCall"
    assert resolve("PartitionedCall/inner/op") == "PartitionedCall"
    assert resolve("XLA_Args") is None and resolve(None) is None and resolve("nowhere") is None


def test_annotate_adds_fusions_accounting_and_summary():
    data = load("matmul_bias_gelu_approx")
    result = xla_fusion.annotate_xla(data)
    assert result["summary"] == f"dot, loop fusion ({len(result['fusions'][1]['tf_ops'])} ops)"
    assert set(result["accounting"]) == {n["name"] for n in data["traced"]["nodes"]}


def test_the_summary_counts_each_kind_once_for_a_real_network():
    def group(words, ops, category="fusion"):
        return {"words": words, "tf_ops": [f"op{i}" for i in range(ops)], "category": category}
    groups = [group("convolution", 1, "library"), group("loop fusion", 2), group("dot", 1, "library"),
              group("loop fusion", 11), group("convolution", 1, "library"), group("loop fusion", 5)]
    assert xla_fusion.summary(groups) == "2 convolutions, 3 loop fusions (2–11 ops each), dot"
    assert xla_fusion.summary([group("loop fusion", 3), group("loop fusion", 3)]) == "2 loop fusions (3 ops each)"
    assert xla_fusion.summary([]) == "nothing"


def test_an_op_carried_only_by_a_bitcast_is_said_to_compute_nothing():
    data = load("matmul_bias_gelu_approx")
    nodes = data["traced"]["nodes"] + [{"name": "Reshape", "op": "Reshape"}]
    module = json.loads(json.dumps(data["module"]))
    entry(module)["instructions"].append({
        "name": "bitcast.9", "opcode": "bitcast", "shape": "f32[32]", "operands": ["MatMul.2"],
        "called_computations": [], "fusion_kind": None, "custom_call_target": None, "op_type": "Reshape",
        "op_name": "Reshape", "is_root": False, "parameter_number": None})
    groups = xla_fusion.xla_fusions(module, nodes)
    assert all("Reshape" not in g["tf_ops"] for g in groups)
    a = xla_fusion.account(groups, nodes, module=module)["Reshape"]
    assert a["status"] == "no_hlo" and a["note"].startswith("only a bitcast carries its name")


def test_the_gpu_note_speaks_of_the_ops_the_model_has():
    cnn = xla_fusion.gpu_note({"_Arg", "Conv2D", "BiasAdd", "Relu", "_Retval"})
    assert "GELU" not in cnn and "cudnn_fused_conv_rewriter" in cnn and "Not measured here (no GPU)" in cnn
    gelu = xla_fusion.gpu_note({"MatMul", "BiasAdd", "Mul", "Pow", "Tanh", "AddV2"})
    assert "BIAS_GELU" in gelu and "cuDNN" not in gelu
    dense = xla_fusion.gpu_note({"MatMul", "BiasAdd", "Relu"})
    assert "GELU" not in dense and "epilogue" in dense


def test_a_loops_body_and_a_branchs_fusions_are_listed_after_their_instruction():
    # tf.while_loop (MatMul + BiasAdd + Relu in its body) then tf.cond (the same in a branch), captured from the
    # worker: before, the while and the conditional swallowed everything they run, and their fusions went unlisted
    data = load("while_cond")
    module = data["module"]
    groups = xla_fusion.xla_fusions(module, data["traced"]["nodes"])
    order = [g["node"] for g in groups]
    controls = [i for i in entry(module)["instructions"] if i["opcode"] in ("while", "conditional")]
    assert {i["opcode"] for i in controls} == {"while", "conditional"}
    comps = {c["name"]: c for c in module["computations"]}
    for control in controls:
        group = groups[order.index(control["name"])]
        assert group["hlo_instructions"] == 1 and group["within"] is None  # itself only, not what it runs
        inside = [g for g in groups if (g["within"] or {}).get("instruction") == control["name"]]
        listed = {g["node"] for g in inside}
        expected = {i["name"] for sub in control["called_computations"] for i in comps[sub]["instructions"]
                    if i["opcode"] in ("fusion", "dot")}
        assert expected and expected <= listed
        at = order.index(control["name"])
        assert sorted(order.index(n) for n in listed) == list(range(at + 1, at + 1 + len(listed)))
        for g in inside:
            assert g["within"]["tf_op"] == control["op_name"] and g["description"].startswith(g["words"])
            assert f" in the {g['within']['part']} of {control['op_name']}" in g["description"]
    body = next(g for g in groups if g["within"] and g["within"]["part"] == "body" and g["words"] == "output fusion")
    assert body["body_ops"] == ["MatMul", "BiasAdd"] and body["tf_ops"] == []
    assert "output fusion of 2 ops in the body of StatefulPartitionedCall/while: MatMul, BiasAdd" == body["description"]
    assert {g["within"]["part"] for g in groups if g["within"]} == {"body", "condition", "branch"}
    assert xla_fusion.relative("functional_1/lstm_1/while/lstm_cell_1/MatMul",
                               "StatefulPartitionedCall/functional_1/lstm_1/while") == "lstm_cell_1/MatMul"


def test_a_call_that_ran_a_loops_body_ran_the_module_shown():
    # a profiled call lists the instructions of a loop's body and of the branch it took: the module shown holds
    # them, so the call ran it (before, only the entry's instructions counted, and an LSTM "differed")
    data = load("while_cond")
    module = data["module"]
    comps = {c["name"]: c for c in module["computations"]}
    cond = next(i for i in entry(module)["instructions"] if i["opcode"] == "conditional")
    untaken = {i["name"] for i in comps[cond["called_computations"][-1]]["instructions"]
               if i["opcode"] not in xla_fusion.PLUMBING}
    run_as_code = {sub for c in module["computations"] for i in c["instructions"]
                   if i["opcode"] in ("while", "conditional") for sub in i["called_computations"]}
    everything = {i["name"] for c in module["computations"] if c["is_entry"] or c["name"] in run_as_code
                  for i in c["instructions"] if i["opcode"] not in xla_fusion.PLUMBING}
    shown = xla_fusion.executed_vs_shown(dict(data, executed={"hlo_instructions": sorted(everything)}))
    assert shown["within"] and not shown["only_ran"], shown
    taken = xla_fusion.executed_vs_shown(dict(data, executed={"hlo_instructions": sorted(everything - untaken)}))
    assert taken["within"] and not taken["same"] and set(taken["only_shown"]) == untaken
    assert xla_fusion.executed_words(taken).startswith("It ran instructions of the module shown only; ")
    other = xla_fusion.executed_vs_shown(dict(data, executed={"hlo_instructions": ["fusion.99"]}))
    assert not other["within"] and xla_fusion.executed_words(other).startswith(
        "Its instructions differ from the module shown (ran only: fusion.99; shown only: ")


def test_where_a_loops_group_sits_is_said_by_the_loops_own_scope():
    within = {"part": "body", "tf_op": "StatefulPartitionedCall/functional_1/lstm_1/while", "instruction": "while.6"}
    assert xla_fusion.where_words(within) == "body of lstm_1/while"
    assert xla_fusion.where_words(dict(within, tf_op=None)) == "body of while.6"  # no TF op named: the instruction
    assert xla_fusion.where_words(None) == ""


def _ins(name: str, opcode: str, op_name: str | None = None, called=(), kind=None) -> dict:
    return {"called_computations": list(called), "custom_call_target": None, "fusion_kind": kind, "is_root": False,
            "name": name, "op_name": op_name, "op_type": None, "opcode": opcode, "operands": [],
            "parameter_number": None, "shape": "f16[1,8]"}


def test_an_op_whose_dtype_conversion_alone_sits_in_a_fusion_is_where_its_computation_is():
    """A float16 Conv2D on XLA:CPU runs as a float32 dot; the convert back to float16 carries its name into the loop
    fusion with the bias and Relu, which computes none of the convolution. A Cast is its conversion: fused."""
    fused_body = {"name": "fused", "is_entry": False, "is_fusion_body": True, "instructions": [
        _ins("p", "parameter"), _ins("to_half", "convert", "Conv2D"), _ins("add", "add", "BiasAdd"),
        _ins("max", "maximum", "Relu"), _ins("out", "convert", "Cast")]}
    module = {"computations": [fused_body, {"name": "main", "is_entry": True, "is_fusion_body": False, "instructions": [
        _ins("arg", "parameter"), _ins("dot", "dot", "Conv2D"),
        _ins("bias_relu_fusion", "fusion", called=["fused"], kind="kLoop")]}]}
    nodes = [{"name": n, "op": op} for n, op in (("x", "Placeholder"), ("Conv2D", "Conv2D"), ("BiasAdd", "BiasAdd"),
                                                  ("Relu", "Relu"), ("Cast", "Cast"))]
    groups = {g["node"]: g for g in xla_fusion.xla_fusions(module, nodes)}
    fusion = groups["bias_relu_fusion"]
    assert fusion["converted_ops"] == ["Conv2D"] and fusion["tf_ops"] == ["Conv2D", "BiasAdd", "Relu", "Cast"]
    assert fusion["description"] == ("loop fusion of 4 ops: Conv2D (its dtype conversion), BiasAdd, Relu, Cast")
    account = xla_fusion.account(list(groups.values()), nodes)
    assert account["Conv2D"]["status"] == "library" and "bias_relu_fusion" in account["Conv2D"]["note"]
    assert account["Cast"]["status"] == account["Relu"]["status"] == "fusion" and account["Cast"]["note"] is None
