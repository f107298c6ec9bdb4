"""The import boundary: TensorFlow lives in the worker process, Streamlit in explorer.ui only.

Each module under explorer/ (found on disk, recursively, so new modules are checked as they
arrive) is imported in a fresh interpreter; afterwards ``tensorflow`` must not be in sys.modules,
and, for modules outside ``explorer.ui``, neither may ``streamlit``. ``explorer.worker`` and
``explorer.models`` (with anything below it) are the exceptions: the worker process imports them
with TensorFlow. ``__main__`` modules are not imported (that would run the program).
"""

from __future__ import annotations

import json
import os
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "explorer"
EXEMPT = ("explorer.worker", "explorer.models")
HEAVY = ("tensorflow", "streamlit")

CHECK = """
import importlib, json, sys
importlib.import_module(sys.argv[1])
print(json.dumps(sorted(m for m in sys.argv[2:] if m in sys.modules)))
"""


def _discover(path: Path, prefix: str) -> list[str]:
    """Module names below ``path``, found with pkgutil on disk: nothing is imported here."""
    names = []
    for info in pkgutil.iter_modules([str(path)]):
        name = f"{prefix}.{info.name}"
        if info.name == "__main__" or name in EXEMPT or name.startswith(tuple(e + "." for e in EXEMPT)):
            continue
        names.append(name)
        if info.ispkg:
            names.extend(_discover(path / info.name, name))
    return names


MODULES = ["explorer", *_discover(PACKAGE, "explorer")]


def _forbidden(module: str) -> tuple[str, ...]:
    in_ui = module == "explorer.ui" or module.startswith("explorer.ui.")
    return ("tensorflow",) if in_ui else HEAVY


def test_discovery_finds_the_package():
    assert "explorer" in MODULES
    assert not any(m.startswith(EXEMPT) for m in MODULES)


@pytest.mark.parametrize("module", MODULES)
def test_module_imports_no_heavy_dependency(module):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run(
        [sys.executable, "-c", CHECK, module, *HEAVY],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, f"import {module} failed:\n{proc.stderr[-3000:]}"
    loaded = set(json.loads(proc.stdout.strip().splitlines()[-1]))
    bad = sorted(loaded.intersection(_forbidden(module)))
    assert not bad, (
        f"importing {module} imports {', '.join(bad)}: only explorer.worker (and what it imports) may "
        f"import tensorflow, and only explorer.ui and app.py may import streamlit; import it lazily "
        f"inside the function that needs it, or move the code"
    )
