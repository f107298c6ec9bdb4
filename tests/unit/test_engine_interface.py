"""The engine's interface (engine/interface.py) is what the page and the command line use, and both
engines implement all of it.

- ``Engine`` and ``ReplayEngine`` have every member of ``EngineInterface``, with the same parameters.
- The page's modules and the command line call nothing on an engine outside the interface (read from
  their source: an attribute of a name ``engine``), so a page test on a ReplayEngine exercises what the
  live page does, and neither reaches into the engine's cache.
"""

from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from explorer.engine import Engine, EngineInterface
from explorer.engine.replay import ReplayEngine

ROOT = Path(__file__).resolve().parents[2]
MEMBERS = sorted(name for name in vars(EngineInterface) if not name.startswith("_")) + ["name"]


def parameters(function) -> list[tuple]:
    return [(p.name, p.kind, p.default) for p in inspect.signature(function).parameters.values()]


@pytest.mark.parametrize("engine_class", [Engine, ReplayEngine])
@pytest.mark.parametrize("member", sorted(set(MEMBERS) - {"name"}))
def test_the_engine_has_the_interfaces_member_with_its_parameters(engine_class, member):
    assert hasattr(engine_class, member), f"{engine_class.__name__} lacks {member}"
    assert parameters(getattr(engine_class, member)) == parameters(getattr(EngineInterface, member)), member


def test_both_engines_are_instances_of_the_interface(tmp_path):
    live, replay = Engine(cache_dir=None), ReplayEngine(tmp_path)
    try:
        assert isinstance(live, EngineInterface) and isinstance(replay, EngineInterface)
        assert live.name == "live" and replay.name == f"replay:{tmp_path}"
    finally:
        live.close()
        replay.close()


def engine_calls(path: Path) -> dict[str, int]:
    """Attributes read off a name ``engine`` (or ``self.engine``) in a module, with their line."""
    found = {}
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Attribute):
            owner = node.value
            if (isinstance(owner, ast.Name) and owner.id == "engine") or (
                    isinstance(owner, ast.Attribute) and owner.attr == "engine"):
                found.setdefault(node.attr, node.lineno)
    return found


CALLERS = sorted([*(ROOT / "explorer" / "ui").glob("*.py"), *(ROOT / "explorer" / "cli").glob("*.py")])


@pytest.mark.parametrize("path", CALLERS, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_page_and_the_cli_use_the_interface_only(path):
    outside = {attr: line for attr, line in engine_calls(path).items() if attr not in MEMBERS}
    assert outside == {}, f"{path.name} calls the engine outside engine/interface.py: {outside}"


def test_the_check_reads_calls_from_source(tmp_path):
    """The source reading itself: a module that reaches into the cache is caught."""
    module = tmp_path / "reaching.py"
    module.write_text("def f(engine):\n    engine.cache.get('k')\n    return engine._run(None, 'x', {}, 1)\n")
    assert set(engine_calls(module)) == {"cache", "_run"}


PRIVATE = {name for name in [*vars(Engine), *vars(Engine(cache_dir=None))]
           if name.startswith("_") and not name.startswith("__")}
OWN = {ROOT / "explorer" / "engine" / "engine.py", ROOT / "explorer" / "engine" / "replay.py"}  # and its subclasses


def private_reads(path: Path) -> dict[str, int]:
    """The engine's private members read off anything named like an engine (``engine``, ``self.engine``,
    ``cached.engine()``) in a module, with their line."""
    found = {}
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Attribute) and node.attr in PRIVATE and "engine" in ast.unparse(node.value):
            found.setdefault(node.attr, node.lineno)
    return found


@pytest.mark.parametrize("path", sorted(p for folder in ("explorer", "benchmarks", "devkit", "tests")
                                        for p in (ROOT / folder).rglob("*.py") if p not in OWN),
                         ids=lambda p: str(p.relative_to(ROOT)))
def test_no_module_but_the_engines_own_touches_its_private_members(path):
    assert private_reads(path) == {}, f"{path.name} reaches into the engine: {private_reads(path)}"


def test_the_private_check_sees_a_reach(tmp_path):
    module = tmp_path / "reaching.py"
    module.write_text("def f(engine):\n    return engine._run_fresh(None, 'x', {}, 1, None)\n")
    assert {"_run", "_run_fresh", "_request", "_inflight"} <= PRIVATE
    assert private_reads(module) == {"_run_fresh": 2}


def test_the_page_starts_no_thread_of_its_own():
    """Background work (a worker started ahead, a lesson prepared) is the engine's: ``Engine.prestart``, ``prepare``."""
    for path in sorted((ROOT / "explorer" / "ui").glob("*.py")):
        imported = {alias.name.split(".")[0] for node in ast.walk(ast.parse(path.read_text(), str(path)))
                    if isinstance(node, (ast.Import, ast.ImportFrom))
                    for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")])}
        assert not imported & {"threading", "concurrent", "multiprocessing", "_thread"}, path.name
