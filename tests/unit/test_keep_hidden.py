"""Every keyed widget of a tab's panel keeps its value while its tab is closed (``persist_state=state.KEEP_HIDDEN``).

Only the open tab's panel runs, and Streamlit forgets the value of a widget a run does not draw: a panel widget
without it comes back reset when its tab is opened again (README: "Adding a tab"). Read from the source, so a new
widget that forgets it fails here before any page runs.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import streamlit as st

UI = Path(__file__).resolve().parents[2] / "explorer" / "ui"

# The ui modules whose keyed widgets draw outside the tabs (the sidebar, the header, the share and what-if
# expanders above the tabs): there a widget not drawn is one the user moved away from, and is meant to reset.
OUTSIDE_TABS = {"sidebar", "model_input", "stack_editor", "upload", "lessons", "presenter", "share", "whatif"}

def _keeping_widgets() -> set[str]:
    """Streamlit's widgets that take persist_state (value widgets; buttons keep nothing)."""
    names = set()
    for name in dir(st):
        try:
            if "persist_state" in inspect.signature(getattr(st, name)).parameters:
                names.add(name)
        except (TypeError, ValueError):
            continue
    return names


def _forgetting(source: str, widgets: set[str]) -> list[tuple[int, str]]:
    """(line, widget) of each call of a keeping widget with a ``key=`` but without ``persist_state=state.KEEP_HIDDEN``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in widgets):
            continue
        keywords = {k.arg: k.value for k in node.keywords}
        if "key" not in keywords:
            continue
        kept = keywords.get("persist_state")
        if not (isinstance(kept, ast.Attribute) and kept.attr == "KEEP_HIDDEN"
                and isinstance(kept.value, ast.Name) and kept.value.id == "state"):
            found.append((node.lineno, node.func.attr))
    return found


def test_the_scan_knows_streamlits_keeping_widgets():
    widgets = _keeping_widgets()
    assert {"radio", "selectbox", "number_input", "text_input", "toggle", "checkbox", "multiselect"} <= widgets


def test_every_keyed_panel_widget_keeps_its_value_while_hidden():
    widgets = _keeping_widgets()
    panels = sorted(p for p in UI.glob("*.py") if p.stem not in OUTSIDE_TABS)
    assert len(panels) > 10 and all((UI / f"{name}.py").exists() for name in OUTSIDE_TABS)
    forgetting = [f"{p.name}:{line} {widget}" for p in panels for line, widget in _forgetting(p.read_text(), widgets)]
    assert not forgetting, "panel widgets without persist_state=state.KEEP_HIDDEN: " + ", ".join(forgetting)


def test_the_scan_finds_a_widget_that_forgets():
    widgets = _keeping_widgets()
    source = ("x = st.radio('a', [1], key='k', persist_state=state.KEEP_HIDDEN)\n"
              "y = left.toggle('b', key='t')\n"
              "z = st.selectbox('c', [1], key='s', persist_state='page')\n"
              "w = st.button('d', key='b')\n")
    assert _forgetting(source, widgets) == [(2, "toggle"), (3, "selectbox")]
