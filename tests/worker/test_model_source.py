"""A model source added through the table alone (model/sources.py): a toy source in one module
(tests/worker/toy_source.py), named in EXPLORER_SOURCES, runs through the engine (real worker processes,
which inherit the setting) and the command line, with nothing else in the explorer changed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from explorer.engine import Engine
from explorer.model.flags import Config
from explorer.model.sources import ENV_VARIABLE, source_of, sources
from explorer.model.spec import resolve
from explorer.present.command import command_line

ROOT = Path(__file__).resolve().parents[2]
TOY = "tests.worker.toy_source:SOURCE"
FUSED = "MatMul + BiasAdd + Relu → _FusedMatMul [BiasAdd, Relu]"


@pytest.fixture
def toy_source(monkeypatch):
    monkeypatch.setenv(ENV_VARIABLE, TOY)
    sources.cache_clear()  # the table is read once per process: read it again with the toy in it
    yield sources()["toy"]
    monkeypatch.delenv(ENV_VARIABLE)
    sources.cache_clear()


def cli(*args):
    return subprocess.run([sys.executable, "-m", "explorer", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env={**os.environ, ENV_VARIABLE: TOY})


def test_a_toy_source_runs_through_the_engine_and_the_cli(toy_source):
    spec = resolve({"toy": {"n": 8}})
    assert source_of(spec) is toy_source and spec.label() == "toy dense layer 8×8"
    config = Config()
    engine = Engine(cache_dir=None)
    try:
        result = engine.inspect({"toy": {"n": 8}}, config)
        bench = engine.bench({"toy": {"n": 8}}, config, reps=3, warmup=1)
    finally:
        engine.close()
    assert result["spec"] == {"toy": {"n": 8, "seed": 0}}
    assert [f["describe"] for f in result["fusions"]] == [FUSED]
    assert "explanation" not in result and result["report"]["totals"]["fused_kernels"] == 1  # no checklist: the report
    assert bench["proof_summary"]["verified"] and bench["agreement"]["within_tolerance"]

    line = command_line({"toy": {"n": 8, "seed": 3}}, config)
    assert line == "python -m explorer inspect --toy 8 --toy-seed 3 --device cpu"
    out = cli(*line.split()[3:], "--json")
    assert out.returncode == 0, out.stderr
    shown = json.loads(out.stdout)
    assert shown["spec"] == {"toy": {"n": 8, "seed": 3}} and [f["describe"] for f in shown["fusions"]] == [FUSED]
    text = cli("inspect", "--toy", "8")
    assert text.returncode == 0 and FUSED in text.stdout and "Whole model:" in text.stdout
    refused = cli("inspect", "matmul_bias_relu", "--toy-seed", "2")
    assert refused.returncode == 2 and refused.stderr.strip() == "explorer: error: --toy-seed: only applies with --toy N"
