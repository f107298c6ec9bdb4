"""The benchmark form after a run that stopped early (the form came up at 3 calls, 0 warm-up, 1 s, 2 processes).

A full run that ends in an uncaught exception (or the toolbar's Stop) skips Streamlit's server-side cleanup of the
widgets it did not draw, while the browser drops them; the next run drew the form from the server's values
without sending them, so the browser fell back to each number_input's own default, its min_value. What the
browser is sent is the widget's proto: these tests read it (``set_value`` and ``value``), on recorded results.
"""

from __future__ import annotations


from streamlit.testing.v1 import AppTest

from explorer.ui import state
from tests.replay.small_page import small_app
from tests.page_tabs import open_tab


# The page on recordings, with one run that fails after the sidebar (outside every tab) when asked to.
SCRIPT = """
import streamlit as st
st.set_page_config(layout="wide")
from explorer.engine.replay import ReplayEngine
from explorer.ui import page, whatif

if st.session_state.pop("test.fail_once", False):
    def failing(*args, **kwargs):
        raise RuntimeError("a part of the page failed")
    page.whatif = type("Failing", (), {{"panel": staticmethod(failing), "pin_button": whatif.pin_button}})
else:
    page.whatif = whatif
page.render(ReplayEngine({recordings!r}))
"""

FORM = (state.BENCH_REPS, state.BENCH_WARMUP, state.BENCH_SECONDS, state.BENCH_PROCESSES)


def _form(at) -> dict:
    """What the browser is told of each number input of the form: (value sent, or None when none is sent)."""
    sent = {}
    for widget in at.number_input:
        if widget.key in FORM:
            sent[widget.key] = widget.proto.value if widget.proto.set_value else None
    return sent


def _app(**session) -> AppTest:
    return small_app(SCRIPT, **session)


def test_after_a_run_that_failed_the_form_is_sent_its_values_again():
    at = open_tab(_app(), "bench")  # the form's values come from the page's own defaults (state.init), as in a browser
    assert not at.exception
    defaults = {key: state.DEFAULTS[key] for key in FORM}
    assert _form(at) == defaults  # the first run sends what the session holds
    at.run()
    assert set(_form(at).values()) == {None}  # later runs leave the browser's own copy as it is

    at.session_state["test.fail_once"] = True
    at.run()
    assert at.exception, "the run failed before the tabs"
    assert not [w for w in at.number_input if w.key in FORM], "the form was not drawn: the browser drops it"
    at.run()
    assert not at.exception
    # Without its values the browser would show each input's min_value: 3 calls, 0 warm-up, 1 s, 2 processes.
    assert _form(at) == defaults
    at.run()
    assert set(_form(at).values()) == {None}  # and only then


def test_a_tab_that_fails_says_so_in_its_place_and_the_others_are_drawn(monkeypatch):
    at = open_tab(_app(), "why")
    from explorer.ui import why

    def failing(*args, **kwargs):
        raise ValueError("the checklist broke")

    monkeypatch.setattr(why, "panel", failing)
    at.run()
    assert not at.exception
    assert any("This tab could not be drawn (ValueError: the checklist broke)" in e.value for e in at.error)
    assert at.session_state[state.RUN_DONE] is True  # the run went on to its end
    open_tab(at, "bench")
    assert {w.key for w in at.number_input} >= set(FORM)  # the benchmark tab, after it, is drawn
