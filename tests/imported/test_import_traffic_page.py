"""The page's memory-traffic figures of an import served with an unknown batch (issue 31), through the real page
(AppTest, the page's own engine) with test_import_page's upload helpers and server folders."""

from __future__ import annotations

import pytest

from explorer.engine import uploads
from explorer.ui import state
from tests.page_tabs import each_tab, open_tab
from tests.imported.test_import_page import _page_engine, page, upload, zipped  # noqa: F401 - _page_engine: its folders

pytestmark = pytest.mark.tf


def test_an_unknown_batch_has_one_traffic_figure_in_every_tab(unknown_batch_models):
    """Issue 31: an import with an unknown batch showed "0.01 MiB", "32 KiB" and "112 KiB" for one model, and FLOPs
    of 5e-08 G. The frozen Conv2D+BiasAdd+Relu fed a batch of 8: each tab that shows what fusion saves shows the
    one figure worked out by hand, from the shapes that ran. oneDNN on (set, so on every CPU): its remapper-off
    graph runs Conv2D+BiasAdd as one kernel already, so fusion saves BiasAdd's [8,16,16,8] float32 output alone
    (64 KiB), not the traced graph's two intermediates."""
    at = upload(page("1"), "conv_relu.pb", (unknown_batch_models / "conv_relu.pb").read_bytes())
    at.sidebar.number_input(key=state.UNKNOWN_DIM).set_value(8)
    for key, value in ((state.BENCH_REPS, 5), (state.BENCH_WARMUP, 1), (state.BENCH_SECONDS, 20)):
        at.session_state[key] = value
    at = at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert "fed as [8, 16, 16, 3]" in "\n".join(c.value for c in at.sidebar.caption)
    at = open_tab(at, "bench").button(key="bench.run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    # every tab opened in turn (only the open tab's panel runs), then the benchmark's again
    shown = [(tab.label, m.value) for _ in each_tab(at) for tab in at.tabs for m in tab.metric
             if m.label == "Intermediates no longer written"]
    open_tab(at, "bench")
    assert [label for label, _ in shown] == ["Fusion report", "Fused vs unfused"], shown
    assert {value for _, value in shown} == {"64.0 KiB"}, shown  # 8·16·16·8 float32 = 65,536 bytes
    metrics = {m.label: m.value for m in at.metric}
    # x 24,576 + filter 864 + bias 32 + output 65,536 bytes; 2·16,384 outputs·27 products + bias and relu
    assert metrics["Fused traffic"] == "88.9 KiB" and metrics["FLOPs (unfused)"] == "918 kFLOP"
    assert any("Measured time beside" in c.proto.spec for c in at.get("plotly_chart"))  # every shape known: estimated


def test_a_model_drawing_random_numbers_gets_no_verdict_on_its_numbers(unknown_batch_models):
    """A Dense + ReLU with noise drawn on every call: the page shows no "changes this model's numbers" banner, and
    says why its outputs cannot be compared, beside the benchmark's "Outputs agree" too."""
    at = upload(page("1"), "noisy_dense.pb", (unknown_batch_models / "noisy_dense.pb").read_bytes())
    for key, value in ((state.BENCH_REPS, 3), (state.BENCH_WARMUP, 0), (state.BENCH_SECONDS, 20)):
        at.session_state[key] = value
    at = at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    shown = "\n".join(c.value for c in at.caption)
    assert "Fused against unfused: not comparable: the model's outputs vary from call to call: it calls " \
           "RandomUniform" in shown, shown
    at = open_tab(at, "bench").button(key="bench.run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    metrics = {m.label: m for m in at.metric}
    assert metrics["Outputs agree"].value == "varies" and "RandomUniform" in metrics["Outputs agree"].proto.help
    assert "NOT A GAIN" not in metrics["Speedup of fusion"].proto.delta


def test_a_fix_that_rewrites_nothing_shows_why_and_no_figures(unknown_batch_models, monkeypatch):
    """freeze was offered for a model that reads its variables only in its loop's body, which freeze leaves as it
    is: the panel says so instead. A fix picked by hand that finds nothing shows why, rather than the metrics of a
    copy that is the model itself."""
    monkeypatch.setenv(uploads.ALLOW_SETTING, "1")
    at = open_tab(upload(page("0"), "looped.zip", zipped(unknown_batch_models / "looped_savedmodel")), "report")
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert "freeze (the model reads its variables only inside its loops' or branches' functions" in \
        "\n".join(c.value for c in at.caption)
    assert "No fix applies to this model's near-misses." in [i.value for i in at.info]
    at = open_tab(upload(at, "dense.zip", zipped(unknown_batch_models / "dense_relu_savedmodel")), "report")
    assert at.multiselect(key="report.fixes.chosen").value == ["freeze"]
    at = at.multiselect(key="report.fixes.chosen").set_value(["bias-add"]).run()
    at = at.button(key="report.fixes.run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    said = "\n".join(i.value for i in at.info)
    assert "Nothing was rewritten, so there is no copy to check or time" in said
    assert "**bias-add**: rewrote nothing: the model holds nothing of its form" in said
    assert "Speedup, all fixes" not in [m.label for m in at.metric]
    assert not [b for b in at.get("download_button") if b.label.startswith("Download the fixed model")]


def test_the_xla_tab_says_which_loop_body_each_fusion_sits_in(unknown_batch_models, monkeypatch):
    """A tf.while_loop's MatMul + BiasAdd + Relu: XLA fuses inside the loop's body, and the tab's table lists those
    fusions with the loop they sit in (before, the while swallowed them and the table showed none)."""
    monkeypatch.setenv(uploads.ALLOW_SETTING, "1")
    at = open_tab(upload(page("0"), "looped.zip", zipped(unknown_batch_models / "looped_savedmodel")), "xla")
    at = at.toggle(key=state.XLA_ON).set_value(True).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    table = next(df.value for df in at.dataframe if "XLA instruction" in df.value.columns)
    inside = table[table["in"] == "body of StatefulPartitionedCall/while"]
    assert len(inside) and any("MatMul" in ops and "BiasAdd" in ops for ops in inside["TF ops"]), table.to_string()
    said = "\n".join(c.value for c in at.caption)
    assert "It ran instructions of the module shown" in said or "It ran the same instructions" in said, said
