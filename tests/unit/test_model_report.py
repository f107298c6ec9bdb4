"""The whole-model report: fusions by pattern, near-misses (each a real chain of the graph), totals."""

from __future__ import annotations

import pytest
from fixture_graphs import FIXTURES, fixture, stages

from explorer.analysis.fusion import Fusion, find_fusions
from explorer.analysis.model_report import fusion_rows, layer_of, report, tensor_bytes
from explorer.analysis.near_miss import Where, apply_checks, near_misses
from explorer.present.text import report_lines
from explorer.model.graph import Edge, Graph, Node

ALL = sorted(p.stem for p in FIXTURES.glob("*.json"))


def report_of(name: str) -> dict:
    g = stages(name)
    return report(g, find_fusions(g["traced"], g["optimized"]), Where(onednn=bool(fixture(name)["fingerprint"].get("onednn"))))


def node(name, op, *inputs, shape="", dtype="float32", fused=()):
    return Node(name, op, dtype=dtype, inputs=tuple(Edge(i) for i in inputs), shape=shape, fused_ops=tuple(fused))


def test_the_gelu_left_outside_without_onednn_is_a_near_miss_with_its_fix():
    r = report_of("matmul_bias_gelu_approx__stock")
    assert [(row["fused"], row["count"]) for row in r["fusions"]] == [("_FusedMatMul [BiasAdd]", 1)]
    (miss,) = r["near_misses"]
    assert miss["kind"] == "gelu-left-out" and "approximate" in miss["form"]
    onednn = [{"kind": "env", "name": "TF_ENABLE_ONEDNN_OPTS", "value": "1"}]
    # The rules' setting is a candidate only: nothing is offered before a run has fused the chain.
    assert miss["candidates"] == [onednn] and miss["changes"] == [] and miss["verified"] is None
    fused = {"node": miss["nodes"][1], "op": "_FusedMatMul", "fused_ops": ["BiasAdd", "GeluApproximate"],
             "absorbed": [miss["nodes"][0], miss["nodes"][1]]}
    (verified,) = apply_checks([miss], [(onednn, [fused])])
    assert verified["verified"] is True and verified["changes"] == [onednn]
    assert verified["fix"].startswith("set TF_ENABLE_ONEDNN_OPTS=1")
    assert verified["fused_with_fix"] == "_FusedMatMul [BiasAdd, GeluApproximate]"
    (refuted,) = apply_checks([miss], [(onednn, [])])  # the run left it unfused: no setting is offered
    assert refuted["verified"] is False and refuted["changes"] == [] and "no setting fuses it here" in refuted["fix"]


def test_a_fully_fused_model_has_no_near_miss_and_counts_its_kernels():
    r = report_of("matmul_bias_gelu_approx__onednn")
    assert r["near_misses"] == []
    assert r["fusions"][0]["fused"] == "_FusedMatMul [BiasAdd, GeluApproximate]"
    assert "Gelu" in r["fusions"][0]["layers"]
    assert r["totals"]["fused_kernels"] == 1 and r["totals"]["ops_optimized"] == 1
    assert r["totals"]["ops_traced"] == 10


def test_a_fusions_layers_are_the_outermost_scopes_of_what_it_absorbed():
    # A Keras Conv1D: its Conv2D sits in conv1d/convolution, its BiasAdd in conv1d; a Dense's GELU in dense/Gelu.
    def fusion(node, *absorbed):
        return Fusion(node, "_FusedConv2D", ("BiasAdd",), tuple(n for n, _ in absorbed), tuple(o for _, o in absorbed),
                      None)
    conv1d = fusion("m/conv1d/BiasAdd", ("m/conv1d/convolution/Conv2D", "Conv2D"),
                    ("m/conv1d/convolution/Squeeze", "Squeeze"), ("m/conv1d/BiasAdd", "BiasAdd"))
    across = fusion("m/re_lu/Relu", ("m/conv2d/Conv2D", "Conv2D"), ("m/conv2d_bias", "BiasAdd"),
                    ("m/re_lu/Relu", "Relu"))
    dense = fusion("m/dense/Gelu/mul_1", ("m/dense/MatMul", "MatMul"), ("m/dense/BiasAdd", "BiasAdd"),
                   ("m/dense/Gelu/mul_1", "Mul"))
    rows = fusion_rows([conv1d, dense])
    assert [row["layers"] for row in rows] == [["m/conv1d", "m/dense"]]
    # A model's only fusion too (its layer is no scope every fused op shares above the layers)
    (row,) = fusion_rows([conv1d])
    assert row["layers"] == ["m/conv1d"]
    # An op in the scope every fused op shares (here m, the model's) is no layer holding the others.
    (row,) = fusion_rows([across])
    assert row["layers"] == ["m", "m/conv2d", "m/re_lu"]


@pytest.mark.parametrize("name", ALL)
def test_every_near_miss_is_a_real_chain_of_the_graph(name):
    g = stages(name)
    for miss in report_of(name)["near_misses"]:
        nodes = [g["optimized"][n] for n in miss["nodes"]]  # each named node exists
        for upstream, downstream in zip(nodes, nodes[1:]):  # and each reads the one before it
            assert any(e.src == upstream.name for e in downstream.data_inputs), (name, miss)


def test_a_dense_on_a_3d_input_is_a_reshape_between_matmul_and_bias():
    graph = Graph((node("x", "_Arg", shape="[2,8,16]"), node("w", "_Arg", shape="[16,4]"), node("b", "_Arg", shape="[4]"),
                   node("dense/Reshape", "Reshape", "x"), node("dense/MatMul", "MatMul", "dense/Reshape", "w"),
                   node("dense/Reshape_1", "Reshape", "dense/MatMul"),
                   node("dense/BiasAdd", "BiasAdd", "dense/Reshape_1", "b"), node("out", "_Retval", "dense/BiasAdd")))
    (miss,) = near_misses(graph, Where(onednn=True))
    assert miss["kind"] == "reshape-before-bias" and miss["nodes"] == ["dense/MatMul", "dense/Reshape_1", "dense/BiasAdd"]
    assert "2-D" in miss["fix"]


def test_a_dense_gelu_on_a_4d_input_names_the_gelu_left_outside_too():
    """Keras 3's Dense(activation="gelu") on a 4-D tensor: the Reshape was named, the GELU after the bias was not,
    and the advised change (a 2-D Dense) fuses [BiasAdd, GeluExact] in TensorFlow."""
    graph = Graph((node("x", "_Arg", shape="[2,4,8,16]"), node("w", "_Arg", shape="[16,4]"), node("b", "_Arg", shape="[4]"),
                   node("c", "Const", shape="[]"), node("d/Reshape", "Reshape", "x"),
                   node("d/MatMul", "MatMul", "d/Reshape", "w"), node("d/Reshape_1", "Reshape", "d/MatMul"),
                   node("d/BiasAdd", "BiasAdd", "d/Reshape_1", "b"), node("d/gelu/truediv", "RealDiv", "d/BiasAdd", "c"),
                   node("d/gelu/Erf", "Erf", "d/gelu/truediv"), node("d/gelu/add", "AddV2", "d/gelu/Erf", "c"),
                   node("d/gelu/mul", "Mul", "c", "d/BiasAdd"), node("d/gelu/mul_1", "Mul", "d/gelu/mul", "d/gelu/add"),
                   node("out", "_Retval", "d/gelu/mul_1")))
    (miss,) = near_misses(graph, Where(onednn=True))
    assert miss["kind"] == "reshape-before-bias" and miss["chain"] == "MatMul + BiasAdd + GELU"
    assert miss["nodes"][:3] == ["d/MatMul", "d/Reshape_1", "d/BiasAdd"]
    assert set(miss["nodes"][3:]) == {"d/gelu/truediv", "d/gelu/Erf", "d/gelu/add", "d/gelu/mul", "d/gelu/mul_1"}
    assert "a GELU, exact (Erf)" in miss["form"] and "left outside as well" in miss["form"]
    assert "2-D" in miss["fix"] and "GELU then follows the bias" in miss["fix"]
    # and a ReLU after the bias is named the same way
    relu = Graph(tuple(n for n in graph.nodes if not n.name.startswith(("d/gelu", "out")))
                 + (node("d/Relu", "Relu", "d/BiasAdd"), node("out", "_Retval", "d/Relu")))
    (miss,) = near_misses(relu, Where(onednn=True))
    assert miss["nodes"] == ["d/MatMul", "d/Reshape_1", "d/BiasAdd", "d/Relu"] and miss["chain"] == "MatMul + BiasAdd + Relu"


def test_a_batch_norm_in_float32_between_casts_is_named_with_them():
    """Keras's mixed-precision policies compute a batch norm in float32: bfloat16 Conv2D → Cast → Mul → AddV2 → Cast
    back. MobileNetV2 in bfloat16 left 52 contractions unfused with no near-miss named."""
    graph = Graph((node("x", "_Arg", shape="[1,8,8,4]", dtype="bfloat16"), node("w", "_Arg", shape="[1,1,4,4]", dtype="bfloat16"),
                   node("t", "Const", shape="[4]"), node("v", "_Arg", shape="[4]"), node("bn/Rsqrt", "Rsqrt", "v"),
                   node("conv", "Conv2D", "x", "w", shape="[1,8,8,4]", dtype="bfloat16"),
                   node("bn/Cast", "Cast", "conv", dtype="float32"), node("bn/mul", "Mul", "bn/Cast", "bn/Rsqrt"),
                   node("bn/add", "AddV2", "bn/mul", "t"), node("bn/Cast_1", "Cast", "bn/add", dtype="bfloat16"),
                   node("relu", "Relu", "bn/Cast_1", dtype="bfloat16"), node("out", "_Retval", "relu")))
    (miss,) = near_misses(graph, Where(onednn=True))
    assert miss["kind"] == "batchnorm-as-arithmetic"
    assert miss["nodes"] == ["conv", "bn/Cast", "bn/mul", "bn/add", "bn/Cast_1"]
    assert miss["form"].startswith("Conv2D → Cast to float32 → batch norm written as arithmetic (AddV2, Mul) → Cast back "
                                   "to bfloat16: a BatchNormalization under a mixed-precision policy")
    assert "no Cast between the Conv2D and the batch norm" in miss["needs"] and "fold the batch norm" in miss["fix"]


@pytest.mark.parametrize("onednn", [True, False])
def test_the_pattern_itself_left_unfused_for_its_dtype_is_named_with_the_reason(onednn):
    """Keras's mixed_float16 policy on a CPU: Conv2D → BiasAdd → Relu in float16 stayed unfused and the report named
    no near-miss, only "Contractions left unfused"."""
    def graph(dtype):
        return Graph((node("x", "_Arg", shape="[1,8,8,4]", dtype=dtype), node("w", "_Arg", shape="[3,3,4,4]", dtype=dtype),
                      node("b", "_Arg", shape="[4]", dtype=dtype), node("conv", "Conv2D", "x", "w", dtype=dtype),
                      node("bias", "BiasAdd", "conv", "b", dtype=dtype), node("relu", "Relu", "bias", dtype=dtype),
                      node("out", "_Retval", "relu")))
    (miss,) = near_misses(graph("float16"), Where(onednn=onednn))
    assert miss["kind"] == "unfused-pattern" and miss["nodes"] == ["conv", "bias", "relu"]
    assert miss["chain"] == "Conv2D + BiasAdd + Relu" and "in float16: the remapper's own pattern" in miss["form"]
    assert "float16" in miss["needs"]
    # No setting is a candidate: without oneDNN a Conv2D fuses in float32 or float64 only, and oneDNN cannot run
    # float16 on a CPU without AVX512-FP16 (the flip was offered, and each run came back unfused)
    assert miss["candidates"] == [] and miss["code_change"] == "use float32"
    # bfloat16 without oneDNN, on a CPU with AVX-512: oneDNN is the way round, and the run to check it is asked for
    (bf16,) = near_misses(graph("bfloat16"), Where(onednn=False, cpu_flags={"avx512f"}))
    assert bf16["candidates"] == [[{"kind": "env", "name": "TF_ENABLE_ONEDNN_OPTS", "value": "1"}]]
    assert near_misses(graph("bfloat16"), Where(onednn=True, cpu_flags={"avx512f"})) == []  # fuses there
    # float32 fuses: nothing to name; with the remapper switched off nothing fuses, by the user's choice
    assert near_misses(graph("float32"), Where(onednn=onednn)) == []
    assert near_misses(graph("float16"), Where(onednn=onednn, switches={"remapping": "off"})) == []


def test_a_gelu_ends_where_another_tensor_comes_in():
    """A Transformer's MLP: the residual add after the GELU (it reads the block's input) and the layer norm after
    that were listed as ops of the GELU."""
    graph = Graph((node("x", "_Arg", shape="[2,8,16]"), node("w", "_Arg", shape="[16,16]"), node("b", "_Arg", shape="[16]"),
                   node("c", "Const", shape="[]"), node("d/Reshape", "Reshape", "x"),
                   node("d/MatMul", "MatMul", "d/Reshape", "w"), node("d/Reshape_1", "Reshape", "d/MatMul"),
                   node("d/BiasAdd", "BiasAdd", "d/Reshape_1", "b"), node("d/gelu/Neg", "Neg", "d/BiasAdd"),
                   node("d/gelu/mul", "Mul", "d/gelu/Neg", "c"), node("d/gelu/Erfc", "Erfc", "d/gelu/mul"),
                   node("d/gelu/mul_1", "Mul", "c", "d/BiasAdd"), node("d/gelu/mul_2", "Mul", "d/gelu/mul_1", "d/gelu/Erfc"),
                   node("add", "AddV2", "x", "d/gelu/mul_2"), node("norm/mul", "Mul", "add", "c"),
                   node("out", "_Retval", "norm/mul")))
    (miss,) = near_misses(graph, Where(onednn=True))
    assert miss["chain"] == "MatMul + BiasAdd + GELU"
    assert set(miss["nodes"][3:]) == {"d/gelu/Neg", "d/gelu/mul", "d/gelu/Erfc", "d/gelu/mul_1", "d/gelu/mul_2"}


def test_a_bias_added_with_add_and_a_batch_norm_as_arithmetic_are_named():
    graph = Graph((node("x", "_Arg", shape="[1,8,8,4]"), node("w", "_Arg", shape="[1,1,4,4]"),
                   node("b", "_Arg", shape="[4]"), node("v", "_Arg", shape="[4]"),
                   node("mm", "MatMul", "x", "w"), node("bias", "AddV2", "mm", "b"),
                   node("conv", "Conv2D", "x", "w"), node("bn/Rsqrt", "Rsqrt", "v"), node("bn/mul", "Mul", "conv", "bn/Rsqrt"),
                   node("bn/add", "AddV2", "bn/mul", "b"), node("relu", "Relu", "bn/add")))
    kinds = {m["kind"]: m for m in near_misses(graph, Where(onednn=False))}
    assert kinds["bias-as-add"]["nodes"] == ["mm", "bias"] and kinds["bias-as-add"]["fix"] == "use tf.nn.bias_add"
    assert kinds["bias-as-add"]["candidates"] == [[{"kind": "env", "name": "TF_ENABLE_ONEDNN_OPTS", "value": "1"}]]
    assert kinds["batchnorm-as-arithmetic"]["nodes"][:2] == ["conv", "bn/mul"]
    assert "FusedBatchNormV3" in kinds["batchnorm-as-arithmetic"]["needs"]


def test_bytes_no_longer_written_come_from_shapes_and_dtypes():
    assert tensor_bytes(node("a", "Mul", shape="[64,256]")) == 64 * 256 * 4
    assert tensor_bytes(node("a", "Mul", shape="[64,-1]")) is None
    assert tensor_bytes(node("a", "Mul", shape="", dtype="float32")) is None
    traced = Graph((node("x", "_Arg", shape="[8,4]"), node("w", "_Arg", shape="[4,4]"), node("b", "_Arg", shape="[4]"),
                    node("MatMul", "MatMul", "x", "w", shape="[8,4]"), node("BiasAdd", "BiasAdd", "MatMul", "b", shape="[8,4]"),
                    node("Relu", "Relu", "BiasAdd", shape="[8,4]")))
    optimized = Graph((node("x", "_Arg"), node("w", "_Arg"), node("b", "_Arg"),
                       node("Relu", "_FusedMatMul", "x", "w", "b", fused=("BiasAdd", "Relu"))))
    r = report({"traced": traced, "optimized": optimized}, find_fusions(traced, optimized), Where(onednn=False))
    assert r["totals"]["intermediate_bytes_saved"] == 2 * 8 * 4 * 4  # MatMul's and BiasAdd's outputs; Relu's is written


def test_a_zero_bias_folded_away_is_not_advised_as_a_missing_bias():
    traced = Graph((node("x", "_Arg", shape="[1,8,8,4]"), node("w", "Const", shape="[1,1,4,4]"),
                    node("b", "Const", shape="[4]"), node("conv", "Conv2D", "x", "w"),
                    node("conv/BiasAdd", "BiasAdd", "conv", "b"), node("relu", "Relu", "conv/BiasAdd")))
    optimized = Graph((node("x", "_Arg", shape="[1,8,8,4]"), node("w", "Const", shape="[1,1,4,4]"),
                       node("conv", "Conv2D", "x", "w"), node("relu", "Relu", "conv")))
    (miss,) = near_misses(optimized, Where(onednn=True), traced)
    assert miss["kind"] == "activation-without-bias" and "all zeros" in miss["form"]
    assert "use_bias" not in miss["fix"]


def test_a_frozen_batch_norm_after_a_bias_is_named():
    graph = Graph((node("x", "_Arg", shape="[1,8,8,4]"), node("w", "Const", shape="[1,1,4,4]"),
                   node("b", "Const", shape="[4]"), node("s", "Const", shape="[4]"), node("t", "Const", shape="[4]"),
                   node("conv2/BiasAdd", "_FusedConv2D", "x", "w", "b", fused=("BiasAdd",)),
                   node("bn/mul", "Mul", "conv2/BiasAdd", "s"), node("bn/add", "AddV2", "bn/mul", "t"),
                   node("relu", "Relu", "bn/add")))
    (miss,) = near_misses(graph, Where(onednn=False))
    assert miss["kind"] == "batchnorm-as-arithmetic" and miss["after_fused"]
    assert miss["nodes"] == ["conv2/BiasAdd", "bn/mul", "bn/add"]


def test_the_page_says_whether_each_fix_was_checked_and_what_xla_must_compile():
    from explorer.ui.report import checked_words, checks_caption, must_compile_table

    (miss,) = report_of("matmul_bias_gelu_approx__stock")["near_misses"]
    onednn = [{"kind": "env", "name": "TF_ENABLE_ONEDNN_OPTS", "value": "1"}]
    fused = {"node": miss["nodes"][1], "op": "_FusedMatMul", "fused_ops": ["BiasAdd", "GeluApproximate"],
             "absorbed": miss["nodes"][:2]}
    (verified,), (refuted,) = apply_checks([miss], [(onednn, [fused])]), apply_checks([miss], [(onednn, [])])
    assert checked_words(verified) == ("✓ verified: ran TF_ENABLE_ONEDNN_OPTS=1 here, it fused into "
                                       "_FusedMatMul [BiasAdd, GeluApproximate]")
    assert checked_words(refuted) == "✗ no setting fuses it: ran TF_ENABLE_ONEDNN_OPTS=1, left unfused"
    assert checked_words(miss).startswith("? not run")  # a candidate never run
    assert checked_words(dict(miss, candidates=[], verified=False)).startswith("— no setting applies")
    caption = checks_caption({"configurations": [{"config": {"device": "cpu", "env": {"TF_ENABLE_ONEDNN_OPTS": "1"}},
                                                  "fused_kernels": 3}], "limit": 3, "verified": 1, "offered": 1})
    assert "cpu with TF_ENABLE_ONEDNN_OPTS=1: 3 fused kernels" in caption and "1 near-miss fused" in caption
    clusters = [{"cluster": "conv/call", "function": "f_1", "kind": "must-compile",
                 "ops": [{"name": "conv/call/a", "op": "Conv2D"}, {"name": "conv/call/b", "op": "Conv2D"},
                         {"name": "conv/call/c", "op": "Split"}]},
                {"cluster": "cluster_0", "kind": "auto", "ops": []}]
    assert must_compile_table({"xla_clusters": clusters}) == [
        {"call node": "conv/call", "function": "f_1", "ops": 3, "op types": "Conv2D ×2, Split"}]


def test_the_distinct_fixes_are_listed_whole_most_near_misses_first():
    from explorer.ui.report import fix_groups

    rows = ([{"fix": "fold the batch norm", "layer": f"block_{i}"} for i in range(6)]
            + [{"fix": "fold the batch norm", "layer": "block_0"}]
            + [{"fix": "use BiasAdd", "layer": "dense`x"}])
    lines = fix_groups(rows)
    assert lines == ["**7 near-misses** (`block_0`, `block_1`, `block_2`, `block_3` and 2 more): fold the batch norm",
                     "**1 near-miss** (`densex`): use BiasAdd"]
    many = [{"fix": f"fix {i}", "layer": "l"} for i in range(9)]
    assert fix_groups(many, limit=6)[-1] == "… and 3 other fixes (in the table and the CSV)"


def test_a_node_of_an_inlined_loop_body_is_in_its_loops_layer():
    # TensorFlow names an inlined body's node "<loop>/body/_56/<its own name>", its own name repeating the loop's
    # path: a GRU's fusion was listed as in "…/gru_1/while/body/_56/functional_1/gru_1/while/gru_cell_1"
    body = "StatefulPartitionedCall/functional_1/gru_1/while/body/_56/functional_1/gru_1/while/gru_cell_1/MatMul"
    assert layer_of(body) == "StatefulPartitionedCall/functional_1/gru_1/while/gru_cell_1"
    assert layer_of("StatefulPartitionedCall/cond/then/_33/cond/BiasAdd") == "StatefulPartitionedCall/cond"
    assert layer_of("model/dense/MatMul") == "model/dense" and layer_of("MatMul") == "MatMul"
    assert layer_of("model/body/_block/MatMul") == "model/body/_block"  # a scope named "body" is not a loop's


def norm_by_moments(axes: str, shape: str) -> Graph:
    """Mean, SquaredDifference, Mean, Rsqrt, Mul, Sub, AddV2 over ``axes``, as tf.nn.moments and Keras write them."""
    return Graph((node("x", "_Arg", shape=shape), Node("n/axes", "Const", attrs=(("value", axes),)),
                  node("n/moments/mean", "Mean", "x", "n/axes"),
                  node("n/moments/SquaredDifference", "SquaredDifference", "x", "n/moments/mean"),
                  node("n/moments/variance", "Mean", "n/moments/SquaredDifference", "n/axes"),
                  node("n/Rsqrt", "Rsqrt", "n/moments/variance"), node("n/mul", "Mul", "x", "n/Rsqrt"),
                  node("n/sub", "Sub", "n/moments/mean", "n/mul"), node("n/add", "AddV2", "n/mul", "n/sub"),
                  node("out", "_Retval", "n/add")))


def test_only_a_normalisation_over_the_last_axes_is_a_layer_norm_near_miss():
    # a GroupNormalization (rank 5, axes [1, 2, 4]) was named a LayerNormalization near-miss, with the advice to
    # write it over the last axis: that computes another normalisation
    (miss,) = near_misses(norm_by_moments("[2]", "[2,8,16]"), Where(onednn=True))
    assert miss["kind"] == "layernorm-as-arithmetic" and "axes=[rank-1]" in miss["fix"]
    (flatten,) = near_misses(norm_by_moments("[1, 2, 3]", "[2,4,4,8]"), Where(onednn=True))
    assert "one reduction axis (here [1, 2, 3])" in flatten["needs"] and "reshape the normalised axes" in flatten["fix"]
    for axes, shape in (("[1, 2, 4]", "[2,4,4,2,4]"), ("[1, 2]", "[2,4,4,8]")):  # group norm, instance norm
        assert not [m for m in near_misses(norm_by_moments(axes, shape), Where(onednn=True))
                    if m["kind"] == "layernorm-as-arithmetic"], axes


@pytest.mark.parametrize("layout,named", [("NCHW", True), ("NHWC", False)])
def test_a_batch_norm_is_per_channel_along_its_convolutions_channels(layout, named):
    """Keras's channels-first BatchNormalization(axis=1) scales and shifts by [1, C, 1, 1] tensors computed from its
    statistics: per channel after an NCHW Conv2D, and along the height (no batch norm) after an NHWC one."""
    conv = Node("conv", "Conv2D", inputs=(Edge("x"), Edge("w")), shape="[1,4,8,8]", attrs=(("data_format", layout),))
    graph = Graph((node("x", "_Arg", shape="[1,3,8,8]"), node("w", "_Arg", shape="[3,3,3,4]"),
                   node("v", "_Arg", shape="[1,4,1,1]"), node("m", "_Arg", shape="[1,4,1,1]"),
                   node("g", "_Arg", shape="[1,4,1,1]"), node("beta", "_Arg", shape="[1,4,1,1]"), conv,
                   node("bn/Rsqrt", "Rsqrt", "v", shape="[1,4,1,1]"), node("bn/mul", "Mul", "g", "bn/Rsqrt", shape="[1,4,1,1]"),
                   node("bn/mul_1", "Mul", "conv", "bn/mul", shape="[1,4,8,8]"),
                   node("bn/mul_2", "Mul", "m", "bn/mul", shape="[1,4,1,1]"),
                   node("bn/sub", "Sub", "beta", "bn/mul_2", shape="[1,4,1,1]"),
                   node("bn/add_1", "AddV2", "bn/mul_1", "bn/sub", shape="[1,4,8,8]"), node("relu", "Relu", "bn/add_1")))
    kinds = [m["kind"] for m in near_misses(graph, Where(onednn=True))]
    assert ("batchnorm-as-arithmetic" in kinds) is named


def test_a_sigmoid_gate_after_a_fused_convolution_is_not_told_to_become_a_relu():
    graph = Graph((node("x", "_Arg", shape="[1,8,8,4]"), node("w", "_Arg", shape="[1,1,4,4]"), node("b", "_Arg", shape="[4]"),
                   node("se/conv", "_FusedConv2D", "x", "w", "b", shape="[1,8,8,4]", fused=("BiasAdd",)),
                   node("se/sigmoid", "Sigmoid", "se/conv", shape="[1,8,8,4]"), node("out", "Mul", "x", "se/sigmoid")))
    (miss,) = [m for m in near_misses(graph, Where(onednn=True)) if m["kind"] == "activation-left-out"]
    assert "XLA" in miss["fix"] and "a model with Relu, Relu6 or Elu there instead" in miss["fix"]
    assert "use MatMul or Relu" not in miss["fix"] and "MatMul + Sigmoid with oneDNN" in miss["needs"]


def conv1d_graph(kernel: str) -> Graph:
    """A Conv1D + ReLU and a Conv1D + batch norm + ReLU as a simulated GPU's graph holds them: unfused, and no shape
    recorded but the filters' (Conv2D → Squeeze → BiasAdd → ...)."""
    nodes = [node("x", "_Arg"), node("w", "_Arg", shape=kernel), node("b", "_Arg"),
             node("c1", "Conv2D", "x", "w"), node("s1", "Squeeze", "c1"), node("b1", "BiasAdd", "s1", "b"),
             node("r1", "Relu", "b1"),
             node("c2", "Conv2D", "r1", "w"), node("s2", "Squeeze", "c2"), node("b2", "BiasAdd", "s2", "b"),
             node("v", "_Arg"), node("g", "_Arg"), node("m", "_Arg"), node("beta", "_Arg"),
             node("bn/Rsqrt", "Rsqrt", "v"), node("bn/mul", "Mul", "g", "bn/Rsqrt"),
             node("bn/mul_1", "Mul", "b2", "bn/mul"), node("bn/mul_2", "Mul", "m", "bn/mul"),
             node("bn/sub", "Sub", "beta", "bn/mul_2"), node("bn/add_1", "AddV2", "bn/mul_1", "bn/sub"),
             node("r2", "Relu", "bn/add_1"), node("out", "_Retval", "r2")]
    return Graph(tuple(nodes))


def test_on_a_gpu_a_conv1ds_relu_and_batch_norm_are_named_from_the_graphs_ops():
    """cuDNN fuses Conv2D + BiasAdd + Relu for a spatial filter: a Conv1D's 1×5 is one (the checklist's filter size
    was taken as 1×1 for every imported or stacked Conv2D, so no near-miss was named), a 1×1 is not. The batch norm's
    shift is three ops from its Rsqrt: per channel where the graph records no shapes."""
    gpu = Where(device="gpu-sim:ampere")
    kinds = {m["nodes"][0]: m["kind"] for m in near_misses(conv1d_graph("[1,5,8,8]"), gpu)}
    assert kinds == {"c1": "activation-after-squeeze", "c2": "batchnorm-as-arithmetic"}
    assert "c1" not in {m["nodes"][0] for m in near_misses(conv1d_graph("[1,1,8,8]"), gpu)}


def test_a_recurrent_cells_sum_of_two_products_is_said_why_it_stays_unfused():
    """An LSTM cell's z = x·W + h·U + b (Keras 3): the bias follows the sum of the two products, which no remapper
    pattern takes. No near-miss is named (the form that fuses measured slower with oneDNN), but the unfused
    contractions say why; a bare product read by anything else says nothing."""
    graph = Graph((node("x", "_Arg", shape="[1,32]"), node("h", "_Arg", shape="[1,32]"), node("w", "_Arg", shape="[32,128]"),
                   node("b", "_Arg", shape="[128]"), node("xw", "MatMul", "x", "w"), node("hu", "MatMul", "h", "w"),
                   node("z", "AddV2", "xw", "hu"), node("zb", "AddV2", "z", "b"), node("gate", "Sigmoid", "zb"),
                   node("out", "MatMul", "gate", "w"), node("sq", "Square", "out")))
    built = report({"optimized": graph}, [], Where(onednn=True))
    assert built["near_misses"] == []
    assert built["totals"]["contractions_unfused"] == {"MatMul": 3}
    (why,) = built["totals"]["contractions_unfused_why"].items()
    assert why[0].startswith("summed with another product before any bias") and why[1] == 2
    assert "  2 of them summed with another product" in "\n".join(report_lines(built))
