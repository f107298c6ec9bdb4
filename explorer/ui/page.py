"""The main page: sidebar choice -> the engine's inspect result -> graphs, benchmark, what-if."""

from __future__ import annotations

import streamlit as st

from ..errors import ExplorerError
from ..model.graph import STAGES
from ..model.stack import StackSpec, to_text
from ..present.machine import gpu_words
from . import bench, cached, frame, matrix, passes, report, sidebar, stages, state, upload, whatif, why, xla


def render(engine) -> None:
    """The page, run on ``engine`` (the server's live Engine; a test may give a ReplayEngine). Every panel
    that asks the engine for something is handed it."""
    state.init()
    st.session_state[state.ENGINE] = engine  # for a test to look at what the page showed; panels are handed it
    frame.header()
    problem = state.server_env_defaults()[1]
    if problem:
        st.warning(f"The server's default flags are ignored: {problem}", icon=":material/settings:")
    fingerprint = _fingerprint(engine)
    choice = sidebar.render(fingerprint)
    if not choice.ready:
        for problem in choice.problems:
            st.error(problem)
        st.info("Nothing runs until the choice in the sidebar is valid; your other settings are kept.")
        whatif.panel(engine, choice, None)
        return
    result = inspect(engine, choice)
    if result is None:
        frame.reproduce(choice)
        whatif.panel(engine, choice, None)
        return
    if choice.imported and upload.remember(result):
        st.rerun()  # the sidebar offers the model's signatures and shows its inputs, known from this result
    _summary_line(engine, choice, result)
    if choice.imported:
        _imported_tabs(engine, choice, result)
        return
    # Folded: for the engineer taking the run elsewhere; open, it would push the graphs below the fold.
    with st.expander("Reproduce this run elsewhere: command line, repro.py, bug-report bundle",
                     icon=":material/terminal:"):
        frame.reproduce(choice)
        export(choice, result)
    whatif.panel(engine, choice, result)
    tab_graphs, tab_why, tab_passes, tab_bench, tab_sweep, tab_log, tab_xla, tab_matrix = st.tabs(
        ["Graphs before → after", "Why it fused (or not)", "Pass pipeline", "Fused vs unfused", "Size sweep",
         "Grappler's log", "XLA", "What-if matrix"])
    with tab_graphs:
        stages.panel(result)
    with tab_why:
        why.panel(result, choice.preset.id if choice.preset else "chain", choice.model.p,
                  gpu_here=bool((fingerprint or {}).get("gpus")))
    with tab_passes:
        passes.panel(engine, result, choice)
    with tab_bench:
        bench.panel(engine, choice) if not result.get("simulated") else bench.simulated_note()
    with tab_sweep:
        bench.sweep_panel(engine, choice) if not result.get("simulated") else bench.simulated_note()
    with tab_log:
        _grappler_log(result)
    with tab_xla:
        xla.panel(engine, choice, result)
    with tab_matrix:
        matrix.panel(engine, choice)


def _imported_tabs(engine, choice: sidebar.Choice, result: dict) -> None:
    """An imported model: its graphs, fusion report, passes, benchmark, log and XLA (the pattern checklist reads
    op chains; the report covers the whole model)."""
    with st.expander("Reproduce this run: command line", icon=":material/terminal:"):
        frame.reproduce(choice)
    tab_graphs, tab_report, tab_passes, tab_bench, tab_log, tab_xla = st.tabs(
        ["Graphs before → after", "Fusion report", "Pass pipeline", "Fused vs unfused", "Grappler's log", "XLA"])
    with tab_graphs:
        stages.panel(result)
    with tab_report:
        report.panel(result)
    with tab_passes:
        passes.panel(engine, result, choice)
    with tab_bench:
        bench.panel(engine, choice)
    with tab_log:
        _grappler_log(result)
    with tab_xla:
        xla.panel(engine, choice, result)


def _fingerprint(engine) -> dict | None:
    try:
        if cached.fingerprint_is_ready(engine):
            return cached.fingerprint(engine.name, engine)
        with st.spinner("Starting TensorFlow in a new worker process to see which devices it has (a few seconds)…"):
            return cached.fingerprint(engine.name, engine)
    except ExplorerError as exc:
        frame.show_error(exc, "TensorFlow could not start, so the devices are unknown")
        return None


def provenance(result: dict) -> str:
    if result.get("cached"):
        return "served from cache (this configuration ran before)"
    worker = result.get("worker") or {}
    if worker.get("replayed"):
        return "replayed from a recording (no worker ran)"
    if worker.get("new_process"):
        return (f"ran in a new TensorFlow worker process (TensorFlow started in {worker.get('startup_s', 0):.1f} s, "
                f"{worker.get('wall_s', 0):.1f} s in all)")
    return f"ran in the warm worker of this configuration in {worker.get('wall_s', 0):.2f} s"


def inspect(engine, choice: sidebar.Choice) -> dict | None:
    """The engine's inspect result for the current choice, with progress while it works."""
    placeholder = st.empty()
    try:
        if engine.is_ready("inspect", choice.model, choice.config):
            result = engine.inspect(choice.model, choice.config)
        else:
            cold = not engine.is_warm(choice.config)
            label = ("Starting TensorFlow in a new worker process for this configuration (a few seconds)…" if cold
                     else "Tracing the model and running Grappler…")
            with placeholder.status(label, expanded=False) as status:
                def progress(p):
                    status.update(label=p.get("message") or label)

                result = engine.inspect(choice.model, choice.config, on_progress=progress)
    except ExplorerError as exc:
        placeholder.empty()
        frame.show_error(exc, "Inspecting the model failed")
        return None
    placeholder.empty()
    if choice.config.device == "cpu":
        # The likeliest next question is "and without oneDNN?" (or with it): start that worker now.
        # From an explicit setting the way back is "unset" (TF's default), not the opposite value.
        if "TF_ENABLE_ONEDNN_OPTS" in choice.config.env_dict:
            flipped = None
        else:
            flipped = "0" if (result.get("fingerprint") or {}).get("onednn") else "1"
        engine.prestart(choice.config.with_env("TF_ENABLE_ONEDNN_OPTS", flipped))
    shown = st.session_state.get(state.SHOWN)
    if not shown or shown.get("key") != result["key"]:
        shown = {"key": result["key"], "provenance": provenance(result)}
        st.session_state[state.SHOWN] = shown
    result = dict(result, provenance=shown["provenance"])
    return result


def _summary_line(engine, choice: sidebar.Choice, result: dict) -> None:
    fp = result.get("fingerprint") or {}
    fusions = result.get("fusions") or []
    left, right = st.columns([5, 1], vertical_alignment="center")
    with left:
        found = (f"**{len(fusions)} fusion{'s' if len(fusions) != 1 else ''}** found by Grappler" if fusions
                 else "**no fusion** found by Grappler")
        badge = why.verdict_badge(result.get("explanation"))
        # A real GPU run names the GPU; otherwise oneDNN is what decides the CPU's fusions.
        ran_on = (f"GPU:0 {gpu_words(fp['gpus'][0])}" if choice.config.device == "gpu" and fp.get("gpus")
                  else f"{sidebar.device_label(choice.config.device)} · oneDNN {'on' if fp.get('onednn') else 'off'}")
        st.markdown(f"{badge + ' ' if badge else ''}{found} · {choice.label} on {ran_on}")
        st.caption(f"TensorFlow {fp.get('tensorflow', '?')} · graphs {result['provenance']}.")
    with right:
        if not choice.imported:
            whatif.pin_button(engine, choice, result)
    for warning in result.get("warnings") or []:  # analysis.tf_warnings already merged those quoting one line
        st.warning(warning)
    if result.get("simulated"):
        profile = result.get("profile") or {}
        with st.expander(f"Simulated on a virtual {profile.get('model', 'GPU')}: what this cannot check"):
            st.markdown("\n".join(f"- {line}" for line in result.get("limits") or []))
            if result.get("method"):
                st.caption(result["method"])


def export(choice: sidebar.Choice, result: dict) -> None:
    """Downloads that take the finding elsewhere: the standalone script, and a zip for a bug report."""
    from ..present import repro

    name = repro.bundle_name(result)
    left, middle, right = st.columns([1.3, 1.3, 3], vertical_alignment="center")
    if isinstance(choice.model, StackSpec):  # a Keras model: its JSON is what rebuilds it, with `--spec`
        left.download_button(f"Layer stack: {choice.model.name}.json", data=to_text(choice.model.source),
                             file_name=f"{choice.model.name}.json", mime="application/json", on_click="ignore",
                             key="export.stack", icon=":material/data_object:", width="stretch",
                             help="The stack as JSON: python -m explorer inspect --spec FILE.json runs it again.")
    else:
        left.download_button("Reproduce: repro.py", data=lambda: repro.script(choice.model, choice.config),
                             file_name="repro.py", mime="text/x-python", on_click="ignore", key="export.script",
                             icon=":material/code:", width="stretch",
                             help="A standalone script (TensorFlow and numpy only) that sets these flags, builds this "
                                  "model, runs it once and prints the fused ops. Run: python repro.py --pbtxt-dir out/")
    middle.download_button("Bug-report bundle (.zip)", data=lambda: repro.bundle(result), file_name=f"{name}.zip",
                           mime="application/zip", on_click="ignore", key="export.bundle",
                           icon=":material/folder_zip:", width="stretch",
                           help="repro.py, the three graphs as pbtxt (traced, after Grappler, executed) and a "
                                "summary.json of the machine, the configuration, the fusions and the verdict.")
    right.caption("repro.py needs only TensorFlow and numpy; the bundle adds the three graphs and a summary, for "
                  "a bug report.")


def remapper_silence(result: dict) -> str:
    """What an empty remapper log means here: silence is not 'fused nothing' (some rewrites log no line)."""
    if result.get("grappler_skipped"):
        return ("(the remapper logged nothing, but it did rewrite the graph: TensorFlow then threw Grappler's "
                "work away, see 'Pass pipeline')")
    if result.get("fusions"):
        return "(the remapper logged nothing: its rewrites here log no line; the fusions are in 'Graphs before → after')"
    return "(the remapper logged nothing, and nothing fused)"


def _grappler_log(result: dict) -> None:
    grappler = result.get("grappler") or {}
    st.caption("What TensorFlow itself logged while optimising this model, with the remapper's and Grappler's "
               "verbose logging on (TF_CPP_VMODULE=remapper=2,meta_optimizer=4).")
    st.markdown("**The remapper's own lines**")
    lines = grappler.get("remapper_log") or []
    st.code("\n".join(lines) if lines else remapper_silence(result), language="text", wrap_lines=True)
    if lines:
        # e.g. the GELU sub-graph folds into _FusedMatMul without a line: the log alone undercounts.
        st.caption("Not every rewrite logs a line at this level: the fusions under 'Graphs before → after' are "
                   "the full account.")
    notable = [ln for ln in grappler.get("notable") or [] if ln.split("] ", 1)[-1].strip() not in lines]
    if notable:
        st.markdown("**Other notable lines**")
        st.code("\n".join(notable), language="text", wrap_lines=True)
    stages = ", ".join(f"{STAGES[s]}: {len(g.get('nodes', []))} nodes" for s, g in (result.get("stages") or {}).items()
                       if s in STAGES)
    st.caption(f"Stages captured: {stages}.")
    log = grappler.get("log") or []
    if log:
        with st.expander(f"Full Grappler log ({len(log)} lines)"):
            st.code("\n".join(log[-600:]), language="text")
