"""The engine's own temporary folders: named after the process that owns them, so that a later process can
remove those whose owner is gone.

A worker's folder (its dumps, its requests' files) and a fix's copies are removed by the process that made
them, however a request ends; only a process killed outright (SIGKILL, the machine's OOM killer) leaves its
folders behind, and the next engine on the machine sweeps them.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile

_OWNED = re.compile(r"^explorer-(worker|fix|check|diagnose)-(\d+)-")


def folder(kind: str) -> str:
    """A new private folder ``explorer-<kind>-<pid>-*`` in the system's temporary folder (kind: worker, fix, check:
    the outputs an agreement check compares across two workers, diagnose: a way around's rewritten model)."""
    return tempfile.mkdtemp(prefix=f"explorer-{kind}-{os.getpid()}-")


def sweep(root: str | None = None) -> list[str]:
    """Remove the folders of this user's explorer processes that no longer run; the folders removed."""
    root = root or tempfile.gettempdir()
    removed: list[str] = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return removed
    for entry in entries:
        match = _OWNED.match(entry.name)
        if not match or not entry.is_dir(follow_symlinks=False):
            continue
        try:
            if entry.stat(follow_symlinks=False).st_uid != os.getuid() or alive(int(match.group(2))):
                continue
        except OSError:
            continue
        shutil.rmtree(entry.path, ignore_errors=True)
        removed.append(entry.path)
    return removed


def alive(pid: int) -> bool:
    """Whether a process of this number runs (one of another user counts as running: not ours to judge)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process holds that number: not ours to judge
        return True
    return True
