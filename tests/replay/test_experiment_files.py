"""Experiment files through the real page, for every model source (recorded worker answers): "Open experiment"
puts the file's experiment on the page (sidebar, tabs, link), the page's own experiment is the file's again,
and a file that is wrong is refused in one line with nothing changed."""

from __future__ import annotations

import json
import os

import pytest

from explorer.model import stack_examples
from explorer.model.experiment import Bench, Experiment
from explorer.model.flags import Config
from explorer.ui import share, state
from tests.page_tabs import open_tab
from tests.security.hostile_graphs import good

RECORD = os.environ.get("EXPLORER_RECORD") == "1"  # see conftest.py
ONEDNN = {"TF_ENABLE_ONEDNN_OPTS": "1"}
MODELS = {
    "preset": {"preset": "matmul_bias_relu", "params": {"m": 64, "k": 32, "n": 16}},
    "chain": {"chain": {"contraction": "Conv2D", "bias": "BiasAdd", "activation": "Relu6"},
              "params": {"batch": 1, "height": 8, "width": 8, "in_channels": 4, "out_channels": 4}},
    "stack": {"stack": stack_examples.example("layout_fp32")},
}


def _open(at, exp: Experiment, name: str = "exp.experiment.json"):
    at.file_uploader(key=share.OPEN_KEY).set_value((name, exp.to_json().encode(), "application/json"))
    return at.run()


def _on_page(at) -> Experiment:
    """The experiment the page holds, as its link says (what Save experiment writes too)."""
    exp, ignored = Experiment.from_query(at.query_params, Experiment())
    assert ignored == []
    return exp


@pytest.mark.parametrize("source", MODELS)
def test_an_experiment_file_of_every_source_opens_as_it_was_saved(replay_app, source):
    exp = Experiment(model=MODELS[source], config=Config.make("cpu", ONEDNN, {"constant_folding": "off"}),
                     tab="passes", stages="traced->executed", fold=True, graph_view="all",
                     bench=Bench(reps=20, warmup=2, seconds=30, processes=3))
    at = replay_app().run()
    at = _open(at, exp)
    assert not at.exception, at.exception
    assert any(s.value.startswith("Opened exp.experiment.json") for s in at.success)
    assert _on_page(at) == exp
    assert at.session_state[state.MODE] == exp.source.id and at.session_state[state.TAB] == "passes"
    assert not at.error, [e.value for e in at.error]
    assert RECORD or "graphs replayed from a recording" in "\n".join(c.value for c in at.caption)  # it ran
    at.run()  # and it stays
    assert _on_page(at) == exp
    open_tab(at, "graphs")  # the graph panel's own widgets hold the file's folding and view
    assert at.toggle(key=state.FOLD).value is True and at.radio(key=state.GRAPH_VIEW).value == "all"


def test_an_imported_models_experiment_opens_while_the_upload_is_kept(replay_app):
    first = replay_app(**{state.MODE: "import"}).run()
    first.file_uploader(key=state.UPLOAD).set_value(("scaled.pbtxt", good(3.0), "application/octet-stream"))
    first.run()
    assert not first.exception
    exp = _on_page(first)
    assert exp.model["import"]["name"] == "scaled.pbtxt"

    second = _open(replay_app().run(), exp.replace(tab="report"))
    assert not second.exception
    assert _on_page(second) == exp.replace(tab="report")
    assert second.session_state[state.IMPORT_KEPT]["digest"] == exp.model["import"]["digest"]
    assert second.session_state[state.UPLOAD_DIR] != first.session_state[state.UPLOAD_DIR]  # its own copy


def test_a_wrong_experiment_file_is_refused_in_one_line_and_nothing_changes(replay_app):
    at = replay_app().run()
    before = _on_page(at)
    data = json.loads(Experiment(model=MODELS["preset"]).to_json())
    data["bench"]["reps"] = 1
    at.file_uploader(key=share.OPEN_KEY).set_value(("bad.json", json.dumps(data).encode(), "application/json"))
    at.run()
    assert not at.exception
    errors = [e.value for e in at.error]
    assert errors == ["bad.json was not opened: bench.reps: expected a whole number 3..2000, got 1"]
    assert _on_page(at) == before


def test_the_graph_views_folding_and_drawing_are_part_of_the_link(replay_app):
    at = replay_app().run()
    assert "fold" not in at.query_params and "view" not in at.query_params  # the defaults: a bare link
    at.toggle(key=state.FOLD).set_value(True).run()
    at.radio(key=state.GRAPH_VIEW).set_value("fused").run()
    assert not at.exception, at.exception
    assert at.query_params["fold"] == "1" and at.query_params["view"] == "fused"
    exp = _on_page(at)
    assert exp.fold is True and exp.graph_view == "fused"
    # the link opens it again in a new session
    other = replay_app().run()
    other = _open(other, exp, "view.experiment.json")
    assert other.toggle(key=state.FOLD).value is True and other.radio(key=state.GRAPH_VIEW).value == "fused"
