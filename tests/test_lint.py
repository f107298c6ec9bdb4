"""The linter and the type checker, as part of the suite CI runs: their settings are in pyproject.toml.

Both are pinned in requirements-dev.txt; a missing one is a failure, never a skip, so a machine set up
without them cannot pass by accident.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True, text=True, timeout=300)


def test_ruff_finds_nothing():
    done = _run("ruff", "check", "--no-fix", "--output-format", "concise", ".")
    assert done.returncode == 0, done.stdout + done.stderr


def test_mypy_finds_nothing():
    done = _run("mypy")  # the folders it checks: [tool.mypy] files
    assert done.returncode == 0, done.stdout + done.stderr
