"""The benchmark tab's repeatable run: the real page, the real engine, fresh worker processes."""

from __future__ import annotations

from explorer.ui import state
from tests.page_tabs import open_tab


def test_repeatable_run_shows_processes_values_and_between_share(make_app):
    at = open_tab(make_app(**{state.BENCH_REPS: 6, state.BENCH_WARMUP: 1, state.BENCH_SECONDS: 30}), "bench")
    assert not at.exception
    radio = at.radio(key=state.BENCH_MODE)
    assert radio.value == "quick" and radio.options == ["quick (1 process)", "repeatable (several fresh processes)"]
    radio.set_value("repeatable")
    at.number_input(key=state.BENCH_PROCESSES).set_value(2)
    at.button(key="bench.run").click().run()
    assert not at.exception
    assert not at.error, [e.value for e in at.error]
    shown = " ".join(m.value for m in at.markdown)
    assert "Repeatable: 2 processes × 6 pairs" in shown and "of the spread is between processes" in shown
    # where another run of 2 processes lands: around the estimate, wider than the interval for the speedup
    import re

    low, high = map(float, re.search(r"a rerun lands in \*\*([\d.]+)–([\d.]+)×\*\*", shown).groups())
    metric = next(m for m in at.metric if m.label == "Speedup of fusion")
    estimate = float(re.search(r"[\d.]+", metric.value).group())
    assert low < estimate < high, (low, metric.value, high)
    assert any("Speedup per process:" in c.value and "geometric mean" in c.value for c in at.caption)
    command = next(c for c in at.code if c.value.startswith("python -m explorer bench"))
    assert "--reps 6 --warmup 1" in command.value and command.value.endswith("--processes 2")
    assert "Speedup of fusion" in [m.label for m in at.metric]


def test_a_quick_verdict_is_that_processs_and_the_repeatable_run_is_one_click_away(make_app):
    # A quick run said "fused is slower" (0.75–0.99) that the repeatable run straight after overturned.
    at = open_tab(make_app(**{state.PRESET: "matmul_bias_gelu_exact", state.BENCH_REPS: 6, state.BENCH_WARMUP: 1,
                              state.BENCH_SECONDS: 20, state.BENCH_PROCESSES: 2}), "bench")
    at.button(key="bench.run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    metric = next(m for m in at.metric if m.label == "Speedup of fusion")
    assert "in this one process" in metric.delta or metric.delta.startswith("too few samples"), metric.delta
    assert not any(metric.delta.startswith(w) for w in ("fused is faster", "fused is slower"))
    at.button(key="bench.repeat_button").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.session_state[state.BENCH_MODE] == "repeatable"
    assert "Repeatable: 2 processes × 6 pairs" in " ".join(m.value for m in at.markdown)
    metric = next(m for m in at.metric if m.label == "Speedup of fusion")
    assert "in this one process" not in metric.delta
