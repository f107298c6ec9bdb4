"""What a session measured survives a reload: the page's benchmarks go to the server's result cache, and a new
session of the same model and configuration shows them (with the date) instead of "Not measured yet"."""

from __future__ import annotations

from explorer.ui import state
from tests.page_tabs import open_tab

SETTINGS = {state.PRESET: "conv2d_bias_relu", state.BENCH_REPS: 5, state.BENCH_WARMUP: 1, state.BENCH_SECONDS: 10}


def _infos(at) -> str:
    return "\n".join(i.value for i in at.info)


def test_a_reload_shows_the_benchmark_the_session_ran(make_app):
    from explorer.ui import cached

    at = open_tab(make_app(**SETTINGS), "bench")
    assert not at.exception
    at.button(key="bench.run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    shown = {m.label: m.value for m in at.metric if m.label in ("Fused median", "Unfused median", "Speedup of fusion")}
    assert len(shown) == 3
    benches = cached.engine().queue("cpu").benches_run

    again = open_tab(make_app(**SETTINGS), "bench")  # a reload: a new session, the same server
    assert not again.exception
    assert "Not measured yet" not in _infos(again)
    assert {m.label: m.value for m in again.metric if m.label in shown} == shown
    assert cached.engine().queue("cpu").benches_run == benches  # shown, not timed again
