"""Only the open tab's panel runs (Streamlit's lazy tabs), on recorded results: a closed tab draws nothing and asks
the engine for nothing, opening a tab runs its panel, a link naming a tab opens it, and what the user set inside a
tab is there again after a look at another tab, in the page's state and in what the browser is sent (a widget drawn
again after a run that did not draw it is shown with the value its proto carries: ``set_value`` and ``value``, or
else its own default)."""

from __future__ import annotations


from streamlit.testing.v1 import AppTest

from explorer.ui import state
from tests.replay.small_page import RECORDINGS, small_app
from tests.page_tabs import each_tab, open_tab


# The page on recordings; the engine notes the fusion report's own engine call (the near-misses' setting-fixes,
# up to three more configurations run the first time), so a test sees whether a closed report tab asked for it.
SCRIPT = """
import streamlit as st
st.set_page_config(layout="wide")
from explorer.engine.replay import ReplayEngine
from explorer.ui import page


class Watched(ReplayEngine):
    def __init__(self, directory):
        super().__init__(directory)
        self.asked = []

    def check_fixes(self, spec, config, result):
        self.asked.append("check_fixes")
        return super().check_fixes(spec, config, result)


page.render(Watched({recordings!r}))
"""

FORM = (state.BENCH_REPS, state.BENCH_WARMUP, state.BENCH_SECONDS)


def _app(**session) -> AppTest:
    return small_app(SCRIPT, **session)


def asked(at) -> list[str]:
    """The engine calls of the last run that the watched engine notes."""
    return at.session_state[state.ENGINE].asked


def drawings(at) -> int:
    """Graph drawings on the page (the graph tab's, the pass pipeline's)."""
    return sum("fx-pane" in f.proto.srcdoc for f in at.get("iframe"))


def bench_form(at) -> set[str]:
    return {w.key for w in at.number_input if w.key in FORM}


def report(at) -> list:
    """The whole-model fusion report's table (a stack's "why" tab)."""
    return [d for d in at.dataframe if "fused op" in d.value.columns]


def shown(widget):
    """What the browser shows of a widget it has just drawn again: the value it is sent, or the widget's default."""
    return widget.proto.value if widget.proto.set_value else widget.proto.default


STACK = {state.MODE: "stack"}  # a layer stack: its "why" tab is the whole-model report, whose near-misses' fixes it
# settles (an engine call)


def test_a_closed_tabs_panel_does_not_run():
    at = _app(**STACK).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    labels = [t.label for t in at.tabs]
    assert {"Why it fused (or not)", "Fused vs unfused", "Pass pipeline"} <= set(labels), labels  # the whole tab bar
    assert drawings(at) == 1  # the graph tab's
    assert not bench_form(at) and not report(at)
    assert asked(at) == []  # the closed report did not settle its near-misses' fixes
    assert len(at.tabs[0]) and not [t.label for t in at.tabs[1:] if len(t)], "a closed tab has content"
    at.run()
    assert asked(at) == [] and drawings(at) == 1


def test_opening_a_tab_runs_its_panel_and_only_it():
    at = _app(**STACK).run()
    open_tab(at, "why")
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert asked(at) == ["check_fixes"] and len(report(at)) == 1
    assert drawings(at) == 0 and not bench_form(at)
    open_tab(at, "bench")
    assert bench_form(at) == set(FORM) and asked(at) == [] and not report(at)
    open_tab(at, "graphs")
    assert drawings(at) == 1 and not bench_form(at) and asked(at) == []
    # the tab open is the one drawn: its content is under it, every other tab is empty
    opened = next(t for t in at.tabs if t.label == "Graphs before → after")
    assert len(opened) and not [t.label for t in at.tabs if t is not opened and len(t)]


# The recorded experiment, as a link holds it (a link sets the whole experiment).
LINK = {"preset": "matmul_bias_gelu_approx", "m": "64", "k": "32", "n": "16", "TF_ENABLE_ONEDNN_OPTS": "1"}


def _link(**query) -> AppTest:
    at = AppTest.from_string(SCRIPT.format(recordings=str(RECORDINGS)), default_timeout=30)
    for key, value in dict(LINK, **query).items():
        at.query_params[key] = value
    return at.run()


def test_a_link_naming_a_tab_opens_it_and_runs_its_panel():
    at = _link(tab="bench", reps="120")
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.session_state[state.TAB] == "bench"
    assert bench_form(at) == set(FORM) and drawings(at) == 0
    reps = at.number_input(key=state.BENCH_REPS)
    assert reps.value == 120 and shown(reps) == 120  # the link's value, sent to the browser
    assert at.query_params["tab"] == "bench"  # and the link keeps naming it
    other = _link(tab="passes")
    assert drawings(other) == 1 and any("remapper" in m.value and "<table" in m.value for m in other.markdown)


def test_what_the_user_set_inside_a_tab_survives_a_look_at_another():
    at = _app().run()
    at.text_input(key=state.GRAPH_SEARCH).set_value("Gelu").run()
    at.toggle(key=state.FOLD).set_value(True).run()
    open_tab(at, "passes")
    at.toggle(key=state.PASS_FOLD).set_value(True).run()
    open_tab(at, "sweep")
    at.text_input(key=state.SWEEP_VALUES).set_value("16, 32").run()
    open_tab(at, "bench")
    assert not at.exception
    assert at.query_params["fold"] == "1"  # the link keeps the closed graph tab's folding
    # back to each: the widget is drawn again with what was set, and the browser is sent it
    open_tab(at, "graphs")
    search, fold = at.text_input(key=state.GRAPH_SEARCH), at.toggle(key=state.FOLD)
    assert (search.value, shown(search)) == ("Gelu", "Gelu") and (fold.value, shown(fold)) == (True, True)
    open_tab(at, "passes")
    fold = at.toggle(key=state.PASS_FOLD)
    assert (fold.value, shown(fold)) == (True, True)
    open_tab(at, "sweep")
    values = at.text_input(key=state.SWEEP_VALUES)
    assert (values.value, shown(values)) == ("16, 32", "16, 32")
    assert not at.exception and not at.error, [e.value for e in at.error]


def test_every_tab_of_the_page_opens_without_an_error():
    at = _app().run()
    errors = {tab: [e.value for e in at.error] + [str(e.value) for e in at.exception] for tab in each_tab(at)}
    assert list(errors)[:2] == ["graphs", "why"] and "matrix" in errors
    assert not any(errors.values()), errors
    assert asked(at) == []  # the matrix tab, open last, asks for no fix check
