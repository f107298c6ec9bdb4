"""AppTest of the page against the real engine: real worker processes, small sizes.

Every test starts the page from ``app.py`` with the sizes of the presets it uses made small
through session state (``state.param_key``), so each run takes a fraction of a second once a
worker of that configuration is warm. The engine is shared by all tests of the session (it is a
``st.cache_resource``), with its disk cache in a temporary directory so "served from cache" is
about this session only; its workers are stopped at the end.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
APP = str(ROOT / "app.py")

# Small sizes: the graphs are the same as at full size, and runs stay quick.
SMALL = {
    "matmul_bias_gelu_approx": {"m": 64, "k": 32, "n": 16},
    "matmul_bias_gelu_exact": {"m": 64, "k": 32, "n": 16},
    "matmul_bias_relu": {"m": 64, "k": 32, "n": 16},
    "conv2d_bias_relu": {"batch": 1, "height": 8, "width": 8, "in_channels": 4, "out_channels": 4},
    "conv2d_batchnorm_relu": {"batch": 1, "height": 8, "width": 8, "in_channels": 4, "out_channels": 4},
    "chain": {"m": 64, "k": 32, "n": 16, "batch": 1, "height": 8, "width": 8, "in_channels": 4,
              "out_channels": 4, "channels": 4},
}


@pytest.fixture(scope="session", autouse=True)
def _engine_cache(tmp_path_factory, worker_limits):
    from explorer.engine import Engine
    from explorer.ui import cached

    os.environ["EXPLORER_CACHE_DIR"] = str(tmp_path_factory.mktemp("explorer-cache"))
    # The page's engine, made as a server makes its own before the first page (cached.engine takes it), with a
    # test session's pool (tests/conftest.py): the pages ask for a dozen configurations in turns.
    engine = Engine(worker_limits, cache_dir=os.environ["EXPLORER_CACHE_DIR"])
    cached._started.append(engine)  # noqa: SLF001 - where serve.py's engine waits; no public call takes limits
    yield
    cached.shutdown()


@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item, nextitem):
    """After the last page test here, the page's workers stop: the tests that follow start their own."""
    if nextitem is None or Path(str(nextitem.fspath)).resolve().parent != HERE:
        from explorer.ui import cached

        cached.shutdown()


@pytest.fixture
def make_app():
    """make_app(**session_state) -> an AppTest of app.py (not yet run) with small sizes set."""
    from streamlit.testing.v1 import AppTest

    from explorer.ui import state

    def make(**extra):
        at = AppTest.from_file(APP, default_timeout=180)
        for model_id, params in SMALL.items():
            for name, value in params.items():
                at.session_state[state.param_key(model_id, name)] = value
        # oneDNN's default depends on the CPU (TensorFlow leaves it off without AVX-512): the tests
        # draw the page with it on, as most x86 servers have it, unless a test says otherwise.
        at.session_state[state.env_key("TF_ENABLE_ONEDNN_OPTS")] = "1"
        for key, value in extra.items():
            at.session_state[key] = value
        return at

    return make
