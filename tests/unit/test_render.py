"""render.to_dot / legend / to_svg: escaping, edges, folding, clusters, determinism; DOT parses and lays out."""

from __future__ import annotations

import re

import pydot
import pytest
from fixture_graphs import FIXTURES, stages

from explorer.analysis.diff import diff_graphs
from explorer.errors import ExplorerError
from explorer.model.graph import Edge, Graph, Node
from explorer.present import dot as render
from explorer.present.dot import (
    LEGEND,
    PALETTE,
    html_id,
    legend,
    node_label,
    node_tooltip,
    to_dot,
)
from explorer.present.svg import to_svg

# pydot's parser uses pyparsing names that newer pyparsing deprecates; not ours to fix.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:pydot")

# Graphviz is part of the set-up (./dev.sh installs it): a missing `dot` fails the tests that run it.

NASTY = 'we"ird <name> & {brace} a:1 ^ctrl \\back\\N [x]; é\nline'


def parse(text: str) -> pydot.Dot:
    graphs = pydot.graph_from_dot_data(text)
    assert graphs and len(graphs) == 1
    return graphs[0]


def node_lines(text: str) -> dict[str, str]:
    """DOT id -> its statement, for nodes n0, n1, ... and m0 ..."""
    return {m.group(1): m.group(0) for m in re.finditer(r"^([nm]\d+) \[.*\];$", text, re.M)}


def edge_lines(text: str) -> list[str]:
    return re.findall(r"^\w+ -> \w+.*;$", text, re.M)


def small_graph() -> Graph:
    return Graph((
        Node("x", "_Arg", dtype="float32", device="CPU:0", shape="[8,4]"),
        Node("c", "Const", dtype="float32", attrs=(("value", "0.5"),)),
        Node("split", "Split", dtype="float32", inputs=(Edge("x"),)),
        Node("mul", "Mul", dtype="float32", inputs=(Edge("split", 1), Edge("c"), Edge("x", control=True))),
        Node("out", "_Retval", inputs=(Edge("mul"),)),
    ))


# ---- structure -----------------------------------------------------------------------------

def test_synthetic_ids_and_names_only_in_labels():
    g = Graph((Node(NASTY, "Relu"), Node("b", "Relu", inputs=(Edge(NASTY),))))
    text = to_dot(g)
    assert set(node_lines(text)) == {"n0", "n1"}
    assert edge_lines(text)[0].startswith("n0 -> n1 ")
    # escaped for HTML in labels; in quoted tooltips only the quote and backslashes need care
    assert "we&quot;ird &lt;name&gt; &amp; {brace}…" in node_lines(text)["n0"].split("tooltip=")[0]
    assert 'tooltip="we\\"ird <name> & {brace} a:1 ^ctrl ⧵back⧵N [x]; é␊line\\nop: Relu"' in text


def test_nasty_names_survive_pydot_and_graphviz():
    g = Graph((
        Node(NASTY, "Relu", dtype="float32", attrs=(("padding", 'SA"ME<>'),)),
        Node("b<&>", 'Op"<x>', inputs=(Edge(NASTY, 1), Edge(NASTY, control=True)), fused_ops=("Bias<Add>", '"q"')),
    ))
    text = to_dot(g, {NASTY: "fused", "b<&>": "absorbed"}, title='t "<&>" \\N', clusters={'cl "<&>"': [NASTY]})
    dot = parse(text)
    assert sorted(n.get_name() for n in dot.get_nodes() + dot.get_subgraphs()[0].get_nodes()
                  if n.get_name() not in ("node", "edge", "graph")) == ["n0", "n1"]
    svg = to_svg(text)
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
    assert "we&quot;ird &lt;name&gt; &amp; {brace}…ctrl \\back\\N [x]; é\u240aline" in texts
    assert "[Bias&lt;Add&gt;, &quot;q&quot;]" in texts
    # tooltips: backslashes become a look-alike (Graphviz 2.43 expands tooltip escapes twice)
    assert "we&quot;ird &lt;name&gt; &amp; {brace} a:1 ^ctrl \u29f5back\u29f5N [x]; é\u240aline&#10;op: Relu" in svg


def test_control_edges_dashed_and_ports_labelled():
    text = to_dot(small_graph())
    edges = edge_lines(text)
    control = [e for e in edges if "fx-control" in e]
    assert len(control) == 1 and "style=dashed" in control[0]
    assert control[0].startswith("n0 -> n3 ")
    port = [e for e in edges if "taillabel" in e]
    assert port == [e for e in edges if e.startswith("n2 -> n3 ")]
    assert 'taillabel=":1"' in port[0]
    # port 0 edges carry no port label
    assert all("taillabel" not in e for e in edges if e.startswith("n3 -> n4"))


def test_labels_know_the_domain():
    g = stages("matmul_bias_gelu_approx__onednn")["optimized"]
    text = to_dot(g)
    line = node_lines(text)["n3"]
    assert "<b>_FusedMatMul</b>" in line
    assert "[BiasAdd, GeluApproximate]" in line
    assert "float32 · CPU:0" in line
    assert 'id="' + html_id("Gelu/mul_3") + '"' in line
    assert "fx-op-_FusedMatMul" in line
    # the tooltip has the whole story
    assert "fused_ops: BiasAdd, GeluApproximate" in line and "in: args_2" in line


def test_layout_pass_fusion_without_fused_ops_is_labelled_by_op_name():
    g = stages("conv2d_bias__onednn_noremap")["executed"]
    assert "[BiasAdd] (by op name)" in to_dot(g)


def test_node_label_escapes_and_shortens():
    label = node_label(Node("a" * 100 + "<", "Op&", dtype="float32", shape="[1,2]"), folded_consts=2)
    assert label.startswith("<<table") and label.endswith("</table>>")
    assert "<b>Op&amp;</b>" in label and "…" in label and "&lt;" in label
    assert "+2 const" in label
    # a compute node's shape is in its tooltip, an input's in its label too (graphs stay narrow)
    assert "float32" in label and "[1,2]" not in label
    assert "shape: [1,2]" in node_tooltip(Node("a", "Op&", dtype="float32", shape="[1,2]"))
    assert "float32 · [1,2]" in node_label(Node("args_0", "_Arg", dtype="float32", shape="[1,2]"))


def test_html_id_is_stable_safe_and_distinct():
    a, b = html_id("dense/MatMul"), html_id("dense_MatMul")
    assert a != b and a == html_id("dense/MatMul")
    assert re.fullmatch(r"fx-[A-Za-z0-9_-]+", html_id(NASTY))
    assert html_id("x", "left-").startswith("fx-left-x-")


# ---- overlay, highlight, clusters ----------------------------------------------------------

def test_overlay_colours_follow_the_palette():
    g = stages("matmul_bias_gelu_approx__stock")
    d = diff_graphs(g["traced"], g["optimized"])
    before = to_dot(g["traced"], d.overlay("before"))
    after = to_dot(g["optimized"], d.overlay("after"))
    lines_b, lines_a = node_lines(before), node_lines(after)
    matmul = next(line for line in lines_b.values() if "<b>MatMul</b>" in line)
    assert f'fillcolor="{PALETTE["absorbed"].fill}"' in matmul and "dashed" in matmul and "fx-absorbed" in matmul
    fused = next(line for line in lines_a.values() if "<b>_FusedMatMul</b>" in line)
    assert f'fillcolor="{PALETTE["fused"].fill}"' in fused and "bold" in fused
    square = next(line for line in lines_a.values() if "<b>Square</b>" in line)
    assert f'fillcolor="{PALETTE["added"].fill}"' in square
    pow_y = next(line for line in lines_b.values() if "Gelu/Pow/y" in line)
    assert f'fillcolor="{PALETTE["removed"].fill}"' in pow_y
    pow_ = next(line for line in lines_b.values() if "<b>Pow</b>" in line)
    assert f'fillcolor="{PALETTE["changed"].fill}"' in pow_


def test_no_overlay_means_unchanged_and_unknown_status_falls_back():
    text = to_dot(Graph((Node("a", "Relu"),)), {"a": "bogus"})
    assert f'fillcolor="{PALETTE["unchanged"].fill}"' in text and "fx-bogus" in text


def test_highlight():
    text = to_dot(small_graph(), highlight={"mul", "not-a-node"})
    line = node_lines(text)["n3"]
    assert "fx-highlight" in line and f'color="{render.HIGHLIGHT_COLOR}"' in line
    assert "fx-highlight" not in node_lines(text)["n2"]


def test_clusters_group_absorbed_nodes():
    g = stages("conv2d_bias_relu__onednn")
    d = diff_graphs(g["traced"], g["optimized"])
    text = to_dot(g["traced"], d.overlay("before"), clusters=d.clusters("before"))
    dot = parse(text)
    (sub,) = dot.get_subgraphs()
    assert sub.get_name() == "cluster_fusion0"
    inside = [n.get_name() for n in sub.get_nodes()]
    names = [n.name for n in g["traced"].nodes]
    assert inside == [f"n{names.index(x)}" for x in ("Conv2D", "BiasAdd", "Relu")]
    assert "→ _FusedConv2D [BiasAdd, Relu] (Relu)" in text


def test_clusters_first_wins_and_unknown_names_ignored():
    g = small_graph()
    text = to_dot(g, clusters={"A": ["mul", "ghost"], "B": ["mul", "split"], "C": ["ghost"]})
    dot = parse(text)
    subs = {s.get_name(): [n.get_name() for n in s.get_nodes()] for s in dot.get_subgraphs()}
    assert subs == {"cluster_fusion0": ["n3"], "cluster_fusion1": ["n2"]}


def test_id_prefix_keeps_two_panels_apart():
    g = small_graph()
    assert html_id("mul", "L-") in to_dot(g, id_prefix="L-")
    assert html_id("mul", "R-") in to_dot(g, id_prefix="R-")


# ---- folding -------------------------------------------------------------------------------

def test_fold_boilerplate_counts_consts_and_bridges_identity():
    g = stages("matmul_bias_gelu_approx__onednn")["traced"]
    text = to_dot(g, fold_boilerplate=True)
    labels = " ".join(node_lines(text).values())
    assert "<b>Const</b>" not in labels and "<b>Identity</b>" not in labels
    assert "<b>_Arg</b>" in labels and "<b>_Retval</b>" in labels
    assert labels.count("+1 const") == 5
    assert "folded: Gelu/Pow/y = 3.0" in labels
    # Gelu/mul_3 -> Identity -> _Retval becomes Gelu/mul_3 -> _Retval
    shown = [n for n in g.nodes if n.op not in render.FOLDED_OPS]
    ids = {n.name: f"n{i}" for i, n in enumerate(shown)}
    assert any(e.startswith(f"{ids['Gelu/mul_3']} -> {ids['identity_RetVal']} ") for e in edge_lines(text))
    assert len(node_lines(text)) == len(shown) == 14


def test_fold_keeps_ports_through_identity_and_drops_noop():
    g = Graph((
        Node("x", "_Arg"), Node("s", "Split", inputs=(Edge("x"),)),
        Node("id", "Identity", inputs=(Edge("s", 2),)), Node("noop", "NoOp"),
        Node("r", "Relu", inputs=(Edge("id"), Edge("noop", control=True))),
        Node("c", "Const"), Node("cid", "Identity", inputs=(Edge("c"),)),
        Node("m", "Mul", inputs=(Edge("r"), Edge("cid"), Edge("c", control=True))),
        Node("loop", "Identity", inputs=(Edge("loop2"),)), Node("loop2", "Identity", inputs=(Edge("loop"),)),
        Node("z", "Relu", inputs=(Edge("loop"),)),
    ))
    text = to_dot(g, fold_boilerplate=True)
    edges = edge_lines(text)
    assert len(node_lines(text)) == 5  # x, s, r, m, z
    assert any(e.startswith("n1 -> n2 ") and 'taillabel=":2"' in e for e in edges)
    assert not any("fx-control" in e for e in edges)  # from NoOp and from a Const: dropped
    assert "+1 const" in node_lines(text)["n3"]  # the Const reached through an Identity
    assert not any(e.endswith("n4;") or " -> n4 " in e for e in edges)  # the Identity cycle is dropped
    parse(text)


# ---- edge cases ----------------------------------------------------------------------------

def test_empty_graph():
    text = to_dot(Graph())
    assert text.startswith("digraph G {") and node_lines(text) == {}
    parse(text)
    text = to_dot(Graph(), title="empty")
    assert "<b>empty</b>" in text


def test_missing_input_gets_a_placeholder():
    g = Graph((Node("a", "Relu", inputs=(Edge("ghost:weird", 3), Edge("ghost:weird", control=True))),
               Node("b", "Relu", inputs=(Edge("other"),))))
    text = to_dot(g)
    nodes = node_lines(text)
    assert "m0" in nodes and "m1" in nodes and "missing" in nodes["m0"] and "ghost:weird" in nodes["m0"]
    edges = edge_lines(text)
    assert sum(e.startswith("m0 -> n0 ") for e in edges) == 2
    assert any(e.startswith("m1 -> n1 ") for e in edges)
    parse(text)


def test_deterministic():
    g = stages("matmul_bias_gelu_approx__onednn")
    d = diff_graphs(g["traced"], g["optimized"])
    args = (g["traced"], d.overlay("before"))
    kw = dict(title="t", fold_boilerplate=True, clusters=d.clusters("before"), highlight={"Gelu/Tanh", "MatMul"})
    assert to_dot(*args, **kw) == to_dot(*args, **kw)
    # an overlay built in another order gives the same text
    shuffled = dict(sorted(d.overlay("before").items(), reverse=True))
    assert to_dot(g["traced"], shuffled, **kw) == to_dot(*args, **kw)


def test_golden_small_graph():
    text = to_dot(Graph((Node("a", "Relu"), Node("b", "Tanh", inputs=(Edge("a", 1),)))))
    assert text.splitlines()[0] == "digraph G {"
    assert edge_lines(text) == ['n0 -> n1 [class="fx-edge", taillabel=":1", tooltip="a:1 → b"];']
    assert node_lines(text)["n0"] == (
        'n0 [label=<<table border="0" cellborder="0" cellspacing="0" cellpadding="1"><tr><td><b>Relu</b></td></tr>'
        '<tr><td><font point-size="9">a</font></td></tr></table>>, tooltip="a\\nop: Relu", '
        f'id="{html_id("a")}", class="fx-node fx-unchanged fx-op-Relu", style="rounded,filled", '
        'fillcolor="#ffffff", color="#555555", penwidth=1.0];'
    )


# ---- legend --------------------------------------------------------------------------------

def test_legend_covers_every_status():
    from explorer.analysis.diff import STATUSES

    assert {s.status for s in LEGEND} == set(STATUSES)
    rows = legend()
    assert [r["status"] for r in rows] == [s.status for s in LEGEND]
    assert all(re.fullmatch(r"#[0-9a-f]{6}", r["fill"]) and r["meaning"] for r in rows)
    assert len({r["fill"] for r in rows}) == len(rows)  # distinguishable


# ---- fixtures through Graphviz -------------------------------------------------------------

def test_fixture_dot_parses_back():
    # pydot's parser is slow (~0.3 s a graph): one fixture, each side once
    g = stages("matmul_bias_gelu_approx__stock")
    d = diff_graphs(g["traced"], g["optimized"])
    for graph, side, fold in ((g["traced"], "before", False), (g["optimized"], "after", True)):
        text = to_dot(graph, d.overlay(side), fold_boilerplate=fold, clusters=d.clusters(side))
        dot = parse(text)
        count = len([n for n in dot.get_nodes() if n.get_name() not in ("node", "edge", "graph")])
        count += sum(len(s.get_nodes()) for s in dot.get_subgraphs())
        assert count == len(node_lines(text))
        assert len(dot.get_edges()) == len(edge_lines(text))


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.json")), ids=lambda p: p.stem)
def test_every_fixture_renders(path):
    g = stages(path.stem)
    texts = []
    for before, after in (("traced", "optimized"), ("optimized", "executed")):
        d = diff_graphs(g[before], g[after])
        for graph, side in ((g[before], "before"), (g[after], "after")):
            for fold in (False, True):
                texts.append(to_dot(graph, d.overlay(side), title=path.stem, fold_boilerplate=fold, clusters=d.clusters(side)))
    # one dot process lays out every graph of the file (each start-up costs ~70 ms)
    svg = to_svg("\n".join(texts))
    assert svg.lstrip().startswith("<?xml") and svg.count("</svg>") == len(texts)


# ---- to_svg errors -------------------------------------------------------------------------

def test_to_svg_without_graphviz():
    # the lookup itself, for a binary that is not installed anywhere
    with pytest.raises(ExplorerError, match="Graphviz 'no-such-graphviz-dot' was not found"):
        to_svg("digraph G {}", dot_binary="no-such-graphviz-dot")


def test_to_svg_reports_bad_dot():
    with pytest.raises(ExplorerError, match="Graphviz could not render"):
        to_svg("digraph G { this is not dot")


def test_to_svg_timeout():
    # 300 nodes, 1800 crossing edges: Graphviz lays this out for far longer than half a second (more
    # than ten here), so the real dot process is stopped at the limit.
    tangle = "digraph G {" + "".join(f"n{i} -> n{(i * 7 + k * 31) % 300};" for i in range(300) for k in range(1, 7)) + "}"
    with pytest.raises(ExplorerError, match="more than 0.5 s"):
        to_svg(tangle, timeout=0.5)


def test_a_node_without_an_op_is_drawn_as_no_op():
    # What the MatMul+BiasAdd+Add+Relu remapper defect leaves behind: Graphviz must still draw it.
    graph = Graph((Node("x", "_Arg"), Node("Relu", "", inputs=(Edge("x"),))), "optimized")
    dot = to_dot(graph)
    assert "(no op)" in dot
    assert "<svg" in to_svg(dot)


def test_a_text_of_only_closing_brackets_is_drawn():
    # Graphviz 2.43 refuses an HTML-like label text of just "]" or "]]" (found by test_render_fuzz).
    graph = Graph((Node("]", "]"), Node("]]", "]]", inputs=(Edge("]"),))))
    svg = to_svg(to_dot(graph, title="]"))
    texts = re.findall(r"<text[^>]*>([^<]*)</text>", svg)
    assert texts.count("]") == 3 and texts.count("]]") == 2  # title, op and name of each node
