"""The graph panel's big-graph controls on a real result: one box per scope, search on both sides, fused
regions only (the views' content is checked in tests/unit/test_scope.py; this is the page wiring)."""

from __future__ import annotations

import html
import re

from explorer.analysis.scope import search
from explorer.model.graph import Graph
from explorer.present.dot import html_id
from explorer.ui import state
from tests.page_tabs import open_tab


def _frame(at) -> str:
    """The linked view's document, entities decoded (Graphviz writes the ids' "-" as &#45;)."""
    return html.unescape(next(f.proto.srcdoc for f in at.get("iframe") if "fx-pane" in f.proto.srcdoc))


def _captions(at) -> str:
    return "\n".join(str(c.value) for c in at.caption)


def test_boxes_search_and_fused_regions_on_the_default_model(make_app):
    at = make_app(**{state.GRAPH_VIEW: "scopes"}).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    page = _frame(at)
    # MatMul + BiasAdd + the "Gelu" scope: the scope is one box on each side, linked to each other
    for prefix in ("b-", "a-"):
        assert f'id="{html_id("Gelu/", prefix)}"' in page
    assert html_id("Gelu/Tanh", "b-") not in page
    assert "each name scope (a Keras layer) is drawn as one box" in _captions(at)
    assert at.multiselect(key=state.GRAPH_OPEN).options == ["Gelu"]
    # the pass pipeline's two graphs follow the same View: the scope is a box there too
    open_tab(at, "passes")
    assert "apply to these two graphs too" in _captions(at)
    passes = [html.unescape(f.proto.srcdoc) for f in at.get("iframe")
              if "fx-pane" in f.proto.srcdoc and "Before remapper" in f.proto.srcdoc]
    assert len(passes) == 1 and f'id="{html_id("Gelu/", "b-")}"' in passes[0]
    assert html_id("Gelu/Tanh", "b-") not in passes[0]

    # open the box: its nodes are drawn again
    open_tab(at, "graphs")
    at.multiselect(key=state.GRAPH_OPEN).set_value(["Gelu"]).run()
    assert html_id("Gelu/Tanh", "b-") in _frame(at) and html_id("Gelu/", "b-") not in _frame(at)

    # search: the counts are those of the graphs themselves, and the marks are drawn shapes
    # the engine the page ran on (the server's engine may predate this module's cache directory)
    result = at.session_state[state.ENGINE].cache.get(at.session_state[state.SHOWN]["key"])
    before, after = (Graph.from_dict(result["stages"][s]) for s in ("traced", "optimized"))
    at.multiselect(key=state.GRAPH_OPEN).set_value([]).run()
    at.text_input(key=state.GRAPH_SEARCH).input("TANH").run()
    assert f"**“TANH”**: {len(search(before, 'tanh'))} before, {len(search(after, 'tanh'))} after" in _captions(at)
    marks = re.search(r"data-marks='([^']*)'", _frame(at)).group(1).split()
    assert marks == [html_id("Gelu/", "b-")]  # the match sits in the closed box

    # fused regions only: the fusion's nodes and their neighbours, the rest left out
    at.radio(key=state.GRAPH_VIEW).set_value("fused").run()
    assert not at.exception
    page = _frame(at)
    assert html_id("Gelu/Tanh", "b-") in page and html_id("Gelu/mul_3", "a-") in page
    assert "Only the nodes the fusions and renames involve" in _captions(at)
