"""The presenter view: the page as a projector shows it to a room (1280×720, read from the back).

``present=1`` in a link or the toggle at the top of the page turns it on (``state.PRESENT``): the sidebar
folds away, the header shrinks to one line, type grows, and the two graphs always sit side by side (the
drawing's own script: ``present.linked``). What the page draws in it is the same page, so a lesson's step
looks the same to the teacher preparing it and to the room.
"""

from __future__ import annotations

import streamlit as st

from . import state

# Streamlit sizes its type in rem: a larger root size grows every label, caption and button together.
CSS = """<style>
html { font-size: 18px; }
[data-testid='stHeader'] { height: 44px; min-height: 44px; }
[data-testid='stMainBlockContainer'] { padding: 46px 1.1rem 2rem 1.1rem !important; }
[data-testid='stMain'] [data-testid='stVerticalBlock'] { gap: 0.45rem; }
[data-testid='stMain'] [data-testid='stTabs'] [role='tablist'] { margin-bottom: 0.2rem; }
[data-testid='stMetricDelta'], [data-testid='stMetricDelta'] *, [data-testid='stMetricLabel'] * {
  white-space: normal !important; overflow: visible !important; text-overflow: clip !important; height: auto; }
</style>"""
HELP = ("For a projector: the sidebar folds away (open it with the arrow at the top left), type grows and the two "
        "graphs stay side by side. The link carries it (present=1).")


def sidebar_state(otherwise):
    """The sidebar's setting for this run (app.py's set_page_config): folded in the presenter view, which is on
    when the session says so or, on a session's first run, when its link does (present=1)."""
    on = state.PRESENT in st.session_state and state.presenting()
    if state.PRESENT not in st.session_state:
        on = str(st.query_params.get("present", "")).lower() in ("1", "true", "yes", "on")
    return "collapsed" if on else otherwise


def apply() -> None:
    """Grow the type when the presenter view is on (the sidebar is folded by app.py's ``sidebar_state``)."""
    if state.presenting():
        st.html(CSS)


def toggle(where=st) -> bool:
    """The page's switch for the presenter view; True when it is on."""
    return where.toggle("Presenter view", key=state.PRESENT, help=HELP)
