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

from explorer.engine import Engine
from explorer.engine.runner import Limits

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # graphs.py, zips.py, corpus.py

# A lower memory cap than the server's: a model that gets past the static checks and still grows is
# stopped well before it troubles a shared test machine.
LIMITS = Limits(memory_bytes=3 << 30, inspect_s=90.0, max_workers=2)


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


def leftovers(root: Path) -> list[str]:
    """What lies under ``root`` but the workers' own directories of a live engine (removed when it closes)."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")
                  if not p.relative_to(root).parts[0].startswith("explorer-worker-"))


ROOT = HERE.parents[1]


def cli(*args: str, timeout: float = 120, env: dict | None = None) -> subprocess.CompletedProcess:
    """The command line as a user runs it, in a process of its own (``python -m explorer ...``)."""
    return subprocess.run([sys.executable, "-m", "explorer", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def one_line_refusal(proc: subprocess.CompletedProcess, status: int = 2) -> str:
    """The refusal line of a command that must have failed with ``status``, one line, no traceback."""
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == status, (proc.returncode, proc.stderr[-2000:])
    assert len(lines) == 1 and lines[0].startswith("explorer: error: "), proc.stderr[-2000:]
    assert "Traceback" not in proc.stderr and not proc.stdout
    return lines[0]
