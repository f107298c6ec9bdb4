"""A against B in the what-if panel: the pinned model and configuration (A) timed against the current one (B), each
as served, in fresh worker processes round after round (``Engine.compare``): "how much faster is oneDNN on than
off for my model?", answered with an interval over rounds."""

from __future__ import annotations

import streamlit as st

from ..errors import ExplorerError
from ..model.flags import Config
from ..model.spec import resolve
from ..present import compare_text
from . import experiment, frame, state

KIND = "compare"


def _extra(pinned: dict, processes: int, reps: int) -> dict:
    return {"against": pinned["result_key"], "processes": processes, "reps": reps}


def panel(engine, pinned: dict, current: dict) -> None:
    """The button, and the result when this pair was timed (this session, or kept by the server)."""
    if pinned.get("simulated") or current.get("simulated"):
        return
    form = experiment.on_screen().bench  # the benchmark tab's calls, warm-up and time budget
    rounds, reps = state.form_processes(), form.reps
    try:
        a = (resolve(pinned["spec"]), Config.from_dict(pinned["config"]))
        b = (resolve(current["spec"]), Config.from_dict(current["config"]))
    except ExplorerError:
        return
    extra = _extra(pinned, rounds, reps)
    if st.button(f"Time A against B ({rounds} rounds)", key="whatif.against", icon=":material/compare_arrows:",
                 help="The pinned model and configuration (A) against the current one (B), each as served: every "
                      "round a fresh worker process for each, with the benchmark tab's calls and processes; the "
                      "speedup of B over A with an interval over rounds"):
        with st.status(f"Timing A against B: {rounds} rounds, a fresh worker process per side", expanded=True) as status:
            bar = status.progress(0.0, text="queued")
            try:
                result = engine.compare(*a, *b, processes=rounds, reps=reps,
                                        warmup=form.warmup, max_seconds=float(form.seconds),
                                        on_progress=lambda p: bar.progress(min(max(float(p.get("fraction") or 0), 0.0),
                                                                               1.0), text=p.get("message") or ""))
            except ExplorerError as exc:
                status.update(label="A against B failed", state="error")
                frame.show_error(exc, "A against B failed")
                return
            status.update(label="A against B timed", state="complete", expanded=False)
        engine.store(KIND, b[0], b[1], result, extra)
    result = engine.stored(KIND, b[0], b[1], extra)
    if result is not None:
        show(result)


def show(result: dict) -> None:
    sp = result["speedup"]
    c1, c2, c3 = st.columns(3)
    c1.metric("A (pinned) median", f"{result['summary']['A']['median_ms']:.3f} ms")
    c2.metric("B (current) median", f"{result['summary']['B']['median_ms']:.3f} ms")
    c3.metric("B against A", f"{sp['estimate']:.2f}×",
              delta=sp["verdict"] + ("" if sp.get("ci_low") is None else f" · 95% CI {sp['ci_low']:.2f}–{sp['ci_high']:.2f}×"),
              delta_color={"faster": "normal", "slower": "inverse"}.get(sp.get("verdict_code"), "off"),
              delta_arrow="off" if sp.get("verdict_code") in ("same", "unknown") else "auto",
              help="median(A) ÷ median(B): above 1, B is faster")
    st.caption(f"Changed: {'; '.join(compare_text.changed(result))}. {compare_text.how(result)}. Measured "
               f"{result['measured_at']}, load average {result['load']['before']} → {result['load']['after']}.")
