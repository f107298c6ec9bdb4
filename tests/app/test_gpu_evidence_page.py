"""Every GPU statement on the page says what it rests on (model.evidence): simulated here, measured on a real GPU,
read from a source, or predicted. The page is drawn on the simulated GPU (AppTest, real workers) and every text
that speaks of a GPU, its libraries or its time is walked; the "Fused vs unfused" and "Size sweep" tabs show the
prediction, labelled as one."""

from __future__ import annotations

import re

import pytest

from explorer.model import evidence
from explorer.ui import state
from tests.page_tabs import each_tab, open_tab

pytestmark = pytest.mark.tf

GPU_WORDS = re.compile(r"\bGPU|cuBLAS|cuDNN|tensor cores|TF32|\bH100|\bH200|\bA100|\bV100|\bT4\b|\bL4\b|µs")
KINDS = ("markdown", "caption", "info", "warning", "error", "success")


def gpu_statements(at) -> list[str]:
    """Every text on the page (sidebar and the open tab) that says something about a GPU."""
    out = []
    for kind in KINDS:
        out += [str(e.value) for e in getattr(at, kind) if GPU_WORDS.search(str(e.value))]
    return out


def simulated_page(make_app):
    at = make_app(**{state.env_key("TF_USE_CUBLASLT"): "1", state.env_key("TF_ENABLE_ONEDNN_OPTS"): "0"}).run()
    at.radio(key=state.DEVICE).set_value("gpu-sim").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    return at


def test_every_gpu_statement_on_the_simulated_page_carries_its_evidence(make_app):
    at = simulated_page(make_app)
    # every tab opened in turn (only the open tab's panel runs); a text outside the tabs counted once
    statements = list(dict.fromkeys(s for _ in each_tab(at) for s in gpu_statements(at)))
    assert len(statements) >= 8, statements  # the walk found the GPU texts (sidebar, why, bench, xla ...)
    bare = [s[:160] for s in statements if not evidence.carries_evidence(s)]
    assert not bare, bare
    # the XLA tab's note gives the H200 measurement, not the source reading, for this GELU model
    assert any(evidence.MEASURED_H200 in s and "was never matched" in s for s in statements)


def test_fused_vs_unfused_on_the_simulated_gpu_is_a_labelled_prediction(make_app):
    at = simulated_page(make_app)
    at.selectbox(key=state.GPU_PROFILE).set_value("h100").run()
    open_tab(at, "bench")
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert not at.metric  # nothing measured: the prediction is said in words, never as a measurement's tile
    line = next(m.value for m in at.markdown if m.value.startswith("Predicted: **fused "))
    assert re.search(r"fused [\d.]+ µs\*\* \(1 GPU kernel\) · \*\*unfused [\d.]+ µs\*\* \(10 GPU kernels\)", line), line
    assert re.search(r"predicted speedup \d+\.\d\d×", line) and "`Gelu/Tanh`" in line
    assert any("nothing to time" in i.value and "predicted" in i.value for i in at.info)
    captions = [c.value for c in at.caption]
    sheet = next(c for c in captions if c.startswith(f"**{evidence.PREDICTED}.** Profile H100"))
    assert "NVIDIA H100 Tensor Core GPU data sheet" in sheet and "3350 GB/s" in sheet and "TF32" in sheet
    assert any("python -m explorer bench matmul_bias_gelu_approx" in c.value and "gpu-sim:h100" in c.value
               for c in at.code)


def test_the_size_sweep_on_the_simulated_gpu_predicts_where_fusion_stops_paying(make_app):
    at = simulated_page(make_app)
    at.selectbox(key=state.GPU_PROFILE).set_value("h100").run()
    open_tab(at, "sweep")
    at.selectbox(key=state.SWEEP_PARAM).set_value("k").run()
    # the page's small preset (64×k×16): below k ≈ 64k every kernel waits on the dispatch; past it the matmul reads
    at.text_input(key=state.SWEEP_VALUES).set_value("32, 2048, 262144").run()
    at.button(key="gpu.sweep.run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    table = next(d.value for d in at.dataframe if "speedup (predicted)" in d.value.columns)
    assert list(table["k"]) == [32, 2048, 262144]
    speedups = list(table["speedup (predicted)"])
    assert speedups[0] > speedups[-1] >= 1.0  # a long k is the matmul's time: the epilogue's share shrinks
    assert any(c.value.startswith("Predicted: ") and "H100" not in c.value and "h100" in c.value for c in at.caption)


def test_graphs_that_ran_on_a_real_gpu_show_that_measurement_beside_the_prediction(make_app):
    # matmul_bias_relu at 64×64×64 is one of the graphs replayed on an H100 (explorer/model/gpu_measurements.json)
    sizes = {state.param_key("matmul_bias_relu", name): 64 for name in ("m", "k", "n")}
    at = make_app(**{state.PRESET: "matmul_bias_relu", **sizes,
                     state.env_key("TF_USE_CUBLASLT"): "1", state.env_key("TF_ENABLE_ONEDNN_OPTS"): "0"}).run()
    at.radio(key=state.DEVICE).set_value("gpu-sim").run()
    at.selectbox(key=state.GPU_PROFILE).set_value("h100").run()
    open_tab(at, "bench")
    assert not at.exception and not at.error, [e.value for e in at.error]
    measured = [s.value for s in at.success if s.value.startswith("Measured on a real GPU (NVIDIA H100")]
    assert len(measured) == 1, [s.value for s in at.success]
    assert re.search(r"\*\*\d+\.\d\d×\*\*", measured[0]) and "not TensorFlow's own kernels" in measured[0]
    at.selectbox(key=state.GPU_PROFILE).set_value("a100").run()  # measured on an H100 only: nothing claimed
    assert not [s for s in at.success if s.value.startswith("Measured on a real GPU")]
    assert all(evidence.carries_evidence(s) for _ in each_tab(at) for s in gpu_statements(at))
