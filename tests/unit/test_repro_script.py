"""The exported script as text: it compiles for every preset, stands alone, and sets the flags before TF loads.

(tests/worker/test_repro.py runs the scripts against real TensorFlow.)
"""

from __future__ import annotations

import ast
import io
import json
import zipfile

import pytest

from explorer.model.catalog import PRESETS
from explorer.model.flags import Config
from explorer.present import repro


def _imports(tree: ast.Module) -> list[str]:
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            names.append(node.module or "")
    return names


@pytest.mark.parametrize("preset", list(PRESETS))
def test_every_preset_gives_a_standalone_script(preset):
    text = repro.script({"preset": preset}, Config.make("cpu", {"TF_ENABLE_ONEDNN_OPTS": "0"}))
    tree = ast.parse(text)  # valid Python
    assert not any(name.split(".")[0] == "explorer" for name in _imports(tree))
    assert text.index("os.environ['TF_ENABLE_ONEDNN_OPTS'] = '0'") < text.index("import tensorflow")
    assert text.index('os.environ["TF_CPP_VMODULE"] = "remapper=2"') < text.index("import tensorflow")
    assert "def model(" in text and "def make_inputs(" in text


def test_unset_flags_are_removed_and_switches_passed():
    text = repro.script({"preset": "matmul_bias_relu"}, Config.make("cpu", grappler={"remapping": "off"}))
    assert "os.environ.pop('TF_ENABLE_ONEDNN_OPTS', None)" in text
    assert "GRAPPLER = {'remapping': False}" in text


def test_playground_knobs_reach_the_model():
    spec = {"chain": {"contraction": "Conv2D", "bias": "Add", "activation": "Relu"},
            "params": {"data_format": "NCHW", "second_consumer": True, "return_intermediate": "bias"}}
    code = repro.model_code(spec)
    assert "'data_format': 'NCHW'" in code
    assert "'second_consumer': True" in code and "'return_intermediate': 'bias'" in code
    assert "'bias': 'Add'" in code and "'activation': 'Relu'" in code


def test_the_script_runs_the_workers_own_builders():
    """No second copy of the models: the builders' source is in the script as it is in the worker."""
    text = repro.script({"preset": "conv2d_bias_relu"}, Config())
    builders = (repro.BUILDERS.read_text().split("from __future__ import annotations", 1)[1]).strip()
    assert builders in text
    assert "def build(spec, tf):" in text and "body, names = build(Spec, tf)" in text


def test_bundle_holds_script_graphs_and_summary():
    result = {"spec": {"preset": "matmul_bias_relu", "params": {"m": 8, "k": 4, "n": 2}},
              "config": {"device": "cpu", "env": {}, "grappler": {}},
              "pbtxt": {"traced": "node {\n}\n", "optimized": "node {\n}\n", "executed": "node {\n}\n"},
              "fingerprint": {"tensorflow": "2.21.0"}, "fusions": [], "explanation": {"verdict": "fused"}}
    data = repro.bundle(result)
    assert data == repro.bundle(result)  # the same result, the same bytes
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        names = set(archive.namelist())
        assert {"repro.py", "traced.pbtxt", "optimized.pbtxt", "executed.pbtxt", "summary.json"} <= names
        summary = json.loads(archive.read("summary.json"))
        assert summary["explanation"]["verdict"] == "fused"
        assert "m=8" in archive.read("repro.py").decode()
    assert repro.bundle_name(result) == "fusion-matmul_bias_relu-cpu"
