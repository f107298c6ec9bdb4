"""Settings of the server that starts the page: EXPLORER_DEFAULT_ENV, the flags new sessions start with."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from explorer.ui import state

pytestmark = pytest.mark.tf
APP = str(Path(__file__).resolve().parents[2] / "app.py")
ONEDNN = state.env_key("TF_ENABLE_ONEDNN_OPTS")
SMALL = {"m": 64, "k": 32, "n": 16}


def fresh_app() -> AppTest:
    """The page as a new visitor gets it (no flag set by the test), at small sizes."""
    at = AppTest.from_file(APP, default_timeout=180)
    for name, value in SMALL.items():
        at.session_state[state.param_key(state.DEFAULT_PRESET, name)] = value
    return at


def test_new_sessions_start_with_the_servers_default_flags(monkeypatch):
    monkeypatch.setenv("EXPLORER_DEFAULT_ENV", "TF_ENABLE_ONEDNN_OPTS=1")
    at = fresh_app().run()
    assert not at.exception and not at.warning
    assert at.session_state[ONEDNN] == "1"
    assert at.radio(key=ONEDNN).value == "1"
    assert "oneDNN on" in " ".join(m.value for m in at.markdown)
    # the visitor can still change it: the setting is a default, not a lock
    at.radio(key=ONEDNN).set_value(state.UNSET).run()
    assert not at.exception and at.session_state[ONEDNN] == state.UNSET


def test_an_unreadable_setting_is_named_and_ignored(monkeypatch):
    monkeypatch.setenv("EXPLORER_DEFAULT_ENV", "TF_ENABLE_ONEDNN_OPTS=7")
    at = fresh_app().run()
    assert not at.exception
    warnings = [w.value for w in at.warning]
    assert any("default flags are ignored" in w and "TF_ENABLE_ONEDNN_OPTS" in w and "'7'" in w for w in warnings), warnings
    assert at.session_state[ONEDNN] == state.UNSET
