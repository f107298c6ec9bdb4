"""The main page: sidebar choice -> the engine's inspect result -> the tabs its model source offers (ui.tabs)."""

from __future__ import annotations

import streamlit as st

from ..engine.model_failure import FailsWithOneDnn
from ..errors import ExplorerError
from ..present.machine import gpu_words
from ..present.markdown import without_images
from . import agreement, bench, cached, diagnose, experiment, frame, lessons, link, presenter, share, sidebar, state, tabs, upload, whatif, why


def render(engine) -> None:
    """The page, run on ``engine`` (the server's live Engine; a test may give a ReplayEngine). Every panel
    that asks the engine for something is handed it."""
    state.init()
    state.begin_run()  # after a run that stopped early: the widgets' values sent to the browser again
    link.bind()  # a link opened (or Back/Forward): its experiment, before any widget draws
    lesson = lessons.begin(engine)  # a lesson's step opened: its experiment, before any widget draws
    st.session_state[state.ENGINE] = engine  # for a test to look at what the page showed; panels are handed it
    presenter.apply()
    frame.header(lesson_open=lesson is not None)
    lessons.notice()
    step_note = lessons.panel(lesson, {tab.id: tab.title for tab in tabs.TABS}) if lesson else None
    problem = state.server_env_defaults()[1]
    if problem:
        st.warning(f"The server's default flags are ignored: {problem}", icon=":material/settings:")
    note = st.empty()  # what a link left out, while its experiment is on screen (known once the sidebar drew)
    fingerprint = _fingerprint(engine)
    with st.sidebar:
        lessons.chooser()
    choice = sidebar.render(fingerprint)
    link.sync(choice.spec, choice.config)  # the address bar holds what is on screen (a history entry when it changed)
    if link.ignored_note():
        note.warning(link.ignored_note(), icon=":material/link_off:")
    else:
        with note.container():
            share.opened_note(st)
            link.dropped_link_check()
    _main(engine, choice, fingerprint, lesson, step_note)
    state.end_run()


def _main(engine, choice: sidebar.Choice, fingerprint: dict | None, lesson=None, step_note=None) -> None:
    """Below the header: the result of the sidebar's choice, or what to do first (``lesson``: the open lesson,
    whose step's claims are checked against the result, in ``step_note``)."""
    if not choice.ready:
        waiting = [p for p in choice.problems if isinstance(p, sidebar.Waiting)]
        for problem in choice.problems:
            if isinstance(problem, sidebar.Waiting):
                st.info(problem, icon=":material/arrow_back:")
            else:
                st.error(without_images(str(problem)))
        if len(waiting) < len(choice.problems):
            st.info("Nothing runs until the choice in the sidebar is valid; your other settings are kept.")
        if lesson:
            lessons.check(step_note, lesson, None)
        _share(engine, choice, None)
        whatif.panel(engine, choice, None)
        return
    result = inspect(engine, choice)
    if result is None:
        if lesson:  # the change failed: the way back to the step the text is about
            lessons.check(step_note, lesson, None)
        frame.reproduce(choice)
        _share(engine, choice, None)
        whatif.panel(engine, choice, None)
        return
    if upload.remember(result):
        st.rerun()  # the sidebar offers the model's signatures and shows its inputs, known from this result
    agreement.banner(result)  # the fusion breaks the model or its numbers: above everything else
    diagnose.broken_panel(engine, result, choice)  # and, asked for, the fused node responsible and the ways around it
    _summary_line(engine, choice, result)
    diagnose.gave_up_panel(engine, result, choice)  # under its warning: the settings that let Grappler optimise
    if lesson:
        lessons.check(step_note, lesson, result)
    offers = choice.source.offers
    if state.presenting():  # the room needs the graphs within the screen; the command line can wait
        pass
    elif "export" in offers:
        # Folded: for the engineer taking the run elsewhere; open, it would push the graphs below the fold.
        with st.expander("Reproduce this run elsewhere: command line, repro.py, bug-report bundle",
                         icon=":material/terminal:"):
            frame.reproduce(choice)
            export(choice, result)
    else:
        with st.expander("Reproduce this run: command line", icon=":material/terminal:"):
            frame.reproduce(choice)
    if not state.presenting():
        _share(engine, choice, result)
    if "pin" in offers:
        whatif.panel(engine, choice, result)
    tabs.render(tabs.View(engine, choice, result, gpu_here=bool((fingerprint or {}).get("gpus"))))
    if state.presenting():  # the graphs first on a projector's screen; what the simulation rests on after them
        simulated_note(result)


def _share(engine, choice: sidebar.Choice, result: dict | None) -> None:
    """The link of this experiment, and its file to save (or another to open)."""
    measured = None
    if result is not None and choice.ready:
        measured = (bench.measured(engine, choice.model, choice.config, experiment.on_screen().bench.processes)
                    or bench.measured(engine, choice.model, choice.config))
    with st.expander("Share or keep this experiment: its link, Save experiment, Open experiment",
                     icon=":material/share:"):
        share.panel(experiment.on_screen(), result, measured)


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
        if isinstance(exc, FailsWithOneDnn):  # the engine ran it without oneDNN, and it ran: one click there
            st.button("Run it with oneDNN off", key="page.onednn_off", on_click=experiment.apply_settings,
                      args=([{"kind": "env", "name": "TF_ENABLE_ONEDNN_OPTS", "value": "0"}],), type="primary",
                      icon=":material/build:", help="Sets TF_ENABLE_ONEDNN_OPTS=0 in the sidebar and runs again")
        return None
    placeholder.empty()
    # "And without oneDNN?": that worker is started once this page is drawn.
    cached.prestart_later(engine, cached.likely_next(choice.config, result))
    shown = st.session_state.get(state.SHOWN)
    if not shown or shown.get("key") != result["key"]:
        shown = {"key": result["key"], "provenance": provenance(result)}
        st.session_state[state.SHOWN] = shown
    result = dict(result, provenance=shown["provenance"])
    return result


def _summary_line(engine, choice: sidebar.Choice, result: dict) -> None:
    fp = result.get("fingerprint") or {}
    fusions = result.get("fusions") or []
    left, right = st.columns([4.2, 1.3], vertical_alignment="center")  # the pin button's label whole at 1280 px
    with left:
        found = (f"**{len(fusions)} fusion{'s' if len(fusions) != 1 else ''}** found by Grappler" if fusions
                 # the remapper fused, but Grappler dropped its whole output: its log names fusions none of which ran
                 else "**no fusion kept**: Grappler gave up on the function" if result.get("grappler_skipped")
                 else "**no fusion kept**: the remapper failed, and TensorFlow dropped its fusions"
                 if result.get("remapper_failed")
                 else "**no fusion** found by Grappler")
        late = len((result.get("fusions_by_pair") or {}).get("optimized->executed") or [])
        if late:  # oneDNN's layout pass fuses after Grappler: a Pad into a convolution, Conv2D with its bias
            found += f", **{late}{' more' if fusions else ''}** {'by oneDNN ' if fp.get('onednn') else ''}when executed"
        badge = why.verdict_badge(result.get("explanation"))
        # A real GPU run names the GPU; otherwise oneDNN is what decides the CPU's fusions.
        ran_on = (f"GPU:0 {gpu_words(fp['gpus'][0])}" if choice.config.device == "gpu" and fp.get("gpus")
                  else f"{sidebar.device_label(choice.config.device)} · oneDNN {'on' if fp.get('onednn') else 'off'}")
        st.markdown(f"{badge + ' ' if badge else ''}{found} · {choice.label} on {ran_on}")
        if not state.presenting():
            st.caption(f"TensorFlow {fp.get('tensorflow', '?')} · graphs {result['provenance']}. "
                       f"{agreement.caption(result)}")
    with right:
        if "pin" in choice.source.offers:
            whatif.pin_button(engine, choice, result)
    for warning in result.get("warnings") or []:  # analysis.tf_warnings already merged those quoting one line
        st.warning(warning)
    if result.get("simulated") and not state.presenting():  # the presenter view has it below the tabs
        simulated_note(result)


def simulated_note(result: dict) -> None:
    """What a simulated GPU cannot check, folded away."""
    if result.get("simulated"):
        profile = result.get("profile") or {}
        with st.expander(f"Simulated on a virtual {profile.get('model', 'GPU')}: what this cannot check"):
            st.markdown("\n".join(f"- {line}" for line in result.get("limits") or []))
            if result.get("method"):
                st.caption(f"How it was simulated: {result['method']}")


def export(choice: sidebar.Choice, result: dict) -> None:
    """Downloads that take the finding elsewhere: the files that rebuild the model (its source's ``repro``),
    and a zip for a bug report."""
    from ..present import repro

    name = repro.bundle_name(result)
    left, middle, right = st.columns([1.3, 1.3, 3], vertical_alignment="center")
    for file in repro.repro_files(choice.model, choice.config):
        left.download_button(file.label, data=file.content, file_name=file.download, mime=file.mime, on_click="ignore",
                             key=f"export.{file.download}", icon=":material/code:", width="stretch", help=file.help)
    middle.download_button("Bug-report bundle (.zip)", data=lambda: repro.bundle(result), file_name=f"{name}.zip",
                           mime="application/zip", on_click="ignore", key="export.bundle",
                           icon=":material/folder_zip:", width="stretch",
                           help="repro.py, the three graphs as pbtxt (traced, after Grappler, executed) and a "
                                "summary.json of the machine, the configuration, the fusions and the verdict.")
    right.caption("repro.py needs only TensorFlow and numpy; the bundle adds the three graphs and a summary, for "
                  "a bug report.")
