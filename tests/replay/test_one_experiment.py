"""The page's experiment is read from its widgets once a run (``link.sync``), and every other part of the page reads
that one (``experiment.on_screen``): what the link says, the share panel and the benchmark's form all come from it."""

from __future__ import annotations

from explorer.model.experiment import Experiment
from explorer.ui import experiment, state
from tests.page_tabs import open_tab
from tests.replay.small_page import small_app

PAGE = """
import streamlit as st
st.set_page_config(layout="wide")
from explorer.engine.replay import ReplayEngine
from explorer.ui import page

page.render(ReplayEngine({recordings!r}))
"""


def test_the_widgets_are_read_into_the_experiment_once_a_run(monkeypatch):
    reads: list[int] = []
    read = experiment.current

    def counted(*args, **kwargs) -> Experiment:
        reads.append(1)
        return read(*args, **kwargs)

    monkeypatch.setattr(experiment, "current", counted)
    at = small_app(PAGE).run()
    assert not at.exception and len(reads) == 1
    shown = at.session_state[state.EXPERIMENT]
    assert shown.config.env_dict == {"TF_ENABLE_ONEDNN_OPTS": "1"} and shown.model["preset"] == "matmul_bias_gelu_approx"

    open_tab(at, "bench")  # a tab opened: one more run, one more read
    assert not at.exception and len(reads) == 2 and at.session_state[state.EXPERIMENT].tab == "bench"
    at.toggle(key=state.PRESENT).set_value(True).run()  # a widget outside the tabs
    assert not at.exception and len(reads) == 3
    assert at.session_state[state.EXPERIMENT].present is True and at.query_params["present"] == "1"
