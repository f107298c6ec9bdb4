"""The two tables the explorer grows by (model/sources.py, model/compilers.py) and the page's tabs (ui/tabs.py):
every hook they name exists, sits in a layer its caller may import, and every offer names a tab or an action.

Read from the source files (ast), not imported: a worker hook would import the worker's modules here.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from explorer.model.compilers import BOTH, CHOICES, COMPILERS, chosen, timed
from explorer.model.sources import SOURCES, source_for_data, source_of
from explorer.model.spec import resolve
from explorer.errors import SpecError
from tests.test_imports import LAYERS, MODULES, group

ROOT = Path(__file__).resolve().parents[2]

# Which layer calls each kind of hook: the hook's module must be in that layer or below it.
CALLERS = {"spec_type": "explorer.model", "parse": "explorer.model", "builder": "explorer.worker",
           "cli_read": "explorer.cli", "repro": "explorer.present", "page": "explorer.ui", "page_load": "explorer.ui",
           "link": "explorer.model",
           "worker_inspect": "explorer.worker", "worker_bench": "explorer.worker", "annotate": "explorer.engine",
           "annotate_bench": "explorer.engine", "text": "explorer.cli", "bench_text": "explorer.cli"}
ACTIONS = {"export", "pin", "compilers", "fix"}


def hooks(table) -> list[tuple[str, str, str]]:
    """(row id, field, "module:attribute") of every hook in a table."""
    return [(row.id, name, getattr(row, name)) for row in table for name in CALLERS
            if isinstance(getattr(row, name, None), str)]


def defined(module: str, attribute: str) -> bool:
    tree = ast.parse(MODULES[module].read_text())
    names = set()
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
    return attribute in names


@pytest.mark.parametrize("row,field,path", hooks(SOURCES) + hooks(COMPILERS), ids=lambda v: str(v))
def test_every_hook_exists_in_a_layer_its_caller_may_import(row, field, path):
    module, _, attribute = path.partition(":")
    assert module in MODULES, f"{row}.{field}: no module {module}"
    assert not attribute or defined(module, attribute), f"{row}.{field}: {module} defines no {attribute}"
    assert LAYERS[group(module)] <= LAYERS[CALLERS[field]], f"{row}.{field}: {module} is above {CALLERS[field]}"


def test_every_offer_is_a_tab_or_an_action():
    tree = ast.parse((ROOT / "explorer" / "ui" / "tabs.py").read_text())
    tabs = {node.args[0].value for node in ast.walk(tree) if isinstance(node, ast.Call)
            and getattr(node.func, "id", None) == "Tab" and isinstance(node.args[0], ast.Constant)}
    assert {"graphs", "why", "report", "passes", "bench", "sweep", "log", "matrix"} <= tabs
    for source in SOURCES:
        assert source.offers <= tabs | ACTIONS, (source.id, source.offers - tabs - ACTIONS)


@pytest.mark.parametrize("data,expected", [
    ({"preset": "matmul_bias_relu"}, "preset"),
    ({"chain": {"contraction": "MatMul"}}, "chain"),
    ({"stack": {"input": {"shape": [1, 4]}, "layers": [{"type": "Dense", "units": 2}]}}, "stack"),
    ({"import": {"format": "graphdef", "digest": "0" * 64, "path": "/x.pb"}}, "import"),
])
def test_a_spec_and_its_data_name_the_same_source(data, expected):
    spec = resolve(data)
    assert source_of(spec).id == expected == source_for_data(spec.public_dict()).id
    assert resolve(spec) is spec  # a checked spec is taken as it is


def test_compiler_choices_are_the_table_and_both():
    assert CHOICES == (*[c.id for c in COMPILERS], BOTH)
    assert chosen(BOTH) == COMPILERS and timed(BOTH) is COMPILERS[-1] and timed(COMPILERS[0].id) is COMPILERS[0]
    with pytest.raises(SpecError, match="choose grappler, xla or both"):
        chosen("tvm")
