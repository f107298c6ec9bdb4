"""The linked view on the page: both graphs in one frame, hover a node to light up its counterparts.

``present.linked`` makes the view (the links, the HTML document with its CSS and JS); ``show`` lays the two
DOT graphs out as SVG and puts the document on the page in an ``st.iframe``. It returns False when
Graphviz's ``dot`` is missing, so that the caller can draw with ``st.graphviz_chart`` instead.
"""

from __future__ import annotations

import shutil

import streamlit as st

from ..errors import ExplorerError
from ..present.linked import HINT, page_html
from . import cached, state


def page_theme() -> str:
    """"dark" or "light": the theme the browser shows the page in (the drawing's script follows later changes)."""
    try:
        return "dark" if st.context.theme.type == "dark" else "light"
    except Exception:  # noqa: BLE001 - no browser (a test's AppTest): the light theme
        return "light"


def show(before_dot: str, after_dot: str, groups: list[dict], *, hint: str = HINT,
         titles: tuple[str, str] = ("Before", "After"), marks=(), focus=()) -> bool:
    """Draw both graphs linked; False (and nothing drawn) when there is no Graphviz to make SVG.

    ``marks``: element ids of search matches; ``focus``: those a lesson points at. The drawing follows the
    page's theme and the presenter view (``state.PRESENT``).

    When Graphviz is there but fails or takes too long, its message is shown instead (drawing the
    DOT in the browser would take longer still)."""
    try:
        before_svg, after_svg = cached.svg(before_dot), cached.svg(after_dot)
    except ExplorerError as exc:
        if shutil.which("dot") is None:
            return False
        st.warning(str(exc))
        return True
    document = page_html(before_svg, after_svg, groups, hint, fit=True, titles=titles, marks=marks, focus=focus,
                         present=state.presenting(), theme=page_theme())
    st.iframe(document, height="content")
    return True

