"""A frozen model's weights stay out of what the worker returns, and its passes are still listed.

MobileNetV2 frozen (conftest's, 64×64) holds its weights as constants: the stages' pbtxt keeps each
constant's dtype and shape with a note instead of its bytes, and Grappler's per-pass dumps (the
weights as text after every pass) are not written; a model with small constants keeps them.
A big model's first graphs come without the graph after every pass; asked for, they come whole.
"""

from __future__ import annotations

import os
from collections import Counter

import pytest

from explorer.analysis.grappler_log import main_run

from explorer.engine.uploads import spec_for_path
from explorer.model.flags import Config
from explorer.model.limits import PASS_GRAPHS_AUTO_NODES

pytestmark = pytest.mark.tf
CONFIG = Config.make("cpu", {"TF_ENABLE_ONEDNN_OPTS": "0"})  # the worker test_import_models warms


def test_a_frozen_models_constants_are_elided_and_its_passes_listed(engine, models):
    path = models / "mobilenetv2.pb"
    result = engine.inspect(spec_for_path(str(path)), CONFIG)
    traced = result["pbtxt"]["traced"]
    assert 'key: "_explorer_elided"' in traced and "value elided, " in traced
    assert sum(result["elided_bytes"].values()) > path.stat().st_size  # the weights, in each stage
    assert len(traced) < path.stat().st_size  # the text is smaller than the binary weights it leaves out
    grappler = result["grappler"]
    assert "constants hold" in grappler["pass_graphs_skipped"] and grappler["pass_graphs"] == {}
    assert any(it["item"].startswith("__inference_model_") for it in grappler["items"])  # the pass list stays
    assert result["report"]["totals"]["fused_kernels"] == len(result["fusions"]) > 0

    small = engine.inspect(spec_for_path(str(models / "small.pb")), CONFIG)
    assert small["grappler"]["pass_graphs_skipped"] is None and small["grappler"]["pass_graphs"]
    assert not small["grappler"]["pass_graphs_deferred"]


def _passes(grappler: dict) -> list[dict]:
    run = main_run(grappler)
    assert run is not None
    return [p for it in run["iterations"] for p in it["passes"]]


def test_a_big_models_first_graphs_leave_the_pass_graphs_for_when_they_are_asked_for(engine, models):
    spec = spec_for_path(str(models / "mobilenetv2_savedmodel"))
    first = engine.inspect(spec, CONFIG, use_cache=False)
    grappler = first["grappler"]
    assert grappler["function_nodes"] > PASS_GRAPHS_AUTO_NODES
    assert grappler["pass_graphs_deferred"] and grappler["pass_graphs_skipped"] is None
    assert grappler["pass_graphs"] == {} and not any(p.get("dump") for p in _passes(grappler))
    assert len(_passes(grappler)) > 10  # the pass list is there: from Grappler's log

    full = engine.inspect(spec, CONFIG, pass_graphs=True)
    assert full["key"] != first["key"] and not full["grappler"]["pass_graphs_deferred"]
    for stage in ("traced", "optimized", "executed"):  # the same graphs, with or without the dumps
        assert (Counter(n["op"] for n in full["stages"][stage]["nodes"])
                == Counter(n["op"] for n in first["stages"][stage]["nodes"])), stage
    checked = 0
    for p in _passes(full["grappler"]):
        graph = full["grappler"]["pass_graphs"].get(os.path.basename(p.get("dump") or ""))
        if graph is None or p.get("nodes") is None:
            continue
        names = [n["name"] for n in graph["nodes"]]
        assert len(names) == p["nodes"] and {i["src"] for n in graph["nodes"] for i in n["inputs"]} <= set(names)
        checked += 1
    assert checked >= 3
    assert engine.inspect(spec, CONFIG, pass_graphs=True)["cached"]  # a cache entry of its own
