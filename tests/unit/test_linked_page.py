"""The linked before/after view as a document: links from the engine's fusions, nothing from a name left unescaped."""

from __future__ import annotations

import json
import re

from explorer.analysis.diff import diff_graphs
from explorer.model.graph import Edge, Graph, Node
from explorer.present.dot import html_id, to_dot
from explorer.present.svg import to_svg
from explorer.present import linked

EVIL = '</script><script>alert("x")</script>&<b>'


def _graphs(root: str = "relu"):
    before = Graph((
        Node("x", "_Arg"), Node("w", "_Arg"), Node("b", "_Arg"),
        Node("mm", "MatMul", inputs=(Edge("x"), Edge("w"))),
        Node("ba", "BiasAdd", inputs=(Edge("mm"), Edge("b"))),
        Node(root, "Relu", inputs=(Edge("ba"),)),
        Node("out", "_Retval", inputs=(Edge(root),)),
    ))
    after = Graph((
        Node("x", "_Arg"), Node("w", "_Arg"), Node("b", "_Arg"),
        Node(root, "_FusedMatMul", inputs=(Edge("x"), Edge("w"), Edge("b")), fused_ops=("BiasAdd", "Relu")),
        Node("out", "_Retval", inputs=(Edge(root),)),
    ))
    return before, after


def test_groups_link_a_fusion_to_what_it_absorbed_and_namesakes_to_each_other():
    before, after = _graphs()
    diff = diff_graphs(before, after)
    fusions = diff.to_dict()["fusions"]
    groups = linked.link_groups(fusions, [n.name for n in before.nodes], [n.name for n in after.nodes],
                                [f["node"] for f in fusions])
    fusion = groups[0]
    assert set(fusion["before"]) == {html_id(n, "b-") for n in ("mm", "ba", "relu")} | {"fx-b-cluster-0"}
    assert fusion["after"] == [html_id("relu", "a-"), "fx-a-cluster-0"]
    assert "_FusedMatMul [BiasAdd, Relu]" in fusion["label"]
    namesakes = {g["before"][0]: g["after"][0] for g in groups[1:]}
    assert namesakes[html_id("x", "b-")] == html_id("x", "a-")
    assert html_id("relu", "b-") not in namesakes  # it belongs to the fusion


def test_a_renamed_kernel_is_labelled_with_both_ops():
    before = {"mm": "_FusedMatMul", "x": "_Arg"}
    after = {"mm": "_MklNativeFusedMatMul", "x": "_Arg"}
    labels = {g["before"][0]: g["label"] for g in linked.link_groups([], before, after)}
    assert labels[html_id("mm", "b-")] == "mm: _FusedMatMul → _MklNativeFusedMatMul"
    assert labels[html_id("x", "b-")] == "x: the same node on both sides"


def test_script_json_cannot_close_the_script():
    text = linked.script_json([{"label": EVIL, "before": [], "after": []}])
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text)[0]["label"] == EVIL


def test_a_hostile_node_name_stays_text_in_the_page():
    # Graphviz is part of the set-up (./dev.sh installs it), as in test_render: no `dot` fails here.
    before, after = _graphs(root=EVIL)
    diff = diff_graphs(before, after)
    fusions = diff.to_dict()["fusions"]
    svgs = [to_svg(to_dot(g, diff.overlay(side), clusters=diff.clusters(side), id_prefix=prefix))
            for g, side, prefix in ((before, "before", "b-"), (after, "after", "a-"))]
    groups = linked.link_groups(fusions, [n.name for n in before.nodes], [n.name for n in after.nodes],
                                [f["node"] for f in fusions])
    page = linked.page_html(svgs[0], svgs[1], groups)
    assert page.count("<script") == 2 and page.count("</script>") == 2  # only the page's own two
    assert "alert(" in page  # the name is there, as text
    assert not re.search(r"<script>alert", page)
    # the element ids the links name are the ones the drawing has
    ids = set(re.findall(r'id="([^"]+)"', page.replace("&#45;", "-")))
    assert html_id(EVIL, "a-") in ids and html_id("mm", "b-") in ids
