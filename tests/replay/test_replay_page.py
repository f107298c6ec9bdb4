"""The page's panels on recorded worker answers (ReplayEngine): fast, no TensorFlow, and the same page code
and engine analysis as live. The real-engine tests of the same panels are in tests/app.
"""

from __future__ import annotations

import re
import json
import os

import psutil

from explorer.model import stack_examples
from explorer.ui import state
from tests.page_tabs import open_tab
from tests.replay.small_page import small_app

RECORD = os.environ.get("EXPLORER_RECORD") == "1"  # see conftest.py


def texts(at) -> str:
    parts = []
    for kind in ("markdown", "caption", "error", "warning", "info", "code", "title"):
        parts += [str(e.value) for e in getattr(at, kind)]
    return "\n".join(parts)


def fusion_lines(at) -> list[str]:
    return [m.value for m in at.markdown if m.value.startswith("- `") and "→" in m.value]


def worker_processes() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True) if "explorer.worker" in " ".join(p.cmdline())}


def test_default_page_from_recordings(replay_app):
    before = worker_processes()
    at = replay_app().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    lines = fusion_lines(at)
    assert len(lines) == 1 and "_FusedMatMul [BiasAdd, GeluApproximate]" in lines[0]
    page = texts(at)
    assert "**1 fusion** found by Grappler" in page
    assert RECORD or "graphs replayed from a recording (no worker ran)" in page
    # the verdict tab's checklist, from the engine's analysis of the recorded answer
    open_tab(at, "why")
    assert any("fused" in m.value.lower() and "BiasAdd" in m.value for m in at.markdown)
    # the pass pipeline's table, with the remapper's row
    open_tab(at, "passes")
    assert any("remapper" in m.value and "<table" in m.value for m in at.markdown)
    assert RECORD or worker_processes() <= before, "a replay starts no TensorFlow worker"


def test_benchmark_with_its_traffic_from_recordings(replay_app):
    at = open_tab(replay_app(**{state.BENCH_REPS: 5, state.BENCH_WARMUP: 1, state.BENCH_SECONDS: 20}), "bench")
    at.button(key="bench.run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    metrics = {m.label: m.value for m in at.metric}
    assert {"Fused median", "Unfused median", "Speedup of fusion", "Outputs agree"} <= set(metrics)
    assert metrics["Outputs agree"] == "yes"
    # the memory-traffic section: the recorded machine profile, the engine's estimate
    assert re.fullmatch(r"[\d.]+ (B|KiB|MiB)", metrics["Fused traffic"])
    assert metrics["Intermediates no longer written"] not in ("0 B", "not known")
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]
    assert any(t.startswith("Memory bandwidth of") and "machine-" in t for t in titles), titles
    assert any(c.value.startswith("python -m explorer bench matmul_bias_gelu_approx") and "--reps 5 --warmup 1"
               in c.value for c in at.code)


def test_xla_tab_and_three_way_benchmark_from_recordings(replay_app):
    at = open_tab(replay_app(**{state.XLA_ON: True, state.XLA_BENCH_REPS: 5}), "xla")
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert "**XLA** made:" in texts(at)
    table = next(df.value for df in at.dataframe if "XLA instruction" in df.value.columns)
    assert "MatMul" in set(table[table["what"] == "dot"]["TF ops"])
    next(b for b in at.button if b.label == "Run the three-way benchmark").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    labels = {m.label for m in at.metric}
    assert {"unfused (remapper off) median", "Grappler-fused median", "XLA (jit_compile=True) median"} <= labels


def test_a_layer_stack_from_recordings(replay_app):
    at = replay_app(**{state.MODE: "stack"}).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert json.loads(at.text_area(key=state.STACK_TEXT).value) == stack_examples.example("layout_fp32")
    lines = fusion_lines(at)
    assert len(lines) == 2 and all("Conv2D + BiasAdd + Relu" in line for line in lines)
    open_tab(at, "why")  # a stack's "why" is its whole-model report
    report = next(d.value for d in at.dataframe if "fused op" in d.value.columns)
    assert sum(report["count"]) == len(lines)


def test_whatif_pin_then_flip_a_flag_from_recordings(replay_app):
    at = replay_app().run()
    at.button(key="whatif.pin").click().run()
    at.radio(key=state.env_key("TF_ENABLE_ONEDNN_OPTS")).set_value("0").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert "TF_ENABLE_ONEDNN_OPTS: 1 → 0" in texts(at)
    pinned, current = [m.value for m in at.markdown if m.value.startswith("Fusions found")]
    assert "_FusedMatMul [BiasAdd, GeluApproximate]" in pinned and "_FusedMatMul [BiasAdd]`" in current


# Always a ReplayEngine, even while recordings are made (EXPLORER_RECORD=1 gives replay_app the live engine,
# which would run and record what this test needs to be missing).
REPLAY_ONLY = """
from explorer.engine.replay import ReplayEngine
from explorer.ui import page

page.render(ReplayEngine({recordings!r}))
"""


def test_what_was_not_recorded_is_a_message():
    at = small_app(REPLAY_ONLY, **{state.PRESET: "matmul_bias_relu", state.DEVICE: "gpu-sim"}).run()
    assert not at.exception
    errors = [e.value for e in at.error]
    assert any("no recorded inspect result for matmul_bias_relu on gpu-sim" in e for e in errors), errors
