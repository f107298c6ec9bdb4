"""analysis.xla_passes on one real XLA compile's log and per-pass dumps (tests/fixtures/xla/xla_passes__*.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from explorer.analysis import xla_passes

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "xla" / "xla_passes__matmul_bias_gelu_approx.json"


@pytest.fixture(scope="module")
def data():
    return json.loads(FIXTURE.read_text())


def test_every_pass_the_log_names_is_a_row_in_order(data):
    rows = xla_passes.vlog_rows(data["log"], data["module"])
    started = [ln.split("HLO pass ", 1)[1] for ln in data["log"] if "]   HLO pass " in ln or "] HLO pass " in ln
               if "HLO pass: " not in ln and "HLO pass pipeline" not in ln]
    assert [r["pass"] for r in rows] == [s.strip() for s in started]
    assert all(r["time_us"] is not None for r in rows)
    assert all(r["instructions_before"] is not None for r in rows)


def test_another_modules_lines_are_left_out(data):
    assert xla_passes.vlog_rows(data["log"], "some_other_module.1") == []


def test_each_dump_after_a_pass_marks_that_pass_changed(data):
    table = xla_passes.pass_table(xla_passes.vlog_rows(data["log"], data["module"]), data["dumps"])
    after = [d["after"] for d in data["dumps"] if d["after"] and d["after"] != "pipeline-start" and d["before"]]
    dumped = [r["pass"] for r in table if r["dump"]]
    assert sorted(dumped) == sorted(after)  # every such dump found its pass (a pipeline is listed before its passes)
    for row in table:
        if row["dump"] and not row["is_pipeline"]:
            assert row["changed"] is True
        if row["changed"] and not row["dump"] and not row["is_pipeline"]:
            assert row["hash_before"] != row["hash_after"]


def test_fusion_pass_adds_the_fusion_and_the_dumps_count_it(data):
    table = xla_passes.pass_table(xla_passes.vlog_rows(data["log"], data["module"]), data["dumps"])
    fusion = next(r for r in table if r["pass"] == "fusion")
    assert fusion["changed"] and fusion["dump"]
    dump = next(d for d in data["dumps"] if d["file"] == fusion["dump"])
    assert "kind=kLoop" in dump["text"]
    previous = xla_passes.module_before(data["dumps"], fusion["dump"])
    assert "fusion(" not in previous["text"]
    # the instruction counts the log gives match the texts XLA dumped
    assert xla_passes.count_instructions(dump["text"]) == fusion["instructions_after"]
    assert xla_passes.count_instructions(previous["text"]) == fusion["instructions_before"]
    diff = xla_passes.diff(previous["text"], dump["text"])
    assert any(line.startswith("+") and "fusion(" in line for line in diff.splitlines())


def test_summary_counts_passes_not_pipelines(data):
    table = xla_passes.pass_table(xla_passes.vlog_rows(data["log"], data["module"]), data["dumps"])
    s = xla_passes.summary(table)
    assert s["passes"] == sum(1 for r in table if not r["is_pipeline"])
    assert 0 < s["changed"] < s["passes"]
    assert s["pipelines"][0] == table[0]["pipeline"]


def test_dump_names_parse():
    info = xla_passes.parse_dump_name(
        "module_0001.a_inference_model_24__.1.0005.simplification.after_algsimp.before_simplify-sorts.txt")
    assert info["module"] == "a_inference_model_24__.1" and info["seq"] == 5
    assert (info["pipeline"], info["after"], info["before"]) == ("simplification", "algsimp", "simplify-sorts")
    copies = xla_passes.parse_dump_name(
        "module_0001.m.1.0017.copy-insertion.after_adding_copies_to_resolve_interference.txt")
    assert copies["after"] == "adding_copies_to_resolve_interference" and copies["before"] is None
    assert xla_passes.parse_dump_name("module_0001.m.1.ir-no-opt.ll") is None
