"""Opening a tab of the page in an AppTest. Only the open tab's panel runs (Streamlit's lazy tabs), so a test opens
the tab whose panel it reads, the way a link opens it: by its id in the page's state (``state.TAB``, which a link's
``tab=`` and a click on the tab set). AppTest has no click on a tab; the browser tests click them."""

from __future__ import annotations

from collections.abc import Iterator

from explorer.ui import state, tabs


def open_tab(at, tab: str):
    """``at`` run with the tab ``tab`` (its id in ``ui.tabs.TABS``: "why", "bench" ...) open."""
    at.session_state[state.TAB] = tab
    return at.run()


def each_tab(at) -> Iterator[str]:
    """Every tab the page shows, opened in turn (``at`` run with it open): yields its id. The last stays open."""
    ids = {tab.title: tab.id for tab in tabs.TABS}
    for tab in [ids[t.label] for t in at.tabs]:
        open_tab(at, tab)
        yield tab
