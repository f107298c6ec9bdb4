"""An AppTest of a page script over the recordings, at the small MatMul sizes the recordings hold (oneDNN on)."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from explorer.ui import state

RECORDINGS = Path(__file__).resolve().parents[1] / "fixtures" / "recorded"


def small_app(script: str, **session) -> AppTest:
    """``script`` formatted with ``recordings``; ``session``: session-state keys set before the first run."""
    at = AppTest.from_string(script.format(recordings=str(RECORDINGS)), default_timeout=30)
    for name, value in {"m": 64, "k": 32, "n": 16}.items():
        at.session_state[state.param_key("matmul_bias_gelu_approx", name)] = value
    at.session_state[state.env_key("TF_ENABLE_ONEDNN_OPTS")] = "1"
    for key, value in session.items():
        at.session_state[key] = value
    return at
