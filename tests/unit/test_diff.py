"""diff_graphs on captured TF 2.21 graphs (tests/fixtures) and hand-made edge cases."""

from __future__ import annotations

import json

import pytest
from fixture_graphs import FIXTURES, stages

from explorer.analysis.diff import STATUSES, Change, change_reasons, diff_graphs
from explorer.model.graph import Edge, Graph, Node


def node(name, op, *inputs, fused_ops=(), control=()):
    edges = tuple(Edge(i) for i in inputs) + tuple(Edge(c, control=True) for c in control)
    return Node(name, op, inputs=edges, fused_ops=tuple(fused_ops))


def test_gelu_onednn_traced_to_optimized():
    g = stages("matmul_bias_gelu_approx__onednn")
    d = diff_graphs(g["traced"], g["optimized"])
    assert len(d.fusions) == 1
    f = d.fusions[0]
    assert d.status("Gelu/mul_3", "after") == "fused"
    assert d.status("Gelu/mul_3", "before") == "absorbed"
    for name in f.absorbed:
        assert d.status(name, "before") == "absorbed"
    # the Identity before the _Retval is pruned: removed, not absorbed
    assert d.removed == ("Identity",)
    assert d.added == ()
    assert d.changed == (Change("identity_RetVal", ("inputs Identity → Gelu/mul_3",)),)
    assert d.reason("identity_RetVal") == "inputs Identity → Gelu/mul_3"
    assert d.reason("args_0") == ""
    assert set(d.unchanged) == {"args_0", "args_1", "args_2"}
    assert d.renames == ()


def test_every_node_has_exactly_one_status_per_side():
    for path in sorted(FIXTURES.glob("*.json")):
        g = stages(path.stem)
        for a, b in (("traced", "optimized"), ("optimized", "executed"), ("traced", "executed")):
            d = diff_graphs(g[a], g[b])
            before, after = d.overlay("before"), d.overlay("after")
            assert set(before) == {n.name for n in g[a].nodes}, (path.stem, a, b)
            assert set(after) == {n.name for n in g[b].nodes}, (path.stem, a, b)
            assert set(before.values()) <= {"removed", "changed", "absorbed", "unchanged"}
            assert set(after.values()) <= {"added", "changed", "fused", "unchanged"}
            assert set(before.values()) | set(after.values()) <= set(STATUSES)


def test_onednn_rename_is_a_change_not_a_fusion():
    g = stages("matmul_bias_gelu_approx__onednn")
    d = diff_graphs(g["optimized"], g["executed"])
    assert d.fusions == ()
    assert [tuple(r) for r in d.renames] == [("Gelu/mul_3", "_FusedMatMul", "_MklNativeFusedMatMul")]
    assert d.status("Gelu/mul_3", "after") == "changed"
    assert d.reason("Gelu/mul_3") == "op _FusedMatMul → _MklNativeFusedMatMul"
    assert d.summary()[0] == "renamed: Gelu/mul_3: _FusedMatMul → _MklNativeFusedMatMul"


def test_stock_gelu_arithmetic_rewrites_are_changes():
    g = stages("matmul_bias_gelu_approx__stock")
    d = diff_graphs(g["traced"], g["optimized"])
    assert [f.absorbed for f in d.fusions] == [("MatMul", "BiasAdd")]
    assert d.status("BiasAdd", "after") == "fused"
    assert d.status("Gelu/Pow", "before") == d.status("Gelu/Pow", "after") == "changed"
    assert d.reason("Gelu/Pow").startswith("op Pow → Mul")
    assert d.reason("Gelu/mul_2") == "inputs reordered"
    # the exponent 3.0 goes (removed), the Square the optimiser made arrives (added)
    assert d.removed == ("Gelu/Pow/y", "Identity")
    assert d.added == ("Gelu/ArithmeticOptimizer/ConvertPow__inner_Pow",)
    assert "rewritten: Gelu/Pow: Pow → Mul" in d.summary()


def test_squeeze_case_statuses():
    g = stages("conv2d_squeeze_bias__onednn")
    d = diff_graphs(g["traced"], g["optimized"])
    assert d.status("Conv2D", "after") == "fused"
    assert [d.status(n, "before") for n in ("Conv2D", "Squeeze", "BiasAdd")] == ["absorbed"] * 3
    # the BiasAdd's name now belongs to a Squeeze reading the fused conv
    assert d.status("BiasAdd", "after") == "changed"
    assert d.reason("BiasAdd") == "op BiasAdd → Squeeze; inputs Squeeze, args_2 → Conv2D"
    assert d.clusters("before") == {"→ _FusedConv2D [BiasAdd] (Conv2D)": ["Conv2D", "Squeeze", "BiasAdd"]}
    assert d.clusters("after") == {"→ _FusedConv2D [BiasAdd] (Conv2D)": ["Conv2D"]}


def test_layout_pass_fusion_with_remapping_off():
    g = stages("conv2d_bias__onednn_noremap")
    d = diff_graphs(g["optimized"], g["executed"])
    assert d.status("BiasAdd", "after") == "fused"
    assert d.status("Conv2D", "before") == "absorbed"
    assert d.counts()["fusions"] == 1


def test_identical_graphs():
    g = stages("conv2d_bias_relu__onednn")["optimized"]
    d = diff_graphs(g, g)
    assert d.fusions == d.renames == d.changed == d.removed == d.added == ()
    assert d.unchanged == tuple(n.name for n in g.nodes)


def test_empty_graphs():
    d = diff_graphs(Graph(), Graph())
    assert d.counts() == dict.fromkeys(("removed", "added", "changed", "unchanged", "fusions", "absorbed", "renames"), 0)
    assert d.overlay("before") == d.overlay("after") == {}
    d = diff_graphs(Graph(), Graph((node("a", "Relu"),)))
    assert d.added == ("a",) and d.status("a", "after") == "added"
    d = diff_graphs(Graph((node("a", "Relu"),)), Graph())
    assert d.removed == ("a",) and d.status("a", "before") == "removed"


def test_status_errors():
    d = diff_graphs(Graph((node("a", "Relu"),)), Graph((node("a", "Relu"),)))
    with pytest.raises(KeyError, match="no node 'b' on the after side"):
        d.status("b", "after")
    with pytest.raises(ValueError, match="side must be"):
        d.status("a", "left")
    with pytest.raises(ValueError):
        d.overlay("middle")


def test_control_edges_and_missing_inputs():
    before = Graph((node("x", "_Arg"), node("a", "Relu", "x", control=["x"]), node("b", "Relu", "ghost")))
    after = Graph((node("x", "_Arg"), node("a", "Relu", "x"), node("b", "Relu", "ghost:1")))
    d = diff_graphs(before, after)
    assert d.reason("a") == "control -^x"
    assert d.reason("b") == "inputs ghost → ghost:1"


def test_change_reasons():
    old = node("n", "_FusedMatMul", "x", fused_ops=["BiasAdd"])
    new = node("n", "_FusedMatMul", "x", fused_ops=["BiasAdd", "Relu"], control=["c"])
    assert change_reasons(old, new) == ("fused_ops [BiasAdd] → [BiasAdd, Relu]", "control +^c")
    assert change_reasons(old, old) == ()
    assert change_reasons(node("n", "Relu"), node("n", "Relu", "x")) == ("inputs (none) → x",)
    # device and dtype are not differences worth a colour (the traced graph has no devices yet)
    assert change_reasons(Node("n", "Relu", device=""), Node("n", "Relu", device="CPU:0", dtype="float32")) == ()


def test_fusion_of_and_to_dict():
    g = stages("conv2d_bias_relu__onednn")
    d = diff_graphs(g["traced"], g["optimized"])
    assert d.fusion_of("Relu") is d.fusions[0]
    assert d.fusion_of("Conv2D") is d.fusions[0]
    assert d.fusion_of("args_0") is None
    data = json.loads(json.dumps(d.to_dict()))
    assert data["fusions"][0]["absorbed"] == ["Conv2D", "BiasAdd", "Relu"]
    assert data["removed"] == ["Identity"]


def test_equal_inputs_give_equal_diffs():
    # frozen and compared by value: safe to cache
    g = stages("matmul_bias_relu__stock")
    assert diff_graphs(g["traced"], g["optimized"]) == diff_graphs(g["traced"], g["optimized"])


@pytest.mark.parametrize("name", sorted(p.stem for p in FIXTURES.glob("*.json")))
def test_counts_account_for_every_node(name):
    # What the captions print: fused + added + changed + unchanged = the nodes after; absorbed +
    # removed + changed + unchanged = the nodes before, but for a changed node whose old namesake
    # was absorbed (Conv2D+Squeeze+BiasAdd: the BiasAdd's name goes to a new Squeeze).
    g = stages(name)
    for before, after in (("traced", "optimized"), ("optimized", "executed")):
        d = diff_graphs(g[before], g[after])
        c = d.counts()
        absorbed = {n for f in d.fusions for n in f.absorbed}
        both = len({ch.name for ch in d.changed} & absorbed)
        assert c["absorbed"] + c["removed"] + c["changed"] - both + c["unchanged"] == len(g[before]), (before, after)
        assert c["fusions"] + c["added"] + c["changed"] + c["unchanged"] == len(g[after]), (before, after)
