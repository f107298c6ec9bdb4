"""The sidebar's layer-stack mode, driven with AppTest over the real engine (real worker processes)."""

from __future__ import annotations

import json

import pytest

from explorer.model import stack_examples
from explorer.ui import state
from tests.page_tabs import open_tab

pytestmark = pytest.mark.tf


def texts(at) -> str:
    parts = []
    for kind in ("markdown", "caption", "error", "warning", "info", "code"):
        parts += [str(e.value) for e in getattr(at, kind)]
    return "\n".join(parts)


def fusion_lines(at) -> list[str]:
    return [m.value for m in at.markdown if m.value.startswith("- `") and "→" in m.value]


def test_a_ready_stack_runs_through_the_whole_page(make_app):
    at = make_app(**{state.MODE: "stack"}).run()
    assert not at.exception
    assert not at.error, [e.value for e in at.error]
    assert json.loads(at.text_area(key=state.STACK_TEXT).value) == stack_examples.example("layout_fp32")
    lines = fusion_lines(at)
    assert len(lines) == 2 and all("Conv2D + BiasAdd + Relu" in line for line in lines)
    page = texts(at)
    assert "**2 fusions** found by Grappler · layer stack layout_fp32" in page
    # the verdict tab holds the whole-model report instead of one pattern's checklist: the same fusions
    open_tab(at, "why")
    report = next(d.value for d in at.dataframe if "fused op" in d.value.columns)
    assert sum(report["count"]) == len(lines)
    assert all(any(op in line for line in lines) for op in report["fused op"])
    # the command line that reruns it takes the stack as a file
    assert any("python -m explorer inspect --spec layout_fp32.json" in c.value for c in at.code)
    # the expanded layers as built, with their output shapes
    table = next(d.value for d in at.dataframe if "output shape" in d.value.columns)
    assert list(table["layer"]) == ["block0_0.conv2d_0", "block0_1.conv2d_1"]
    assert list(table["output shape"]) == ["[5, 3, 3, 4]", "[5, 3, 3, 4]"]


def test_a_bad_edit_names_layer_and_field_and_keeps_the_text(make_app):
    at = make_app(**{state.MODE: "stack"}).run()
    good = at.text_area(key=state.STACK_TEXT).value
    bad = good.replace('"filters": 4', '"filters": -2', 1)
    at.text_area(key=state.STACK_TEXT).input(bad).run()
    assert not at.exception
    errors = [e.value for e in at.error]
    assert "layers[0].layers[0]: filters: expected a whole number 1..4096, got -2" in errors
    assert at.text_area(key=state.STACK_TEXT).value == bad  # nothing of the edit is lost
    assert not fusion_lines(at)  # and nothing ran
    broken = bad.replace('"layers"', '"layers" ', 1)[:-3]  # truncated JSON
    at.text_area(key=state.STACK_TEXT).input(broken).run()
    assert any(e.value.startswith("stack: not valid JSON") for e in at.error)
    at.text_area(key=state.STACK_TEXT).input(good.replace('"filters": 4', '"filters": 8', 1)).run()
    assert not at.error, [e.value for e in at.error]
    assert len(fusion_lines(at)) == 2


def test_start_from_another_ready_stack_and_undo(make_app):
    at = make_app(**{state.MODE: "stack"}).run()
    mine = at.text_area(key=state.STACK_TEXT).value.replace('"filters": 4', '"filters": 6', 1)
    at.text_area(key=state.STACK_TEXT).input(mine).run()
    at.selectbox(key=state.STACK_EXAMPLE).select("arithmetic_pow").run()
    at.button(key="stack.load").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert json.loads(at.text_area(key=state.STACK_TEXT).value) == stack_examples.example("arithmetic_pow")
    assert "layer stack arithmetic_pow" in texts(at)
    assert not fusion_lines(at)  # x ** 3 becomes Square and Mul: no fusion
    at.button(key="stack.undo").click().run()
    assert at.text_area(key=state.STACK_TEXT).value == mine


def test_benchmark_a_stack(make_app):
    at = open_tab(make_app(**{state.MODE: "stack", state.BENCH_REPS: 5, state.BENCH_WARMUP: 1,
                              state.BENCH_SECONDS: 20}), "bench")
    at.button(key="bench.run").click().run()
    assert not at.exception
    assert not at.error, [e.value for e in at.error]
    labels = {m.label: m.value for m in at.metric}
    assert labels.get("Outputs agree") == "yes"
    open_tab(at, "graphs")  # the fused graph's ops (the proof's executed graph names oneDNN's own op)
    assert "_FusedConv2D" in texts(at)  # proof of the graph the fused variant ran


def test_the_stack_survives_a_look_at_a_preset(make_app):
    at = make_app(**{state.MODE: "stack"}).run()
    bad = at.text_area(key=state.STACK_TEXT).value.replace('"repeat": 2', '"repeat": 99', 1)
    at.text_area(key=state.STACK_TEXT).input(bad).run()
    assert "layers[0]: repeat: expected a whole number 1..64, got 99" in [e.value for e in at.error]
    at.radio(key=state.MODE).set_value("preset").run()
    assert not at.exception
    at.radio(key=state.MODE).set_value("stack").run()
    assert at.text_area(key=state.STACK_TEXT).value == bad


def test_what_onednn_fuses_when_executed_is_in_the_summary(make_app):
    # ResNet's stem, oneDNN on (make_app's): Grappler fuses the conv with its bias, then oneDNN's layout pass folds
    # the explicit Pad before it into the kernel; the summary counts both, each by what made it
    at = make_app(**{state.MODE: "stack", state.STACK_EXAMPLE: "resnet_stem"}).run()
    at = at.button(key="stack.load").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert "**1 fusion** found by Grappler, **1 more** by oneDNN when executed · layer stack resnet_stem" in texts(at)
    # what the check rests on says what it cannot see: the remapper-off reference folds the Pad too
    assert any("OneDNN's own fusions when executed (Pad + _FusedConv2D" in c.value for c in at.caption)
