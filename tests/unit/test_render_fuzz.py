"""Node names and attributes can be anything TensorFlow allows (and more): whatever they are, the
DOT stays valid, Graphviz draws it, and the SVG is well-formed XML with the names as text."""

from __future__ import annotations

import subprocess
import xml.etree.ElementTree as ET

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from explorer.model.graph import Edge, Graph, Node
from explorer.present.dot import to_dot

NASTY = st.sampled_from(['<script>alert(1)</script>', '"quoted"', "a\\b", "{x|y}", "&amp;", "n:1", "^ctrl", "é—😀",
                         "]]>", "--", "\t", "</svg>", "name with spaces", "Gelu/mul_3"])
NAMES = st.one_of(NASTY, st.text(min_size=1, max_size=24))


@st.composite
def graphs(draw):
    names = draw(st.lists(NAMES, min_size=1, max_size=8, unique=True))
    nodes = []
    for i, name in enumerate(names):
        inputs = tuple(Edge(draw(st.sampled_from(names[:i])) if i else "missing", draw(st.integers(0, 3)),
                            draw(st.booleans())) for _ in range(draw(st.integers(0, 2))))
        nodes.append(Node(name=name, op=draw(NAMES), device=draw(st.sampled_from(["", "CPU:0", "GPU:0"])),
                          dtype=draw(st.sampled_from(["", "float32"])), inputs=inputs,
                          fused_ops=tuple(draw(st.lists(NAMES, max_size=2))),
                          attrs=tuple(sorted({draw(NAMES): draw(NAMES)}.items())), shape=draw(st.sampled_from(["", "[2,3]"]))))
    return Graph(tuple(nodes), "traced")


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs(), st.booleans())
def test_any_names_give_valid_dot_and_well_formed_svg(graph, fold):
    overlay = {n.name: "fused" if n.fused_ops else "unchanged" for n in graph.nodes}
    dot = to_dot(graph, overlay, title="t<itle>", fold_boilerplate=fold)
    out = subprocess.run(["dot", "-Tsvg"], input=dot, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    root = ET.fromstring(out.stdout)  # well-formed: nothing a name held broke out of its text
    assert not root.findall(".//{http://www.w3.org/2000/svg}script")
    assert "<script>" not in out.stdout
