"""One engine for the security tests, its workers and temporary files under a temp folder of their own.

``temp_root`` is TMPDIR for this process and every worker it starts: whatever a request leaves behind
(a model's copy, AutoGraph's generated files) shows there, and the tests assert it stays empty.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import streamlit.testing.v1  # noqa: F401 - made now: it keeps a temporary directory of its own for the process

from security_support import LIMITS

from explorer.engine import Engine

HERE = Path(__file__).resolve().parent


@pytest.fixture(scope="package")
def temp_root(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("tmpdir")
    old_env, old_dir = os.environ.get("TMPDIR"), tempfile.tempdir
    os.environ["TMPDIR"], tempfile.tempdir = str(root), str(root)
    yield root
    tempfile.tempdir = old_dir
    os.environ.pop("TMPDIR") if old_env is None else os.environ.__setitem__("TMPDIR", old_env)


@pytest.fixture(scope="package")
def bases(tmp_path_factory) -> Path:
    """Real models made by TensorFlow (make_bases.py), in a process of its own."""
    directory = tmp_path_factory.mktemp("bases")
    env = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "TMPDIR": str(tmp_path_factory.mktemp("bases-tmp"))}
    proc = subprocess.run([sys.executable, str(HERE / "make_bases.py"), str(directory)], capture_output=True,
                          text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return directory


@pytest.fixture(scope="package")
def page_server(tmp_path_factory, temp_root) -> Path:
    """The page's surroundings: uploads and results in the test's folders, its engine closed at the end."""
    keys = ("EXPLORER_UPLOAD_DIR", "EXPLORER_CACHE_DIR")
    old = {k: os.environ.get(k) for k in keys}
    uploads = tmp_path_factory.mktemp("uploads")
    os.environ["EXPLORER_UPLOAD_DIR"], os.environ["EXPLORER_CACHE_DIR"] = str(uploads), str(tmp_path_factory.mktemp("cache"))
    yield uploads
    from explorer.ui import cached

    cached.shutdown()
    for key, value in old.items():
        os.environ.pop(key) if value is None else os.environ.__setitem__(key, value)


@pytest.fixture(scope="package")
def engine(temp_root):
    engine = Engine(LIMITS, cache_dir=None)
    yield engine
    engine.close()

