"""find_fusions / find_renames on graphs captured from TF 2.21 (tests/fixtures), and hand-made edge cases."""

from __future__ import annotations

import json

import pytest
from fixture_graphs import fixture, stages

from explorer.analysis.fusion import (
    FUSED_OP_PREFIXES,
    Fusion,
    Rename,
    canonical_op,
    find_fusions,
    find_renames,
    is_fused_node,
    is_fused_op,
    is_kernel_rename,
    topological_order,
)
from explorer.model.graph import Edge, Graph, Node


def only(fusions: list[Fusion]) -> Fusion:
    assert len(fusions) == 1, [f.describe() for f in fusions]
    return fusions[0]


# ---- the fused-op rule ---------------------------------------------------------------------

@pytest.mark.parametrize("op", [
    "_FusedMatMul", "_FusedConv2D", "_FusedConv3D", "_FusedDepthwiseConv2dNative", "_FusedBatchNormEx",
    "_FusedBatchNormGradEx", "_MklFusedBatchMatMulV2", "_MklFusedMish", "_MklFusedInstanceNorm",
    "_MklNativeFusedMatMul", "_MklNativeFusedConv2D", "_MklNativeFusedBatchNormEx", "_MklNativeConv2DWithBias",
    "_MklSwish", "_MklLayerNorm", "_TensorToHashBucketFast",
])
def test_fused_op_names(op):
    assert is_fused_op(op)


@pytest.mark.parametrize("op", [
    "MatMul", "Conv2D", "BiasAdd", "Relu", "_MklMatMul", "_MklNativeConv2D", "FusedBatchNormV3",
    # oneDNN kernels of stock ops whose own name starts with "Fused": renames, not fusions
    "_MklNativeFusedBatchNormV3", "_MklFusedBatchNormV3", "_Arg", "_Retval", "",
])
def test_not_fused_op_names(op):
    assert not is_fused_op(op)


def test_every_prefix_in_the_table_is_fused():
    for prefix, why in FUSED_OP_PREFIXES:
        assert is_fused_op(prefix + "X") and why


def test_fused_ops_attribute_makes_any_node_fused():
    assert is_fused_node(Node("n", "SomeNewKernel", fused_ops=("BiasAdd",)))
    assert not is_fused_node(Node("n", "MatMul"))


def test_canonical_op_and_kernel_rename():
    assert canonical_op("_MklNativeFusedMatMul") == canonical_op("_FusedMatMul") == "FusedMatMul"
    assert canonical_op("_MklMatMul") == "MatMul"
    assert canonical_op("_") == "_"
    assert is_kernel_rename("MatMul", "_MklMatMul")
    assert is_kernel_rename("_FusedConv2D", "_MklNativeFusedConv2D")
    assert not is_kernel_rename("Pow", "Mul")
    assert not is_kernel_rename("MatMul", "MatMul")


# ---- real graphs ---------------------------------------------------------------------------

def test_gelu_approx_onednn_absorbs_matmul_bias_and_the_whole_gelu():
    g = stages("matmul_bias_gelu_approx__onednn")
    f = only(find_fusions(g["traced"], g["optimized"]))
    assert f.node == f.root == "Gelu/mul_3"
    assert f.op == "_FusedMatMul"
    assert f.fused_ops == ("BiasAdd", "GeluApproximate")
    assert [op for _, op in f.compute] == ["MatMul", "BiasAdd", "Mul", "Pow", "Mul", "AddV2", "Mul", "Tanh", "AddV2", "Mul"]
    # the GELU's constants vanish with it, the exponent 3.0 of the Pow included
    assert set(f.consts) == {"Gelu/Cast/x", "Gelu/mul/x", "Gelu/Pow/y", "Gelu/mul_2/x", "Gelu/add_1/x"}
    assert len(f.absorbed) == len(f.absorbed_ops) == 15
    # the inputs x, w, b are not absorbed, and the pruned Identity is not part of the chain
    assert not {"args_0", "args_1", "args_2", "Identity"} & set(f.absorbed)
    assert f.describe() == (
        "MatMul + BiasAdd + Gelu (8 ops: Mul, Pow, Mul, AddV2, Mul, Tanh, AddV2, Mul) + 5 consts"
        " → _FusedMatMul [BiasAdd, GeluApproximate]"
    )
    assert f.describe(verbose=True).startswith("MatMul + BiasAdd + Mul + Pow + ")


def test_absorbed_is_in_topological_order():
    g = stages("matmul_bias_gelu_approx__onednn")
    f = only(find_fusions(g["traced"], g["optimized"]))
    pos = {name: i for i, name in enumerate(f.absorbed)}
    for name in f.absorbed:
        for e in g["traced"][name].data_inputs:
            if e.src in pos:
                assert pos[e.src] < pos[name]
    assert f.absorbed[-1] == "Gelu/mul_3"


def test_gelu_approx_stock_fuses_only_matmul_and_bias():
    g = stages("matmul_bias_gelu_approx__stock")
    f = only(find_fusions(g["traced"], g["optimized"]))
    assert (f.node, f.root, f.op, f.fused_ops) == ("BiasAdd", "BiasAdd", "_FusedMatMul", ("BiasAdd",))
    assert f.absorbed == ("MatMul", "BiasAdd")
    assert f.absorbed_ops == ("MatMul", "BiasAdd")
    assert f.describe() == "MatMul + BiasAdd → _FusedMatMul [BiasAdd]"
    # the arithmetic optimiser's Pow -> Mul kept the name: a rewrite, not a kernel swap
    assert find_renames(g["traced"], g["optimized"]) == [Rename("Gelu/Pow", "Pow", "Mul")]
    assert not find_renames(g["traced"], g["optimized"])[0].kernel_swap


def test_gelu_exact_onednn():
    g = stages("matmul_bias_gelu_exact__onednn")
    f = only(find_fusions(g["traced"], g["optimized"]))
    assert f.fused_ops == ("BiasAdd", "GeluExact")
    assert [op for _, op in f.compute] == ["MatMul", "BiasAdd", "Mul", "Neg", "Mul", "Erfc", "Mul"]


@pytest.mark.parametrize("name, ops, fused_ops, root", [
    ("conv2d_bias_relu__onednn", ("Conv2D", "BiasAdd", "Relu"), ("BiasAdd", "Relu"), "Relu"),
    ("conv2d_bias_relu__stock", ("Conv2D", "BiasAdd", "Relu"), ("BiasAdd", "Relu"), "Relu"),
    ("matmul_bias_relu__onednn", ("MatMul", "BiasAdd", "Relu"), ("BiasAdd", "Relu"), "Relu"),
    ("matmul_bias_relu__stock", ("MatMul", "BiasAdd", "Relu"), ("BiasAdd", "Relu"), "Relu"),
    ("conv2d_batchnorm_relu__onednn", ("Conv2D", "FusedBatchNormV3", "Relu"), ("FusedBatchNorm", "Relu"), "Relu"),
])
def test_contraction_chains(name, ops, fused_ops, root):
    g = stages(name)
    f = only(find_fusions(g["traced"], g["optimized"]))
    assert f.absorbed_ops == ops
    assert f.fused_ops == fused_ops
    assert f.root == f.node == root
    assert f.consts == ()


def test_conv2d_bias_relu_describe():
    g = stages("conv2d_bias_relu__onednn")
    assert only(find_fusions(g["traced"], g["optimized"])).describe() == "Conv2D + BiasAdd + Relu → _FusedConv2D [BiasAdd, Relu]"


@pytest.mark.parametrize("mode", ["onednn", "stock"])
def test_conv2d_squeeze_bias_keeps_the_conv_name(mode):
    g = stages(f"conv2d_squeeze_bias__{mode}")
    f = only(find_fusions(g["traced"], g["optimized"]))
    # the fused conv keeps the Conv2D's name; the BiasAdd's name goes to the new Squeeze
    assert (f.node, f.root, f.op, f.fused_ops) == ("Conv2D", "Conv2D", "_FusedConv2D", ("BiasAdd",))
    assert f.absorbed == ("Conv2D", "Squeeze", "BiasAdd")
    assert find_renames(g["traced"], g["optimized"], [f]) == [("BiasAdd", "BiasAdd", "Squeeze")]


@pytest.mark.parametrize("name, node, old, new", [
    ("matmul_bias_gelu_approx__onednn", "Gelu/mul_3", "_FusedMatMul", "_MklNativeFusedMatMul"),
    ("matmul_bias_gelu_exact__onednn", "Gelu/mul_2", "_FusedMatMul", "_MklNativeFusedMatMul"),
    ("conv2d_bias_relu__onednn", "Relu", "_FusedConv2D", "_MklNativeFusedConv2D"),
    ("conv2d_batchnorm_relu__onednn", "Relu", "_FusedConv2D", "_MklNativeFusedConv2D"),
    ("batchnorm_add_relu__onednn", "FusedBatchNormV3", "FusedBatchNormV3", "_MklNativeFusedBatchNormV3"),
])
def test_onednn_layout_pass_renames_are_not_fusions(name, node, old, new):
    g = stages(name)
    assert find_fusions(g["optimized"], g["executed"]) == []
    renames = find_renames(g["optimized"], g["executed"])
    assert renames == [(node, old, new)]
    assert renames[0].kernel_swap


def test_onednn_layout_pass_fuses_conv_bias_with_remapping_off():
    g = stages("conv2d_bias__onednn_noremap")
    assert find_fusions(g["traced"], g["optimized"]) == []
    f = only(find_fusions(g["optimized"], g["executed"]))
    assert (f.node, f.op, f.fused_ops, f.root) == ("BiasAdd", "_MklNativeConv2DWithBias", (), "BiasAdd")
    assert f.absorbed == ("Conv2D", "BiasAdd")
    assert f.describe() == "Conv2D + BiasAdd → _MklNativeConv2DWithBias"


def test_remapping_off_onednn_renames_matmul():
    g = stages("matmul_bias_gelu_approx__onednn_noremap")
    assert find_fusions(g["optimized"], g["executed"]) == []
    assert find_renames(g["optimized"], g["executed"]) == [("MatMul", "MatMul", "_MklMatMul")]


def test_traced_to_executed_skips_the_middle_stage():
    g = stages("matmul_bias_gelu_approx__onednn")
    f = only(find_fusions(g["traced"], g["executed"]))
    assert f.op == "_MklNativeFusedMatMul"
    assert f.absorbed == only(find_fusions(g["traced"], g["optimized"])).absorbed


def test_no_fusions_when_nothing_fuses():
    g = stages("batchnorm_add_relu__onednn")
    assert find_fusions(g["traced"], g["optimized"]) == []
    assert find_fusions(g["traced"], g["traced"]) == []


def test_to_dict_is_json_ready():
    g = stages("conv2d_bias_relu__onednn")
    d = only(find_fusions(g["traced"], g["optimized"])).to_dict()
    assert json.loads(json.dumps(d))["absorbed"] == ["Conv2D", "BiasAdd", "Relu"]


# ---- hand-made graphs ----------------------------------------------------------------------

def node(name, op, *inputs, fused_ops=(), control=()):
    edges = tuple(Edge(i) for i in inputs) + tuple(Edge(c, control=True) for c in control)
    return Node(name, op, inputs=edges, fused_ops=tuple(fused_ops))


def test_empty_graphs():
    assert find_fusions(Graph(), Graph()) == []
    assert find_renames(Graph(), Graph()) == []
    assert topological_order(Graph()) == {}


def test_fused_node_with_a_fresh_name():
    before = Graph((node("x", "_Arg"), node("w", "_Arg"), node("mm", "MatMul", "x", "w"), node("r", "Relu", "mm"),
                    node("out", "_Retval", "r")))
    after = Graph((node("x", "_Arg"), node("w", "_Arg"), node("fused/1", "_FusedMatMul", "x", "w", fused_ops=["Relu"]),
                   node("out", "_Retval", "fused/1")))
    f = only(find_fusions(before, after))
    assert f.root is None
    assert f.absorbed == ("mm", "r")


def test_two_chained_fusions_do_not_share_nodes():
    before = Graph((
        node("x", "_Arg"), node("w", "_Arg"),
        node("c1", "Conv2D", "x", "w"), node("r1", "Relu", "c1"),
        node("c2", "Conv2D", "r1", "w"), node("r2", "Relu", "c2"),
    ))
    after = Graph((
        node("x", "_Arg"), node("w", "_Arg"),
        node("r1", "_FusedConv2D", "x", "w", fused_ops=["Relu"]),
        node("r2", "_FusedConv2D", "r1", "w", fused_ops=["Relu"]),
    ))
    fusions = find_fusions(before, after)
    assert [(f.node, f.absorbed) for f in fusions] == [("r1", ("c1", "r1")), ("r2", ("c2", "r2"))]


def test_missing_input_and_control_edges_are_tolerated():
    before = Graph((
        node("x", "_Arg"), node("ghost_user", "Relu", "not_there"),
        node("mm", "MatMul", "x", "x", control=["ghost_user"]), node("b", "BiasAdd", "mm", "x"),
    ))
    after = Graph((node("x", "_Arg"), node("ghost_user", "Relu", "not_there"),
                   node("b", "_FusedMatMul", "x", "x", "x", fused_ops=["BiasAdd"])))
    f = only(find_fusions(before, after))
    # control inputs are not followed: ghost_user stays out
    assert f.absorbed == ("mm", "b")


def test_cycle_does_not_hang_topological_order():
    g = Graph((node("a", "Add", "b"), node("b", "Add", "a"), node("c", "Const")))
    assert sorted(topological_order(g).values()) == [0, 1, 2]


def test_existing_fused_node_is_not_new():
    g = Graph((node("x", "_Arg"), node("f", "_FusedMatMul", "x", "x", fused_ops=["BiasAdd"])))
    assert find_fusions(g, g) == []
    assert find_renames(g, g) == []


def test_unchanged_fused_node_does_not_claim_a_changed_neighbour():
    before = Graph((node("x", "_Arg"), node("f", "_FusedMatMul", "x", "x", fused_ops=["BiasAdd"]), node("p", "Pow", "x")))
    after = Graph((node("x", "_Arg"), node("f", "_FusedMatMul", "x", "x", fused_ops=["BiasAdd"]), node("p", "Mul", "x")))
    assert find_fusions(before, after) == []
    assert find_renames(before, after) == [("p", "Pow", "Mul")]


def test_a_fused_node_that_only_replaced_its_namesake_is_a_rename():
    before = Graph((node("x", "_Arg"), node("r", "Relu", "x")))
    after = Graph((node("x", "_Arg"), node("r", "_FusedRelu", "x", fused_ops=["Relu"])))
    assert find_fusions(before, after) == []
    assert find_renames(before, after) == [("r", "Relu", "_FusedRelu")]


def test_gelu_fuses_in_two_remapper_passes():
    p = {name: Graph.from_dict(g) for name, g in fixture("matmul_bias_gelu_approx__onednn")["passes"].items()}
    # pass 1: MatMul+BiasAdd, named after the BiasAdd
    first = only(find_fusions(p["remapper_0_before"], p["remapper_0_after"]))
    assert (first.node, first.op, first.fused_ops, first.absorbed) == ("BiasAdd", "_FusedMatMul", ("BiasAdd",), ("MatMul", "BiasAdd"))
    # pass 2: that _FusedMatMul and the GELU (Pow already rewritten to Square and Mul) become one
    second = only(find_fusions(p["remapper_1_before"], p["remapper_1_after"]))
    assert second.node == "Gelu/mul_3" and second.fused_ops == ("BiasAdd", "GeluApproximate")
    assert second.absorbed_ops[0] == "_FusedMatMul" and "Square" in second.absorbed_ops and "Pow" not in second.absorbed_ops
    # the constants outlive this pass (the dependency optimiser drops them later)
    assert second.consts == ()


def test_a_conv1d_fusion_in_a_frozen_graph_is_found_past_pruned_outputs_and_merged_constants():
    """A frozen Conv1D: Grappler pruned the output's Identity, merged the layer's bias with another layer's equal one
    (common subgraph elimination) and folded the Reshape and Squeeze that made it. The fusion was missed (the model
    had 2 fused kernels and its report listed 1), then listed with the bias's folded Reshape and Squeeze."""
    before = Graph((node("x", "_Arg"), node("w", "Const"), node("dim", "Const"), node("b", "Const"), node("s", "Const"),
                    node("c/ExpandDims", "ExpandDims", "x", "dim"), node("c/Reshape", "Reshape", "b", "s"),
                    node("c/Squeeze", "Squeeze", "c/Reshape"), node("c/conv", "Conv2D", "c/ExpandDims", "w"),
                    node("c/conv/Squeeze", "Squeeze", "c/conv"), node("c/BiasAdd", "BiasAdd", "c/conv/Squeeze", "c/Squeeze"),
                    node("out/Identity", "Identity", "c/BiasAdd"), node("y", "_Retval", "out/Identity")))
    after = Graph((node("x", "_Arg"), node("w", "Const"), node("dim", "Const"), node("other/bias", "Const"),
                   node("c/ExpandDims", "ExpandDims", "x", "dim"),
                   node("c/conv", "_FusedConv2D", "c/ExpandDims", "w", "other/bias", fused_ops=("BiasAdd",)),
                   node("c/BiasAdd", "Squeeze", "c/conv"), node("y", "_Retval", "c/BiasAdd")))
    f = only(find_fusions(before, after))
    assert (f.node, f.root) == ("c/conv", "c/conv")
    assert f.describe() == "Conv2D + Squeeze + BiasAdd → _FusedConv2D [BiasAdd]"


def test_the_scope_a_chain_starts_in_is_listed_op_by_op_and_a_sub_scope_of_four_is_one_part():
    def fusion(*compute):
        return Fusion("m/out", "_FusedMatMul", ("BiasAdd", "GeluExact"), tuple(n for n, _ in compute),
                      tuple(op for _, op in compute), None)

    # a tf.Module's function: every op in StatefulPartitionedCall, which is no sub-scope of the chain's
    module = fusion(*((f"StatefulPartitionedCall/{op}", op) for op in ("Conv2D", "BiasAdd", "AddV2", "Relu")))
    assert module.describe().startswith("Conv2D + BiasAdd + AddV2 + Relu → ")
    gelu = fusion(("d/MatMul", "MatMul"), ("d/BiasAdd", "BiasAdd"),
                  *((f"d/gelu/{op}_{i}", op) for i, op in enumerate(("Mul", "Erf", "AddV2", "Mul"))))
    assert gelu.describe().startswith("MatMul + BiasAdd + d/gelu (4 ops: Mul, Erf, AddV2, Mul) → ")


def test_two_fused_convolutions_in_a_row_renamed_by_onednn_are_renames_not_one_fusion():
    """oneDNN's layout pass renames each _FusedConv2D (_MklNativeFusedConv2D), keeping its name. The first, heading
    nothing absorbed upstream, had its renamed successor taken for a vanished tail: layout_fp32 with oneDNN showed
    "_FusedConv2D + _FusedConv2D → _MklNativeFusedConv2D" as a fusion when executed."""
    def graph(op):
        return Graph((node("x", "_Arg"), node("w1", "Const"), node("b1", "Const"), node("w2", "Const"),
                      node("b2", "Const"), node("c1/Relu", op, "x", "w1", "b1", fused_ops=("BiasAdd", "Relu")),
                      node("c2/Relu", op, "c1/Relu", "w2", "b2", fused_ops=("BiasAdd", "Relu")),
                      node("y", "_Retval", "c2/Relu")))

    before, after = graph("_FusedConv2D"), graph("_MklNativeFusedConv2D")
    assert find_fusions(before, after) == []
    assert [(r.name, r.old_op, r.new_op) for r in find_renames(before, after)] == [
        ("c1/Relu", "_FusedConv2D", "_MklNativeFusedConv2D"), ("c2/Relu", "_FusedConv2D", "_MklNativeFusedConv2D")]
