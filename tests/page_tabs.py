"""Opening a tab of the page in an AppTest: only the open tab's panel runs (Streamlit's lazy tabs), so a test
opens the tab whose panel it reads, as a person clicks it (the page keeps the open tab by id: ``state.TAB``)."""

from __future__ import annotations

from explorer.ui import state


def open_tab(at, tab: str):
    """``at`` run with the tab ``tab`` (its id in ``ui.tabs.TABS``) open."""
    at.session_state[state.TAB] = tab
    return at.run()
