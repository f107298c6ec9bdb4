"""The package's shape: imports run one way through the layers, with no cycles, and heavy
dependencies stay where they belong.

Layers, lowest first (a module may import its own subpackage and lower layers, never higher):

    0  explorer, explorer.errors
    1  explorer.model      specs, chains, presets, flags, devices, the neutral graph, result shapes
    2  explorer.analysis   fusions, diffs, rules and verdicts, statistics, Grappler's log and passes
    3  explorer.present    DOT/SVG, charts, repro, the command line     (present and engine are
       explorer.engine     worker processes, queue, cache               peers: neither imports the other)
    4  explorer.worker     the worker process, the only importer of TensorFlow   (peers too:
       explorer.cli        the command line                                      none imports another)
       explorer.ui         the Streamlit page
    5  explorer.__main__   ``python -m explorer``: runs the command line

The import graph is read from the source (ast), lazy imports inside functions included, so a
cycle cannot hide behind a function-level import. Besides, each module is imported in a fresh
interpreter: afterwards ``tensorflow`` must not be loaded (outside explorer.worker), nor
``streamlit`` (outside explorer.ui).
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "explorer"
HEAVY = ("tensorflow", "streamlit")

LAYERS = {
    "explorer": 0, "explorer.errors": 0,
    "explorer.model": 1,
    "explorer.analysis": 2,
    "explorer.present": 3, "explorer.engine": 3,
    "explorer.worker": 4, "explorer.cli": 4, "explorer.ui": 4,
    "explorer.__main__": 5,
}


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def group(module: str) -> str:
    """The layer group a module belongs to: its entry in LAYERS, the longest prefix that matches."""
    for name in sorted(LAYERS, key=len, reverse=True):
        if module == name or module.startswith(name + "."):
            return name
    raise AssertionError(f"{module} is in no layer: add its subpackage to LAYERS")


def imports_of(module: str, path: Path) -> set[str]:
    """explorer modules that ``module`` imports anywhere in its source (resolved to modules, not names)."""
    is_package = path.name == "__init__.py"
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.split(".")[0] == "explorer"}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "explorer":
                continue
            for alias in node.names:  # "from . import stats" names a module; "from .x import f" a name
                sub = f"{target}.{alias.name}"
                found.add(sub if sub in MODULES else target)
    found.discard(module)
    return {m for m in found if m in MODULES}


def import_graph() -> dict[str, set[str]]:
    return {m: imports_of(m, p) for m, p in MODULES.items()}


def violations(graph: dict[str, set[str]]) -> list[str]:
    """Every import that runs against the layers, in words."""
    out = []
    for module, targets in sorted(graph.items()):
        mine = group(module)
        for target in sorted(targets):
            theirs = group(target)
            if theirs == mine:
                continue
            if LAYERS[theirs] > LAYERS[mine]:
                out.append(f"{module} (layer {LAYERS[mine]}) imports {target} (layer {LAYERS[theirs]}, higher)")
            elif LAYERS[theirs] == LAYERS[mine]:
                out.append(f"{module} imports its peer {target}: {mine} and {theirs} must not import each other")
    return out


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_every_module_is_in_a_layer():
    assert "explorer.worker.main" in MODULES and "explorer.ui.page" in MODULES
    for module in MODULES:
        group(module)


def test_imports_run_one_way_through_the_layers():
    assert violations(import_graph()) == []


def test_the_package_has_no_import_cycles():
    assert cycles(import_graph()) == []


def test_the_checks_catch_an_upward_import_and_a_cycle():
    """The same checks on a graph with one bad edge added: a model module importing the engine."""
    graph = import_graph()
    graph["explorer.model.spec"] = graph["explorer.model.spec"] | {"explorer.engine.engine"}
    assert any("explorer.model.spec (layer 1) imports explorer.engine.engine (layer 3, higher)" in v
               for v in violations(graph))
    assert any("explorer.model.spec" in c and "explorer.engine.engine" in c for c in cycles(graph))
    graph = import_graph()
    graph["explorer.present.dot"] = graph["explorer.present.dot"] | {"explorer.engine.cache"}
    assert any("peer" in v for v in violations(graph))


def _importable() -> list[str]:
    return [m for m in MODULES if not m.endswith("__main__") and group(m) != "explorer.worker"]


def _forbidden(module: str) -> tuple[str, ...]:
    return ("tensorflow",) if group(module) == "explorer.ui" else HEAVY


# One interpreter per group checks every module: it imports only what the group may load anyway (the
# third-party packages the checked modules import at module level, and streamlit for the page), then forks a fresh
# child per module, so each module's own imports are seen from a clean state at the cost of a fork instead of
# an interpreter start, and no child imports numpy or plotly again. A preload that loads a heavy module fails.
CHECK = """
import importlib, json, os, sys
preload, modules, heavy = sys.argv[1].split(","), sys.argv[2].split(","), sys.argv[3:]
for name in filter(None, preload):
    had = set(sys.modules)
    importlib.import_module(name)
    loaded = [m for m in heavy if m in sys.modules and m not in had]
    if loaded and name not in heavy:
        sys.exit(f"preloading {name} loaded {loaded}: every module that imports {name} imports it too")
before = set(sys.modules)
found = {}
for module in modules:
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            importlib.import_module(module)
            out = {"loaded": sorted(m for m in heavy if m in sys.modules and m not in before)}
        except BaseException as exc:
            out = {"error": f"{type(exc).__name__}: {exc}"}
        os.write(write, json.dumps(out).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        found[module] = json.loads(pipe.read() or '{"error": "the child died"}')
    os.waitpid(pid, 0)
print(json.dumps(found))
"""


def third_party_imports(modules: list[str]) -> list[str]:
    """The third-party packages (neither the standard library, explorer nor a heavy one) that ``modules``
    import at module level, i.e. that importing them loads anyway."""
    found = set()
    for module in modules:
        for node in ast.parse(MODULES[module].read_text()).body:
            if isinstance(node, ast.Import):
                found |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                found.add(node.module.split(".")[0])
    return sorted(found - set(sys.stdlib_module_names) - {"explorer", "__future__", *HEAVY})


@pytest.fixture(scope="module")
def imported() -> dict:
    """{module: {"loaded": [heavy modules its import loaded]} or {"error": ...}}, every importable module."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    found = {}
    for preload, modules in (([], [m for m in _importable() if group(m) != "explorer.ui"]),
                             (["streamlit"], [m for m in _importable() if group(m) == "explorer.ui"])):
        preload += third_party_imports(_importable())
        proc = subprocess.run([sys.executable, "-c", CHECK, ",".join(preload), ",".join(modules), *HEAVY],
                              cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        found.update(json.loads(proc.stdout.strip().splitlines()[-1]))
    return found


@pytest.mark.parametrize("module", _importable())
def test_module_imports_no_heavy_dependency(imported, module):
    outcome = imported[module]
    assert "error" not in outcome, f"import {module} failed: {outcome.get('error')}"
    bad = sorted(set(outcome["loaded"]).intersection(_forbidden(module)))
    assert not bad, (
        f"importing {module} imports {', '.join(bad)}: only explorer.worker may import tensorflow, and only "
        f"explorer.ui and app.py may import streamlit; import it lazily inside the function that needs it, "
        f"or move the code"
    )


def test_nothing_outside_the_worker_imports_it():
    graph = import_graph()
    outside = {m: sorted(t for t in targets if group(t) == "explorer.worker")
               for m, targets in graph.items() if group(m) != "explorer.worker"}
    assert {m: t for m, t in outside.items() if t} == {}
