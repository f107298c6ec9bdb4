"""One engine for the security tests, its workers and temporary files under a temp folder of their own.

``temp_root`` is TMPDIR for this process and every worker it starts: whatever a request leaves behind
(a model's copy, AutoGraph's generated files) shows there, and the tests assert it stays empty.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

from explorer.engine import Engine
from explorer.engine.runner import Limits

sys.path.insert(0, str(Path(__file__).resolve().parent))  # graphs.py, corpus.py

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
def engine(temp_root):
    engine = Engine(LIMITS, cache_dir=None)
    yield engine
    engine.close()


def leftovers(root: Path) -> list[str]:
    """What lies under ``root`` but the workers' own directories of a live engine (removed when it closes)."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")
                  if not p.relative_to(root).parts[0].startswith("explorer-worker-"))
