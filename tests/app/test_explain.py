"""The page explains what fused: the Why panel, the playground knobs, the pass pipeline, the export.

AppTest over the real engine (real TensorFlow workers), small sizes; see conftest.py.
"""

from __future__ import annotations

import pytest

from explorer.ui import state
from tests.page_tabs import open_tab

pytestmark = pytest.mark.tf

DEFAULT = "matmul_bias_gelu_approx"
ONEDNN = state.env_key("TF_ENABLE_ONEDNN_OPTS")


def markdown(at) -> str:
    return "\n".join(str(m.value) for m in at.markdown)


def verdict_heading(at) -> str:
    """The big verdict line of the Why panel ("#### :green[... Fused]")."""
    heads = [m.value for m in at.markdown if m.value.startswith("#### :")]
    assert len(heads) == 1, heads
    return heads[0]


def summary_badge(at) -> str:
    lines = [m.value for m in at.markdown if "found by Grappler" in m.value]
    assert len(lines) == 1, lines
    return lines[0]


def test_why_panel_says_fused_for_the_default_model(make_app):
    at = open_tab(make_app(), "why")
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert verdict_heading(at).endswith(" Fused]")
    assert "-badge[:material/check_circle: fused]" in summary_badge(at)
    page = markdown(at)
    assert "**Why:** every condition of the pattern holds." in page
    assert "TensorFlow made: `_FusedMatMul [BiasAdd, GeluApproximate]`" in page
    # the checklist: every condition holds
    assert page.count(">✓</td>") >= 4 and ">✗</td>" not in page
    assert "To make it fuse" not in page


def test_why_panel_with_onednn_off_says_partly_fused_and_the_fix(make_app):
    at = open_tab(make_app(**{ONEDNN: "0"}), "why")
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert verdict_heading(at).endswith(" Partly fused]")
    assert "partly fused]" in summary_badge(at)
    page = markdown(at)
    assert "**Why:** the CPU fuses GELU into MatMul+BiasAdd only with oneDNN." in page
    assert ">✗</td>" in page and "<code>set TF_ENABLE_ONEDNN_OPTS=1</code>" in page
    assert "**To make it fuse:** `set TF_ENABLE_ONEDNN_OPTS=1`" in page
    # the fix is one click away, and it mends the fusion
    fix = at.button(key="why.fix.0")
    assert fix.label == "Set TF_ENABLE_ONEDNN_OPTS=1"
    fix.click().run()
    assert not at.exception
    assert at.session_state[ONEDNN] == "1"
    assert verdict_heading(at).endswith(" Fused]")


def test_playground_knob_flips_the_verdict(make_app):
    at = open_tab(make_app(), "why")
    assert verdict_heading(at).endswith(" Fused]")
    knob = at.toggle(key=state.param_key(DEFAULT, "second_consumer"))
    assert knob.label == "second consumer"
    # the knobs sit under their own heading, each with a line of help
    assert any(h.value == "Break the fusion" for h in at.sidebar.subheader)
    assert any("it must stay a tensor of its own" in c.value for c in at.sidebar.caption)
    knob.set_value(True).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert verdict_heading(at).endswith(" Not fused]")
    page = markdown(at)
    assert "so it has two consumers" in page
    assert page.count("so it has two consumers and must stay a separate tensor") >= 1
    assert at.button(key="why.fix.0").label == "Apply: second_consumer off"
    # and back
    at.toggle(key=state.param_key(DEFAULT, "second_consumer")).set_value(False).run()
    assert verdict_heading(at).endswith(" Fused]")


def test_training_mode_knob_partly_fuses_conv_batchnorm(make_app):
    at = open_tab(make_app(**{state.PRESET: "conv2d_batchnorm_relu"}), "why")
    assert verdict_heading(at).endswith(" Fused]")
    at.toggle(key=state.param_key("conv2d_batchnorm_relu", "training")).set_value(True).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert verdict_heading(at).endswith(" Partly fused]")
    assert "in training the batch statistics must be computed first" in markdown(at)


def test_pass_pipeline_lists_the_remapper_with_its_log_line(make_app):
    at = open_tab(make_app(), "passes")
    assert not at.exception
    tables = [m.value for m in at.markdown if m.value.startswith("<table") and "the pass's own log lines" in m.value]
    assert len(tables) == 1
    table = tables[0]
    assert "remapper</td>" in table
    row = next(r for r in table.split("<tr") if "remapper</td>" in r and "Fuse MatMul with BiasAdd" in r)
    assert "changed the graph" in row
    assert "did not run" in table  # greyed passes (shape_optimizer has nothing to do here)
    assert not any("None of this was kept" in w.value for w in at.warning)  # Grappler's work was kept
    # the picker starts at the remapper pass that changed the graph, and shows its graphs and line
    picker = at.selectbox(key=state.PASS)
    assert "remapper" in picker.format_func(picker.value)
    assert any(m.value.startswith("The pass logged: `Fuse MatMul with BiasAdd") for m in at.markdown)
    assert any(m.value.startswith("- fused: `MatMul + BiasAdd → _FusedMatMul [BiasAdd]`") for m in at.markdown)
    # another pass: its own graphs, before and after it
    assert any(label.startswith("pass 1 of iteration 0: model_pruner") for label in picker.options)
    picker.set_value(picker.value.split("|")[0] + "|0:0").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any(m.value.startswith("**Before model_pruner**") for m in at.markdown)
    assert any(m.value.startswith("**After model_pruner**") for m in at.markdown)


def test_tensorflow_skipping_grappler_is_said_plainly(make_app):
    small = {state.param_key("matmul_bias_add_relu", k): v for k, v in {"m": 64, "k": 32, "n": 16}.items()}
    at = open_tab(make_app(**{state.PRESET: "matmul_bias_add_relu"}, **small), "why")
    assert not at.exception
    assert at.session_state[ONEDNN] == "1"  # oneDNN on (make_app asks for it: not every CPU's default)
    errors = [e.value for e in at.error]
    skipped = [e for e in errors if e.startswith("**TensorFlow silently skipped Grappler for this function.**")]
    assert skipped, errors
    assert "Ignoring multi-device function optimization failure" in skipped[0]
    assert verdict_heading(at).endswith(" Not fused]")
    # the pass that broke it is shown with the node it left without an op
    open_tab(at, "passes")
    errors = [e.value for e in at.error]
    assert "remapper" in at.selectbox(key=state.PASS).format_func(at.selectbox(key=state.PASS).value)
    assert any("with no op at all (`Relu`)" in e for e in errors), errors
    # and the pass table does not pass off the discarded rewrites as the graph that ran
    assert any(w.value.startswith("**None of this was kept.**") for w in at.warning)


def test_export_buttons_offer_the_script_and_the_bundle(make_app):
    at = make_app().run()
    buttons = {b.proto.label: b for b in at.get("download_button")}
    assert {"Reproduce: repro.py", "Bug-report bundle (.zip)"} <= set(buttons)


def test_grappler_log_does_not_read_silence_as_nothing_fused(make_app):
    # TensorFlow threw the remapper's rewrite away: the empty remapper log must not claim it fused nothing.
    small = {state.param_key("matmul_bias_add_relu", k): v for k, v in {"m": 64, "k": 32, "n": 16}.items()}
    at = open_tab(make_app(**{state.PRESET: "matmul_bias_add_relu"}, **small), "log")
    assert not at.exception
    logs = [c.value for c in at.code if c.value.startswith("(the remapper logged nothing")]
    assert logs and "it did rewrite the graph" in logs[0], logs
    # the default model logs one line for two rewrites: the page says the log undercounts
    at = open_tab(make_app(), "log")
    assert any(c.value.startswith("Fuse MatMul with BiasAdd") for c in at.code)
    assert any("Not every rewrite logs a line" in c.value for c in at.caption)


def test_a_gpu_only_pattern_offers_the_simulated_gpu(make_app):
    small = {state.param_key("batchnorm_add_relu", k): v
             for k, v in {"batch": 1, "height": 8, "width": 8, "channels": 4}.items()}
    at = open_tab(make_app(**{state.PRESET: "batchnorm_add_relu"}, **small), "why")
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert verdict_heading(at).endswith(" Not fused]")
    assert "`run on a GPU`" in markdown(at)
    fix = at.button(key="why.fix.0")
    assert fix.label == "Try it on the simulated GPU"
    fix.click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.session_state[state.DEVICE] == "gpu-sim"
    # Grappler's own GPU decision: the pattern fuses there
    assert verdict_heading(at).endswith(" Fused]")
    assert "_FusedBatchNormEx [Add, Relu]" in markdown(at)
