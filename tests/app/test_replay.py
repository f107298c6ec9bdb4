"""The page on an engine it is given: results recorded by the real engine, replayed with no worker.

page.render takes the engine it uses; app.py gives it the server's live Engine. Here a real run is
recorded (the live engine's result cache, as it writes it), then the page is drawn from a
ReplayEngine over those files in a fresh session: the same fusions appear, and a configuration
nothing was recorded for gets a readable message rather than a traceback or a worker.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import psutil
import pytest
from streamlit.testing.v1 import AppTest

from explorer.engine import Engine
from explorer.engine.replay import ReplayEngine
from explorer.model.flags import Config
from explorer.ui import state

pytestmark = pytest.mark.tf

SPEC = {"preset": "matmul_bias_relu", "params": {"m": 64, "k": 32, "n": 16}}
ONEDNN_ON = Config.make("cpu", {"TF_ENABLE_ONEDNN_OPTS": "1"})

SCRIPT = """
import streamlit as st
st.set_page_config(layout="wide")
from explorer.engine.replay import ReplayEngine
from explorer.ui import page
page.render(ReplayEngine({directory!r}))
"""


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> Path:
    """A directory of results the live engine recorded for SPEC with oneDNN on."""
    directory = tmp_path_factory.mktemp("recorded")
    engine = Engine(cache_dir=directory)
    try:
        engine.inspect(SPEC, ONEDNN_ON)
    finally:
        engine.close()
    return directory


def replay_app(directory: Path, **session) -> AppTest:
    at = AppTest.from_string(SCRIPT.format(directory=str(directory)), default_timeout=60)
    at.session_state[state.PRESET] = SPEC["preset"]
    for name, value in SPEC["params"].items():
        at.session_state[state.param_key(SPEC["preset"], name)] = value
    at.session_state[state.env_key("TF_ENABLE_ONEDNN_OPTS")] = "1"
    for key, value in session.items():
        at.session_state[key] = value
    return at


def worker_processes() -> set[int]:
    me = psutil.Process()
    return {p.pid for p in me.children(recursive=True) if "explorer.worker" in " ".join(p.cmdline())}


def test_replayed_results_draw_the_same_page_without_a_worker(recorded, tmp_path):
    replayed = tmp_path / "replay"
    shutil.copytree(recorded, replayed)
    direct = ReplayEngine(replayed).inspect(SPEC, ONEDNN_ON)
    assert [f["describe"] for f in direct["fusions"]] == ["MatMul + BiasAdd + Relu → _FusedMatMul [BiasAdd, Relu]"]
    before = worker_processes()
    at = replay_app(replayed).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    text = " ".join(m.value for m in at.markdown)
    assert "**1 fusion** found by Grappler" in text
    assert "served from cache" in " ".join(c.value for c in at.caption)
    assert worker_processes() <= before, "replaying must not start a TensorFlow worker"


def test_a_configuration_nothing_was_recorded_for_is_a_message(recorded, tmp_path):
    replayed = tmp_path / "replay"
    shutil.copytree(recorded, replayed)
    at = replay_app(replayed, **{state.env_key("TF_ENABLE_ONEDNN_OPTS"): "0"}).run()
    assert not at.exception
    errors = [e.value for e in at.error]
    assert any("no recorded inspect result for matmul_bias_relu" in e and "TF_ENABLE_ONEDNN_OPTS=0" in e
               for e in errors), errors
