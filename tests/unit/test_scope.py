"""Big-graph views (analysis/scope.py, present/scope_dot.py): collapsing by name scope, search and the
fused regions, checked against the graphs they come from."""

from __future__ import annotations

import re
from collections import Counter

import pytest
from fixture_graphs import stages

from explorer.analysis import scope
from explorer.analysis.diff import diff_graphs
from explorer.model.graph import Edge, Graph, Node
from explorer.present.dot import html_id
from explorer.present.scope_dot import view_pair
from explorer.present import linked

LAYERS = 12


def _model(fused: bool) -> Graph:
    """A Keras-like function graph: LAYERS conv layers, each Conv2D+BiasAdd+Relu with its variables passed
    in as unscoped resource arguments, a constant Grappler shared across layers, a NoOp on every read."""
    nodes = [Node("args_0", "_Arg", dtype="float32"), Node("model/shared/eps", "Const")]
    prev, reads = "args_0", []
    for i in range(LAYERS):
        s = f"model/conv_{i}"
        nodes += [Node(f"model_conv_{i}_kernel_resource", "_Arg", dtype="resource"),
                  Node(f"{s}/ReadVariableOp", "ReadVariableOp", inputs=(Edge(f"model_conv_{i}_kernel_resource"),))]
        reads.append(Edge(f"{s}/ReadVariableOp", control=True))
        if fused:
            nodes.append(Node(f"{s}/Relu", "_FusedConv2D", inputs=(Edge(prev), Edge(f"{s}/ReadVariableOp"),
                                                                    Edge("model/shared/eps")),
                              fused_ops=("BiasAdd", "Relu")))
        else:
            nodes += [Node(f"{s}/Conv2D", "Conv2D", inputs=(Edge(prev), Edge(f"{s}/ReadVariableOp"))),
                      Node(f"{s}/BiasAdd", "BiasAdd", inputs=(Edge(f"{s}/Conv2D"), Edge("model/shared/eps"))),
                      Node(f"{s}/Relu", "Relu", inputs=(Edge(f"{s}/BiasAdd"),))]
        prev = f"{s}/Relu"
    nodes += [Node("model/head/dense/MatMul", "MatMul", inputs=(Edge(prev), Edge(prev))),
              Node("NoOp", "NoOp", inputs=tuple(reads)),
              Node("Identity", "Identity", inputs=(Edge("model/head/dense/MatMul"), Edge("NoOp", control=True))),
              Node("out", "_Retval", inputs=(Edge("Identity"),))]
    return Graph(tuple(nodes))


@pytest.fixture(scope="module")
def pair():
    before, after = _model(False), _model(True)
    return before, after, diff_graphs(before, after)


def test_every_node_lands_in_exactly_one_box_or_stays_itself(pair):
    before, after, diff = pair
    prefix = scope.common_prefix(before, after)
    assert prefix == ("model",)
    for g in (before, after):
        c = scope.collapse(g, scope.assign(g, prefix, 1), diff.overlay("before" if g is before else "after"))
        members = [m for box in c.boxes.values() for m in box.members]
        assert len(members) == len(set(members))  # no node in two boxes
        drawn = {n.name for n in c.graph.nodes}
        assert set(members) | (drawn - set(c.boxes)) == {n.name for n in g.nodes}
        assert not set(members) & drawn
        # one box per layer, plus the shared scope and the head; the variable handles joined their layer
        assert {b.scope for b in c.boxes.values()} == {f"model/conv_{i}" for i in range(LAYERS)} | {
            "model/shared", "model/head"}
        assert c.box_of["model_conv_3_kernel_resource"] == "model/conv_3/"
        assert sum(k for _, k in c.boxes["model/conv_0/"].ops) == len(c.boxes["model/conv_0/"].members)


def test_edges_between_boxes_count_the_original_edges(pair):
    before, _, _ = pair
    c = scope.collapse(before, scope.assign(before, ("model",), 1))
    expected, consts = Counter(), Counter()
    for n in before.nodes:
        for e in n.inputs:
            src, dst = c.drawn(e.src), c.drawn(n.name)
            if src == dst:
                continue
            if before[e.src].op == "Const":
                consts[dst] += 1
            else:
                expected[(src, dst)] += 1
    assert c.edge_counts == dict(expected)
    assert c.shared_consts == dict(consts) and consts["model/conv_5/"] == 1
    # drawn edges: one per pair (and kind), each between two drawn nodes
    drawn_edges = {(e.src, n.name) for n in c.graph.nodes for e in n.inputs}
    assert drawn_edges == set(expected)
    assert expected[("model/conv_4/", "NoOp")] == 1 and expected[("model/conv_4/", "model/conv_5/")] == 1


def test_box_status_and_the_same_boxes_on_both_sides(pair):
    before, after, diff = pair
    cb, ca = scope.collapse_pair(before, after, 1, (), (diff.overlay("before"), diff.overlay("after")))
    assert set(cb.boxes) == set(ca.boxes)
    assert cb.boxes["model/conv_2/"].status == "absorbed" and ca.boxes["model/conv_2/"].status == "fused"
    assert ca.boxes["model/conv_2/"].fused == ("_FusedConv2D[BiasAdd, Relu]",)
    assert cb.boxes["model/head/"].status == "unchanged"


def test_opening_a_scope_shows_it_one_level_deeper(pair):
    before, _, _ = pair
    opened = scope.assign(before, ("model",), 1, {"model/conv_1", "model/head"})
    assert "model/conv_1/Conv2D" not in opened and opened["model/conv_2/Conv2D"] == "model/conv_2"
    assert opened["model/head/dense/MatMul"] == "model/head/dense"  # a sub-scope is a box of its own
    assert scope.assign(before, ("model",), 2)["model/head/dense/MatMul"] == "model/head/dense"
    assert scope.max_depth(("model",), before) == 2


def test_linked_groups_join_boxes_and_fusions(pair):
    before, after, diff = pair
    drawn = view_pair(before, after, diff, "scopes")
    fusions = diff.to_dict()["fusions"]
    groups = linked.link_groups(fusions, {n.name: n.op for n in before.nodes}, {n.name: n.op for n in after.nodes},
                                None, (drawn["drawn_of"]["before"], drawn["drawn_of"]["after"]))
    box = html_id("model/conv_7/", "b-")
    assert any(g["before"] == [box] and g["after"] == [html_id("model/conv_7/", "a-")] for g in groups)
    assert any(box in g["before"] and "_FusedConv2D" in g["label"] for g in groups)
    for side, prefix in (("before", "b-"), ("after", "a-")):
        ids = set(re.findall(r'id="(fx-[^"]+)"', drawn[side]))
        assert html_id("model/conv_7/", prefix) in ids
        assert all(i in ids for g in groups for i in g[side] if "cluster" not in i)  # every link lands on a shape


def test_search_counts_match_a_direct_count():
    for name in ("matmul_bias_gelu_approx__onednn", "conv2d_bias_relu__stock"):
        for g in stages(name).values():
            for query in ("matmul", "GELU", "conv", "_fused", "BiasAdd", "zzz", " "):
                q = query.strip().lower()
                direct = [n.name for n in g.nodes if q and (q in n.name.lower() or q in n.op.lower()
                                                           or any(q in f.lower() for f in n.fused_ops))]
                assert scope.search(g, query) == direct
    assert scope.search(_model(True), "relu") == [f"model/conv_{i}/Relu" for i in range(LAYERS)]


def test_fused_region_keeps_the_fusions_their_neighbours_and_marks_what_is_left_out():
    g = stages("matmul_bias_gelu_approx__onednn")
    diff = diff_graphs(g["traced"], g["optimized"]).to_dict()
    for side, graph in (("before", g["traced"]), ("after", g["optimized"])):
        core = scope.fusion_core(diff, side)
        r = scope.region(graph, core)
        assert set(r.core) == {c for c in core if c in graph} and r.core
        neighbours = {e.src for c in r.core for e in graph[c].inputs} | {
            dst for c in r.core for dst, _ in graph.consumers()[c]}
        assert set(r.context) == neighbours - set(r.core)
        consumers = graph.consumers()
        for marker, k in r.elided.items():
            name, direction = marker.rsplit(" ⋯", 1)
            shown = set(r.core) | set(r.context)
            if direction == "in":
                assert k == sum(1 for e in graph[name].inputs if e.src not in shown)
            else:
                assert k == sum(1 for dst, _ in consumers[name] if dst not in shown)
        real = [n for n in r.graph.nodes if n.op != scope.ELIDED_OP]
        assert len(real) == len(r.core) + len(r.context)


def test_a_lone_scope_is_a_box_not_a_prefix():
    g = stages("matmul_bias_gelu_approx__onednn")
    before, after = g["traced"], g["optimized"]
    assert scope.common_prefix(before, after) == ()
    c = scope.collapse(before, scope.assign(before, (), 1))
    assert "Gelu/" in c.boxes and "MatMul" in {n.name for n in c.graph.nodes}


def test_a_node_waiting_on_many_control_inputs_counts_them_instead_of_drawing_them():
    from explorer.present.dot import MAX_CONTROL_FANIN, to_dot

    k = MAX_CONTROL_FANIN + 4
    reads = [Node(f"read_{i}", "Relu", inputs=(Edge("x"),)) for i in range(k)]
    g = Graph((Node("x", "_Arg"), *reads, Node("NoOp", "NoOp", inputs=tuple(Edge(r.name, control=True) for r in reads)),
               Node("y", "Relu", inputs=(Edge("x"), Edge("read_0", control=True)))))
    dot = to_dot(g)
    assert f"+{k} control inputs (not drawn)" in dot
    assert dot.count("fx-control") == 1  # only y's single control edge is drawn
    assert dot.count("fx-edge") == k + 2  # x -> each read, x -> y, and that control edge


def test_an_inlined_loops_plumbing_goes_in_its_layers_box():
    # TensorFlow names the Identity/NoOp nodes that inlining puts around a call "Func/<call>/input/_N": a Keras
    # LSTM's lowered loop has dozens, which drew as loose nodes around the layer's box
    body = "call/model/lstm/while/body/_5"
    g = Graph((Node("args_0", "_Arg"), Node("Func/call/input/_0", "Identity", inputs=(Edge("args_0"),)),
               Node(f"Func/{body}/input/_9", "Identity", inputs=(Edge("Func/call/input/_0"),)),
               Node(f"{body}/model/lstm/while/MatMul", "MatMul", inputs=(Edge(f"Func/{body}/input/_9"),)),
               Node(f"Func/{body}/output_control_node/_12", "NoOp",
                    inputs=(Edge(f"{body}/model/lstm/while/MatMul", control=True),)),
               Node("call/model/dense/MatMul", "MatMul", inputs=(Edge(f"{body}/model/lstm/while/MatMul"),))))
    prefix = scope.common_prefix(g)
    assert prefix == ("call", "model")
    boxes = scope.assign(g, prefix, 1)
    assert boxes[f"Func/{body}/input/_9"] == boxes[f"Func/{body}/output_control_node/_12"] == "call/model/lstm"
    assert "Func/call/input/_0" not in boxes  # the model's own inputs pass outside every layer
    assert scope.scope_path("Func/x/input_data/_3") == ("Func", "x", "input_data")  # not TensorFlow's plumbing
