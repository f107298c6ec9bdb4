"""What the security tests share besides fixtures: the engine's limits, the command line as a process, the checks
of a refusal line and of what a run left behind. (A module of its own: conftest modules of several test
folders share one name.)"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from explorer.engine.runner import Limits

ROOT = Path(__file__).resolve().parents[2]
# A lower memory cap than the server's: a model that gets past the static checks and still grows is
# stopped well before it troubles a shared test machine.
LIMITS = Limits(memory_bytes=3 << 30, inspect_s=90.0, max_workers=2)


def leftovers(root: Path) -> list[str]:
    """What lies under ``root`` but the workers' own directories of a live engine (removed when it closes)."""
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")
                  if not p.relative_to(root).parts[0].startswith("explorer-worker-"))


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
