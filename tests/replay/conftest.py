"""The page on recorded worker answers: AppTest over a ReplayEngine, no TensorFlow, no worker process.

``replay_app(**session_state)`` is an AppTest of the page given ``ReplayEngine(RECORDINGS)``; the
recordings (tests/fixtures/recorded/*.worker.json) are the real worker's answers to the requests
these tests make, so everything the engine and the page do with an answer runs as it does live.
Each recording is keyed by its request, not by the code: the parent's analysis may change freely.

To record them again (new requests, or a worker whose answers changed), run these tests with
``EXPLORER_RECORD=1``: the page is then given a ``RecordingEngine`` (the live engine, real workers)
that writes every worker answer into RECORDINGS.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RECORDINGS = ROOT / "tests" / "fixtures" / "recorded"
RECORD = os.environ.get("EXPLORER_RECORD") == "1"

# Small sizes: the graphs are those of the full sizes, and recordings stay small.
SMALL = {
    "matmul_bias_gelu_approx": {"m": 64, "k": 32, "n": 16},
    "matmul_bias_relu": {"m": 64, "k": 32, "n": 16},
}

SCRIPT = """
import streamlit as st
st.set_page_config(layout="wide")
from explorer.engine.replay import RecordingEngine, ReplayEngine
from explorer.ui import page


@st.cache_resource(on_release=lambda engine: engine.close())
def recorder():
    return RecordingEngine({recordings!r}, cache_dir={cache!r})


page.render(recorder() if {record!r} else ReplayEngine({recordings!r}))
"""


@pytest.fixture(scope="session")
def _cache_dir(tmp_path_factory):
    """The recorder's result cache: new, so every request reaches a worker (and its recording)."""
    directory = tmp_path_factory.mktemp("recorder-cache")
    yield directory
    if RECORD:
        import streamlit as st

        st.cache_resource.clear()  # closes the recorder's workers
    shutil.rmtree(directory, ignore_errors=True)


@pytest.fixture
def replay_app(_cache_dir):
    """replay_app(**session_state) -> an AppTest of the page on the recordings (not yet run)."""
    from streamlit.testing.v1 import AppTest

    from explorer.ui import state

    def make(**extra):
        script = SCRIPT.format(recordings=str(RECORDINGS), cache=str(_cache_dir), record=RECORD)
        at = AppTest.from_string(script, default_timeout=300 if RECORD else 30)
        for model_id, params in SMALL.items():
            for name, value in params.items():
                at.session_state[state.param_key(model_id, name)] = value
        at.session_state[state.env_key("TF_ENABLE_ONEDNN_OPTS")] = "1"
        for key, value in extra.items():
            at.session_state[key] = value
        return at

    return make
