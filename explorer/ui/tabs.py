"""The page's tabs, one table: what each shows, and which models get it.

A tab is offered for a model when its id is in the model source's ``offers`` (``model.sources``);
``"compilers"`` there stands for every compiler's own tab. Adding a tab: a panel function and one
line here (and its id in the ``offers`` of the sources that get it).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Callable

import streamlit as st
from streamlit.errors import FragmentHandledException

from ..errors import shown
from ..model import compilers
from ..model.hooks import hook
from . import agreement, bench, gpu_prediction, grappler_log, lessons, matrix, passes, report, stages, state, why
from .sidebar import Choice


log = logging.getLogger(__name__)


@dataclass(frozen=True)
class View:
    """What a tab's panel draws from: the engine the page runs on, the sidebar's choice, its result."""

    engine: object
    choice: Choice
    result: dict
    gpu_here: bool  # a real GPU is visible to TensorFlow here


def _reported(v: View) -> dict:
    """The result with its near-misses' setting-fixes settled (the fusion report shows them; an engine call that
    runs up to a few more configurations the first time)."""
    report = v.result.get("report") or {}
    if report.get("fixes_checked") is None and report.get("near_misses"):
        with st.spinner("Running the settings that might fuse the near-misses, to offer only those that do…"):
            return v.engine.check_fixes(v.choice.model, v.choice.config, v.result)
    return v.engine.check_fixes(v.choice.model, v.choice.config, v.result)


def _why(v: View) -> None:
    source, spec = v.choice.source, v.choice.spec
    result = v.result if source.checklist else _reported(v)  # no checklist: the whole-model report instead
    why.panel(result, source.stem(spec), v.choice.model.p, gpu_here=v.gpu_here)


def _compiler_panel(compiler: compilers.Compiler) -> Callable[[View], None]:
    return lambda v: hook(compiler.page)(v.engine, v.choice, v.result)


def _runs(panel: Callable[[View], None], predicted: Callable[[View], None]) -> Callable[[View], None]:
    """A panel that times the model: a simulated GPU runs nothing, so there the tab predicts instead (a roofline)."""
    return lambda v: predicted(v) if v.result.get("simulated") else panel(v)


@dataclass(frozen=True)
class Tab:
    id: str  # what a model source's ``offers`` names
    title: str
    panel: Callable[[View], None]
    offered_by: str = ""  # the ``offers`` entry that brings it, when not its id ("compilers")


TABS: tuple[Tab, ...] = (
    Tab("graphs", "Graphs before → after",
        lambda v: stages.panel(v.result, agreement.focus(v.result, lessons.focus()))),
    Tab("why", "Why it fused (or not)", _why),
    Tab("report", "Fusion report", lambda v: report.panel(_reported(v), engine=v.engine, choice=v.choice)),
    Tab("passes", "Pass pipeline", lambda v: passes.panel(v.engine, v.result, v.choice)),
    Tab("bench", "Fused vs unfused", _runs(lambda v: bench.panel(v.engine, v.choice),
                                           lambda v: gpu_prediction.panel(v.engine, v.choice, v.result))),
    Tab("sweep", "Size sweep", _runs(lambda v: bench.sweep_panel(v.engine, v.choice),
                                     lambda v: gpu_prediction.sweep_panel(v.engine, v.choice))),
    Tab("log", "Grappler's log", lambda v: grappler_log.panel(v.result)),
    # Each compiler's own tab (model.compilers: its ``page``), beside Grappler's tabs above.
    *(Tab(c.id, c.tab, _compiler_panel(c), offered_by="compilers") for c in compilers.COMPILERS if c.page),
    Tab("matrix", "What-if matrix", lambda v: matrix.panel(v.engine, v.choice)),
)


def offered(offers) -> list[Tab]:
    return [tab for tab in TABS if (tab.offered_by or tab.id) in offers]


def _opened(first: str, ids: dict) -> None:
    """The user opened a tab: kept by id (None for the first), so the link and a later run keep it open."""
    tab = ids.get(st.session_state.get(state.TAB_TITLE))
    st.session_state[state.TAB] = None if tab == first else tab


def render(view: View) -> None:
    """The tabs the model's source offers, in the table's order; the open one is kept by its id (``state.TAB``),
    across a change of device or flags, a rerun and a link. Only the open tab's panel runs (Streamlit's lazy tabs:
    opening another reruns the page); what the user set in the others is kept (``state.KEEP_HIDDEN``)."""
    shown = offered(view.choice.source.offers)
    wanted = st.session_state.get(state.TAB)
    open_tab = next((tab for tab in shown if tab.id == wanted), shown[0])
    st.session_state[state.TAB_TITLE] = open_tab.title
    # ``default`` is part of the tab bar's identity: a new open tab mounts a new bar, which opens the tab it is
    # given. A mounted bar moves to a tab set from here (a link, a file, a lesson) only when its tabs are already
    # drawn, and on a loaded browser they may not be yet; it then stayed on the old tab while the link named another.
    containers = st.tabs([tab.title for tab in shown], key=state.TAB_TITLE, default=open_tab.title,
                         on_change=_opened, args=(shown[0].id, {tab.title: tab.id for tab in shown}))
    for tab, container in zip(shown, containers):
        if container.open is False:  # a closed tab (None: tabs that track no state, where every panel runs)
            continue
        with container:
            _isolated(tab, view)


def _isolated(tab: Tab, view: View) -> None:
    """A tab's panel; one that fails says so in one line in its own tab, and the page's run goes on to its end
    (a run cut short by an exception would leave the browser without the widgets drawn after it)."""
    try:
        tab.panel(view)
    except FragmentHandledException:
        pass  # a fragment's panel failed and showed it in its place
    except Exception as exc:  # one tab's bug must not take the page down
        log.exception("the %s tab failed", tab.id)
        st.error(f"This tab could not be drawn ({shown(type(exc).__name__)}: {shown(exc)}); the other tabs are "
                 "unaffected.", icon=":material/error:")
