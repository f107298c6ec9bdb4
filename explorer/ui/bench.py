"""Fused against unfused: the run button, its progress, the charts and numbers; and the size sweep."""

from __future__ import annotations

import re

import streamlit as st

from ..analysis import replicated, stats
from ..errors import ExplorerError
from ..model.limits import MAX_BENCH_SECONDS, MAX_PROCESSES, MAX_REPS, MAX_SWEEP_POINTS, MAX_WARMUP
from ..model.spec import PARAMS
from ..present import charts
from ..present.text import ops_words
from . import experiment, frame, state
from . import traffic as traffic_ui
from .model_input import PARAM_LABELS
from .sidebar import Choice

MAX_SWEEP_REPS = 200  # per point; a sweep of 12 points at 200 reps is already minutes


def _extra(processes: int) -> dict | None:
    return {"processes": processes} if processes > 1 else None


def run_key(engine, choice: Choice, processes: int = 1) -> str:
    """Which model, configuration and number of processes a benchmark belongs to (the engine's own key)."""
    return engine.result_key("bench", choice.model, choice.config, _extra(processes))


def measured(engine, model, config, processes: int = 1) -> dict | None:
    """The benchmark of this model, configuration and process count that this session ran, or that the server
    keeps in its result cache (where the page's benchmarks go: a reload, a new session or a shared link finds
    them, with the date they were measured); None where none ran. Never runs anything."""
    key = engine.result_key("bench", model, config, _extra(processes))
    result = state.recall(state.BENCH_RESULTS, key)
    if result is None:
        result = engine.stored("bench", model, config, _extra(processes))
        if result is not None:
            state.remember(state.BENCH_RESULTS, key, result)
    return result


def _progress_runner(label: str):
    """A st.status with a progress bar, and the on_progress callback that feeds both."""
    status = st.status(label, expanded=True)
    bar = status.progress(0.0, text="queued")

    def on_progress(p: dict) -> None:
        fraction = min(max(float(p.get("fraction") or 0.0), 0.0), 1.0)
        message = p.get("message") or ""
        bar.progress(fraction, text=message)
        if "new worker" in message or "starting TensorFlow" in message:
            status.update(label=f"{label} — {message}")

    return status, bar, on_progress


def run(engine, choice: Choice, reps: int, warmup: int, max_seconds: float, processes: int = 1) -> dict | None:
    """Benchmark the current choice with progress shown; keeps the result in the session."""
    if processes > 1:
        label = f"Timing fused against unfused in {processes} fresh worker processes, one after another"
    else:
        cold = not engine.is_warm(choice.config)
        label = "Timing fused against unfused" + (" (starting TensorFlow in a new worker process first)" if cold else "")
    return measure(engine, choice.model, choice.config, run_key(engine, choice, processes), label, reps=reps, warmup=warmup,
                   max_seconds=max_seconds, processes=processes)


def measure(engine, model, config, key: str, label: str, *, reps: int, warmup: int, max_seconds: float,
            processes: int = 1) -> dict | None:
    """One benchmark under a progress status, kept in the session under ``key``; None (error shown) on failure."""
    status, bar, on_progress = _progress_runner(label)
    try:
        result = engine.bench(model, config, reps=reps, warmup=warmup, max_seconds=max_seconds,
                              processes=processes, on_progress=on_progress)
    except ExplorerError as exc:
        status.update(label="The benchmark failed", state="error", expanded=False)
        frame.show_error(exc, "The benchmark failed")
        return None
    result = traffic_ui.attach(engine, result, on_progress)
    bar.progress(1.0, text=f"{result['reps_done']} pairs timed in {result.get('elapsed_s', 0):.1f} s")
    status.update(label=f"Timed {result['reps_done']} interleaved pairs", state="complete", expanded=False)
    state.remember(state.BENCH_RESULTS, key, result)
    engine.store("bench", model, config, result, _extra(processes))
    return result


def simulated_note() -> None:
    st.info("Simulated GPU: it runs nothing, so there is nothing to time. What this tab shows is predicted from the "
            "simulated graphs, not measured: to measure, benchmark on the CPU or on a real GPU. Pin this result and "
            "switch the device to CPU to compare the graphs side by side.")


def panel(engine, choice: Choice) -> None:
    st.caption(
        "The same model is run twice in one worker: with the remapper on (**fused**) and with it off "
        "(**unfused**), call by call in alternating order, so both see the same machine load. The engine "
        "checks afterwards which graph each variant executed, and that both gave the same numbers. "
        f"Limits: {MAX_REPS} calls, {MAX_WARMUP} warm-up calls, {MAX_BENCH_SECONDS:.0f} s per run; benchmarks "
        "take turns (CPU and GPU ones alike), so a timing never shares the cores with another.")
    with st.form("bench.form", border=False):
        c1, c2, c3, c4 = st.columns([1, 1, 1, 1.2], vertical_alignment="bottom")
        reps = c1.number_input("Timed calls per variant", min_value=3, max_value=MAX_REPS, step=10,
                               key=state.BENCH_REPS, persist_state=state.KEEP_HIDDEN, help=f"3..{MAX_REPS}")
        warmup = c2.number_input("Warm-up calls", min_value=0, max_value=MAX_WARMUP, step=1,
                                 key=state.BENCH_WARMUP, persist_state=state.KEEP_HIDDEN,
                                 help=f"Untimed calls first; 0..{MAX_WARMUP}")
        seconds = c3.number_input("Time budget (s)", min_value=1, max_value=int(MAX_BENCH_SECONDS), step=5,
                                  key=state.BENCH_SECONDS, persist_state=state.KEEP_HIDDEN,
                                  help=f"The timed loop stops early when it runs out; 1..{MAX_BENCH_SECONDS:g} s")
        submitted = c4.form_submit_button("Run fused vs unfused", type="primary", width="stretch", key="bench.run")
        m1, m2 = st.columns([3, 1], vertical_alignment="bottom")
        m1.radio("Run", ["quick", "repeatable"], key=state.BENCH_MODE, horizontal=True, persist_state=state.KEEP_HIDDEN,
                 format_func=lambda m: {"quick": "quick (1 process)",
                                        "repeatable": "repeatable (several fresh processes)"}[m],
                 help="Quick: one warm worker process; its interval covers the noise inside that process only, "
                      "and the next run may land outside it. Repeatable: the benchmark runs in several fresh "
                      "worker processes one after another, each warmed up, and the interval includes the "
                      "process-to-process variation (costs a TensorFlow start per process).")
        m2.number_input("Processes", min_value=2, max_value=MAX_PROCESSES, step=1, key=state.BENCH_PROCESSES,
                        persist_state=state.KEEP_HIDDEN,
                        help=f"For a repeatable run; 2..{MAX_PROCESSES}. 4 or more: with fewer the interval "
                             "is wide (2 processes give it 1 degree of freedom)")
    processes = experiment.on_screen().bench.processes  # 1: the quick run
    if st.session_state.pop(REPEAT, False):  # "Repeat it in N processes" under a quick result
        submitted = processes > 1
    if submitted:
        result = run(engine, choice, int(reps), int(warmup), float(seconds), processes)
    else:
        result = measured(engine, choice.model, choice.config, processes)
    if result is None:
        st.info("Not measured yet for this model and configuration: press **Run fused vs unfused**.")
        return
    show(engine, result, choice)


REPEAT = "bench.repeat"  # the quick result's "Repeat it in N fresh processes" was pressed


def _repeat() -> None:
    st.session_state[state.BENCH_MODE] = "repeatable"
    st.session_state[REPEAT] = True


def show(engine, result: dict, choice: Choice) -> None:
    summary = result["summary"]
    sp = summary["speedup"]
    fused, unfused = summary["fused"], summary["unfused"]
    agreement = result.get("agreement") or {}
    c1, c2, c3, c4 = st.columns(4)
    c1.metric("Fused median", f"{fused['median_ms']:.3f} ms", help="remapper on: the graph with the fused op")
    c2.metric("Unfused median", f"{unfused['median_ms']:.3f} ms", help="remapper off: the ops one by one")
    ci = ("no confidence interval (too few pairs)" if sp.get("ci_low") is None
          else f"{sp['confidence']:.0%} CI {sp['ci_low']:.2f}–{sp['ci_high']:.2f}×")
    if result.get("nothing_to_compare"):
        c3.metric("Speedup of fusion", "none", delta="nothing to compare", delta_color="off", delta_arrow="off",
                  help=result["nothing_to_compare"])
    else:
        c3.metric("Speedup of fusion" if not result.get("comparison") else "Speedup of the remapper on",
                  f"{sp['estimate']:.2f}×", delta=f"{sp['verdict']} · {ci}",
                  delta_color={"faster": "normal", "slower": "inverse", "outputs_differ": "inverse"}.get(
                      sp["verdict_code"], "off"),
                  delta_arrow="off" if sp["verdict_code"] in ("same", "unknown", "outputs_differ") else "auto",
                  help=f"median(unfused) ÷ median(fused); {sp['method']}")
    if result.get("comparison") or result.get("nothing_to_compare"):
        st.info(result.get("nothing_to_compare") or f"Compared: {result['comparison']}.")
    agree, wrong = agreement.get("within_tolerance"), agreement.get("off_declared")
    c4.metric("Outputs agree", "yes" if agree else "varies" if agreement.get("varies") else "NO",
              delta="another shape than declared" if wrong else
              f"max abs diff {agreement.get('max_abs', float('nan')):.2g}", delta_color="off",
              delta_arrow="off",
              help=f"Largest difference between the fused and unfused outputs; tolerance {agreement.get('tolerance', 0):g}"
                   + (" (float32 ran as TF32 on this GPU, which keeps 10 mantissa bits)" if agreement.get("tf32") else "")
                   + (f". Not comparable: {agreement['varies']}" if agreement.get("varies") else ""))
    if wrong:  # both variants may share it (oneDNN's own fusions run with the remapper off too): said in full
        st.error(f"**The outputs are wrong:** {wrong}", icon=":material/report:")
    replication(result)
    if summary.get("noisy"):
        st.warning(f"Timings of {', '.join(summary['noisy_variants'])} vary a lot (coefficient of variation over "
                   f"{summary['noise_threshold_cv']:.0%}); more calls or a quieter machine give a tighter interval.")
    if summary.get("stopped_early"):
        st.warning(f"The time budget ran out after {summary['reps']} of {summary['reps_requested']} pairs.")
    proof = result.get("proof_summary") or {}
    for problem in proof.get("problems", []):
        st.warning(problem)

    st.plotly_chart(charts.speedup_figure(summary), width="stretch", key="bench.speedup",
                    config={"displayModeBar": False})
    left, right = st.columns(2)
    left.plotly_chart(charts.latency_distribution(result), width="stretch", key="bench.distribution")
    right.plotly_chart(charts.latency_trace(result), width="stretch", key="bench.trace")

    traffic_ui.panel(engine, result)
    with st.container(border=True):
        st.markdown("**Which graph each variant ran** (ops the executed graph contained, plumbing left out)")
        st.markdown(f"Fused: `{ops_words(proof.get('fused_executed', [])) or '(nothing)'}`  \n"
                    f"Unfused: `{ops_words(proof.get('unfused_executed', [])) or '(nothing)'}`")
        verified = ("verified: no function was re-instantiated while timing" if proof.get("verified")
                    else "NOT verified: a function was re-instantiated while timing")
        iso = result.get("isolation") or {}
        alone = ("nothing else of the explorer ran on this device while it was timing (the queue held it)"
                 if not iso.get("others_running_at_start") else
                 f"{iso['others_running_at_start']} other request(s) were running when it started")
        st.caption(f"Proof {verified}. {summary['reps']} interleaved pairs after {result.get('warmup', 0)} warm-up "
                   f"calls; {result.get('order', '')}; {alone}. Measured {result.get('measured_at', '')}, machine "
                   f"load average {iso.get('load_before', '?')} → {iso.get('load_after', '?')}.")
    # Full width and unwrapped: in a narrow column the command broke inside '--warmup'.
    processes = result.get("processes", 1)
    st.code(frame.bench_command(choice, summary["reps_requested"] // processes, result.get("warmup", 0),
                                experiment.on_screen().bench.seconds, processes), language="bash")
    st.download_button("Samples (CSV)", data=lambda r=result: charts.samples_csv(r), file_name="samples.csv",
                       mime="text/csv", on_click="ignore", key="bench.csv", icon=":material/download:")


def replication(result: dict) -> None:
    """How the speedup was obtained: quick (one process) or processes × values with the between share."""
    sp = result["summary"]["speedup"]
    if result.get("processes", 1) <= 1:
        words, button = st.columns([4, 1], vertical_alignment="center")
        words.caption(f"**{replicated.QUICK_MODE}**, {sp['n_pairs']} pairs: the interval covers the noise inside "
                      "this worker process only, so its verdict is this process's; a second run may land outside "
                      "it. The repeatable run's interval includes the variation from one process to the next.")
        n = state.form_processes()
        button.button(f"Repeat it in {n} fresh processes", key="bench.repeat_button", on_click=_repeat,
                      icon=":material/replay:", width="stretch",
                      help="The same settings, timed in several fresh worker processes one after another")
        return
    share = sp.get("between_share")
    per = ", ".join(f"{x:.2f}×" for x in sp["per_process_speedup"])
    pooled = result["summary"].get("pooled_ci") or [None, None]
    naive = (f" Pooled as if from one process, the interval would have been {pooled[0]:.2f}–{pooled[1]:.2f}×."
             if None not in pooled else "")
    rerun = (f" · a rerun lands in **{sp['rerun_low']:.2f}–{sp['rerun_high']:.2f}×**"
             if sp.get("rerun_low") is not None and sp.get("rerun_high") is not None else "")
    st.markdown(f"**Repeatable: {replicated.pairs_words(sp)}**{rerun}"
                + (f" · **{share:.0%}** of the spread is between processes" if share is not None else ""))
    st.caption(f"Each process was a fresh worker with its own warm-up. Speedup per process: {per}; the estimate "
               f"is their geometric mean, with a Student-t interval over processes. Where another run of as "
               f"many processes lands (95%) is √2 wider than that interval: it holds this run's error and the "
               f"next one's.{naive}"
               + "".join(f" {n}" for n in sp.get("notes", [])))


# ---- size sweep ---------------------------------------------------------------------------------

def suggested_values(current: int, low: int, high: int) -> list[int]:
    """Four sizes up to the current one (halving), within the parameter's bounds."""
    values = sorted({min(max(current // d, low), high) for d in (8, 4, 2, 1)})
    return values


def parse_values(text: str) -> list[int]:
    parts = [p for p in re.split(r"[,\s]+", text.strip()) if p]
    if not parts:
        raise ValueError("give at least one size")
    values = []
    for part in parts:
        if not re.fullmatch(r"\d+", part):
            raise ValueError(f"{part!r} is not a whole number")
        values.append(int(part))
    if len(values) > MAX_SWEEP_POINTS:
        raise ValueError(f"{len(values)} sizes given; at most {MAX_SWEEP_POINTS}")
    return sorted(set(values))


def _on_param_change() -> None:
    st.session_state[state.SWEEP_VALUES] = ""  # refilled with suggestions for the new parameter


def size_inputs(choice: Choice, sizes: list[str], suggest, columns, label: str) -> tuple[str, str]:
    """The sweep's size to vary and its values' text, in two ``columns``; a size newly chosen gets the values
    ``suggest(current, low, high)``. The measured sweep's and the simulated GPU's predicted one."""
    ss = st.session_state
    if ss.get(state.SWEEP_PARAM) not in sizes:
        ss[state.SWEEP_PARAM], ss[state.SWEEP_VALUES] = sizes[0], ""
    if not ss.get(state.SWEEP_VALUES):
        spec = PARAMS[ss[state.SWEEP_PARAM]]
        current = int(choice.model.p[ss[state.SWEEP_PARAM]])
        ss[state.SWEEP_VALUES] = ", ".join(str(v) for v in suggest(current, spec.low, spec.high))
    left, right = columns
    param = left.selectbox("Size to vary", sizes, key=state.SWEEP_PARAM, format_func=lambda n: PARAM_LABELS.get(n, n),
                           on_change=_on_param_change, persist_state=state.KEEP_HIDDEN)
    return param, right.text_input(label, key=state.SWEEP_VALUES, persist_state=state.KEEP_HIDDEN)


def sweep_panel(engine, choice: Choice) -> None:
    st.caption("Fused against unfused at several values of one size: small tensors are dominated by per-op "
               "overhead, large ones by memory traffic, and the fusion pays where the removed passes over "
               "memory start to cost more than the call itself.")
    sizes = choice.model.sizes()
    if not sizes:  # e.g. a layer stack: its sizes are in its layers
        st.info(f"A sweep varies one size parameter of a preset or op chain; {choice.model.label()} has its sizes "
                "in its own definition: change them there and benchmark again in 'Fused vs unfused'.",
                icon=":material/info:")
        return
    c1, c2, c3, c4 = st.columns([1, 2, 1, 1.2], vertical_alignment="bottom")
    param, text = size_inputs(choice, sizes, suggested_values, (c1, c2),
                              f"Values (up to {MAX_SWEEP_POINTS}, comma-separated)")
    reps = c3.number_input("Calls per point", min_value=3, max_value=MAX_SWEEP_REPS, step=5, key=state.SWEEP_REPS,
                           persist_state=state.KEEP_HIDDEN)
    clicked = c4.button("Run sweep", type="primary", key="sweep.run", width="stretch")
    try:
        values = parse_values(text)
    except ValueError as exc:
        st.error(f"sweep values: {exc}")
        return
    key = engine.result_key("sweep", choice.model, choice.config, {"param": param, "values": values})
    if clicked:
        _run_sweep(engine, choice, param, values, int(reps), key)
    stored = state.recall(state.SWEEP_RESULTS, key)
    if stored is None:
        st.info(f"Not run yet: {len(values)} points × 2 variants × {int(reps)} calls, on the current configuration.")
        return
    rows = stored["rows"]
    st.plotly_chart(charts.sweep_figure(rows, param), width="stretch", key="sweep.figure")
    pays = stored["pays_from"]
    st.caption(f"Fused is measurably faster from {param} = {pays} on." if pays is not None
               else "At no swept size is fused measurably faster at that size and every larger one.")
    st.dataframe(
        [{param: r["value"], "fused ms": round(r["fused_median_ms"], 4), "unfused ms": round(r["unfused_median_ms"], 4),
          "speedup": stats.format_speedup(charts.row_speedup(r)),
          "pairs": r["n_pairs"]} for r in rows],
        hide_index=True, width="stretch")
    traffic_ui.sweep_section(stored.get("traffic_rows") or [], param)


def _run_sweep(engine, choice: Choice, param: str, values: list[int], reps: int, key: str) -> None:
    status, bar, on_progress = _progress_runner(f"Sweeping {param} over {len(values)} values")
    try:
        sweep = engine.sweep(choice.model, choice.config, param=param, values=values, reps=reps,
                             warmup=3, max_seconds=min(30.0, MAX_BENCH_SECONDS), on_progress=on_progress)
    except ExplorerError as exc:
        status.update(label="The sweep failed", state="error", expanded=False)
        frame.show_error(exc, "The sweep failed")
        return
    status.update(label=f"Swept {param} over {len(values)} values", state="complete", expanded=False)
    state.remember(state.SWEEP_RESULTS, key, {"param": param, "rows": sweep["rows"], "pays_from": sweep["pays_from"],
                                              "traffic_rows": traffic_ui.sweep_rows(engine, sweep, on_progress)})
