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


def test_the_check_reads_calls_from_source():
    """The source reading itself: a module that reaches into the cache is caught."""
    calls = engine_calls(ROOT / "explorer" / "engine" / "machine_profile.py")
    assert {"queue", "cache", "_run", "fingerprint"} <= set(calls)
