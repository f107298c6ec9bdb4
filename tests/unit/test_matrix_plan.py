"""The what-if matrix's plan (no TensorFlow): names classified, every combination a cell, cells that
cannot run named with the reason, grouping by worker process, and the CSV/JSON/table writers."""

from __future__ import annotations

import csv
import io
import json

import pytest

from explorer.engine import matrix
from explorer.errors import SpecError
from explorer.present import matrix as present


def test_vary_names_are_classified_and_values_checked():
    assert matrix.parse_vary("TF_ENABLE_ONEDNN_OPTS=0,1").kind == "env"
    assert matrix.parse_vary("remapping=on,off").kind == "grappler"
    assert matrix.parse_vary("dtype=float32,bfloat16") == matrix.Axis("dtype", "param", ("float32", "bfloat16"))
    assert matrix.parse_vary("device=cpu,gpu-sim:ampere").kind == "device"
    assert matrix.parse_vary("m=64,64,128").values == ("64", "128")
    assert matrix.plan(["matmul_bias_relu"], [matrix.parse_vary("m=64")])[0].spec["params"] == {"m": 64}


@pytest.mark.parametrize("text, words", [
    ("TF_BOGUS=1", "neither an env flag"),
    ("TF_ENABLE_ONEDNN_OPTS=2", "not accepted"),
    ("remapping=maybe", "on or off"),
    ("dtype=float8", "not one of"),
    ("m=-3", "out of range"),
    ("dtype=", "no values"),
    ("dtype", "NAME=VALUE"),
])
def test_bad_vary_names_what_is_wrong(text, words):
    with pytest.raises(SpecError, match=words):
        matrix.parse_vary(text)


def test_cells_are_presets_times_every_combination():
    axes = [matrix.parse_vary("TF_ENABLE_ONEDNN_OPTS=0,1"), matrix.parse_vary("remapping=on,off"),
            matrix.parse_vary("dtype=float32,bfloat16")]
    cells = matrix.plan(["matmul_bias_relu", "conv2d_bias_relu"], axes, params={"m": 64, "batch": 1})
    assert len(cells) == 2 * 2 * 2 * 2
    assert all(c.status == "planned" for c in cells)
    first = cells[0]
    assert first.settings == (("TF_ENABLE_ONEDNN_OPTS", "0"), ("remapping", "on"), ("dtype", "float32"))
    assert first.spec == {"preset": "matmul_bias_relu", "params": {"m": 64, "dtype": "float32"}}
    assert first.config.env_dict == {"TF_ENABLE_ONEDNN_OPTS": "0"} and first.config.grappler_dict == {"remapping": "on"}
    # one worker process per device + env flags: the Grappler switch and the dtype share it
    assert [len(g) for g in matrix.groups(cells)] == [8, 8]


def test_cells_that_cannot_run_say_why_and_stay_in_the_matrix():
    cells = matrix.plan(["matmul_bias_relu", "conv2d_bias_relu"], [matrix.parse_vary("m=64,128")])
    assert [c.status for c in cells] == ["planned", "planned", "n/a", "n/a"]
    assert cells[2].reason == "m does not apply to conv2d_bias_relu"
    rows = matrix.rows(cells)
    assert len(rows) == 4 and rows[3]["status"] == "n/a" and rows[3]["verdict"] is None
    # a value one model's ops refuse is a cell of its own, named
    bad = matrix.plan(["conv2d_batchnorm_relu"], [matrix.parse_vary("dtype=float32,float64")])
    assert bad[1].status == "invalid" and "float64" in bad[1].reason


@pytest.mark.parametrize("kwargs, words", [
    ({"presets": []}, "at least one preset"),
    ({"presets": ["nope"]}, "unknown preset"),
    ({"presets": ["conv2d_bias_relu"], "params": {"m": 8}}, "applies to none"),
    ({"presets": ["matmul_bias_relu"], "axes": ["m=1,2", "m=3"]}, "varied twice"),
    ({"presets": ["matmul_bias_relu"], "axes": ["m=" + ",".join(map(str, range(1, 300)))]}, "at most"),
])
def test_bad_matrices_are_refused_before_anything_runs(kwargs, words):
    axes = [matrix.parse_vary(a) for a in kwargs.pop("axes", [])]
    with pytest.raises(SpecError, match=words):
        matrix.plan(kwargs.pop("presets"), axes, **kwargs)


ROW = {"preset": "matmul_bias_relu", "label": "dtype=float32", "status": "ok", "verdict": "fused",
       "fused_op": "_FusedMatMul[BiasAdd+Relu]", "speedup": 1.5, "ci_low": 1.25, "ci_high": 1.75, "processes": 2,
       "pairs": 20, "between_share": 0.4, "device": "cpu", "env": {"TF_ENABLE_ONEDNN_OPTS": "0"}, "grappler": {},
       "params": {"dtype": "float32"}, "cached": False, "reason": "",
       "fingerprint": {"tensorflow": "2.21.0", "cpu_model": "EPYC", "cpu_count": 2, "onednn": False},
       "node": {"hostname": "n1", "node_id": "abcdef0123456789"}}


def test_writers():
    failed = dict(ROW, status="failed", reason="worker died", verdict=None, speedup=None, fingerprint={}, node={})
    text = present.to_csv([ROW, failed])
    parsed = list(csv.DictReader(io.StringIO(text)))
    assert parsed[0]["fused_op"] == "_FusedMatMul[BiasAdd+Relu]" and parsed[0]["env"] == "TF_ENABLE_ONEDNN_OPTS=0"
    assert parsed[0]["machine"].startswith("TensorFlow 2.21.0") and parsed[0]["node"] == "n1 (abcdef012345)"
    assert parsed[1]["status"] == "failed" and parsed[1]["reason"] == "worker died"
    assert json.loads(present.to_json({"cells": [ROW]}))["cells"][0] == ROW
    lines = present.table([ROW, failed]).splitlines()
    assert lines[0] == "matmul_bias_relu"
    assert "fused _FusedMatMul[BiasAdd+Relu]  |  1.50× (1.25–1.75), 2 processes" in lines[1]
    assert "failed: worker died" in lines[2]
    partly = dict(ROW, verdict="partly fused", fused_op="_FusedMatMul[BiasAdd]", because="oneDNN is off")
    assert present.cell_words(partly) == "partly fused _FusedMatMul[BiasAdd] (oneDNN is off)"
