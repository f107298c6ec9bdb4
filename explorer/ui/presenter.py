"""The presenter view: the page as a projector shows it to a room (1280×720, read from the back).

``present=1`` in a link or the toggle at the top of the page turns it on (``state.PRESENT``): the sidebar
folds away, the header shrinks to one line, type grows, and the two graphs always sit side by side (the
drawing's own script: ``present.linked``). What the page draws in it is the same page, so a lesson's step
looks the same to the teacher preparing it and to the room.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from . import state

KEYS_JS = (Path(__file__).resolve().parent / "lesson_keys.js").read_text(encoding="utf-8")

# Streamlit sizes its type in rem: a larger root size grows every label, caption and button together.
CSS = """<style>
html { font-size: 18px; }
[data-testid='stHeader'] { height: 40px; min-height: 40px; }
[data-testid='stMainBlockContainer'] { padding: 42px 1.1rem 2rem 1.1rem !important; }
[data-testid='stMain'] [data-testid='stVerticalBlock'] { gap: 0.3rem; }
[data-testid='stMain'] [data-testid='stTabs'] [role='tablist'] { margin-bottom: 0.1rem; }
[data-testid='stMain'] [data-testid='stTabs'] button[role='tab'] { height: 2.1rem; }
[data-testid='stMetricDelta'], [data-testid='stMetricDelta'] *, [data-testid='stMetricLabel'] * {
  white-space: normal !important; overflow: visible !important; text-overflow: clip !important; height: auto; }
/* The room came for the graphs: the rows above them as low as their type allows. */
[data-testid='stMain'] [data-testid='stBaseButton-secondary'], [data-testid='stMain'] [data-testid='stBaseButton-primary'] {
  min-height: 2.1rem; padding-top: 0.1rem; padding-bottom: 0.1rem; }
[data-testid='stMain'] [data-baseweb='select'] > div, [data-testid='stMain'] [data-baseweb='input'] { min-height: 2.1rem; }
[data-testid='stMain'] [data-baseweb='select'] > div > div { padding-top: 0.1rem; padding-bottom: 0.1rem; }
[data-testid='stMain'] [data-baseweb='input'] input { padding-top: 0.25rem; padding-bottom: 0.25rem; }
.st-key-lesson-panel { padding: 0.45rem 0.9rem !important; gap: 0.4rem !important; }
.st-key-lesson-panel p { margin-bottom: 0.35rem; }
[data-testid='stMain'] [data-testid='stTabs'] [role='tabpanel'] { padding-top: 0.5rem; }
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


def step_keys() -> None:
    """The lesson's keys (→ PageDown Space, ← PageUp; a clicker's): a script in the page that presses the panel's
    Previous / Next (``lesson_keys.js``; installed once per browser tab, hidden)."""
    with st.container(key="lesson-keys"):
        st.html(f"<script>{KEYS_JS}</script>", unsafe_allow_javascript=True)
