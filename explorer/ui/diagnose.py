"""When the fusion breaks the model: find the fused node responsible, the ways around it, and the repro to file.

Shown under the agreement banner when its verdict says the fusion breaks the model or changes its numbers, and
under the summary's warning when Grappler gave up on the model or its remapper failed (the outputs agree, but
TensorFlow dropped the fusions). One
button runs ``engine.diagnose`` (each fused node's ops alone in a fresh process, the ways around it run); the
answer is kept per session, and the responsible node's standalone script is offered for download.
"""

from __future__ import annotations

import os
import shutil

import streamlit as st

from ..analysis.annotate import SKIPPED_MEANING
from ..engine import uploads
from ..errors import ExplorerError
from ..model.devices import is_simulated
from ..present import agreement as words
from ..present.diagnose_text import ALONE_WORDS
from . import frame, upload
from .fixes import download_model

RESULTS = "diagnose.results"
KEEP = 4


def broken_panel(engine, result: dict, choice) -> None:
    """Under the banner of a fusion that breaks the model: the node responsible and the ways around it."""
    if words.headline(result.get("agreement")):
        _panel(engine, choice, "**Which fused node breaks it, and what gets around it**",
               "Runs each fused node's ops alone, in a fresh process, on seeded inputs of the shapes they received, "
               "with the remapper on and off; then the model with the remapper off and with oneDNN flipped, each "
               "checked and timed. About a minute.", "Find the fused node responsible")


def gave_up_panel(engine, result: dict, choice) -> None:
    """Under the warning that Grappler gave up or its remapper failed (the outputs agree): the ways that let it
    optimise the model."""
    if not words.headline(result.get("agreement")) and gave_up(result):
        skipped = bool(result.get("grappler_skipped"))
        what = "Grappler gave up on this model" if skipped else "The remapper failed on this model"
        # engine.diagnose adds the split-add rewrite where the remapper failed on a model it can rewrite
        split = not skipped and choice is not None and "fix" in choice.source.offers
        _panel(engine, choice, f"**{what}: what lets it optimise the model again**",
               "Runs the model with the remapper off and with oneDNN flipped"
               + (", and a copy with each residual sum the remapper fails on computed twice (split-add)" if split
                  else "") + ", each in a fresh process, checked against its unfused graph and timed, and says "
               "whether Grappler then optimised it. About " + ("a minute." if split else "half a minute."),
               "Find a way around it")


def _panel(engine, choice, title: str, caption: str, label: str) -> None:
    if engine is None or choice is None or is_simulated(choice.config.device):
        return
    key = engine.result_key("diagnose", choice.spec, choice.config)
    results = st.session_state.setdefault(RESULTS, {})
    with st.container(border=True):
        st.markdown(title)
        st.caption(caption)
        if key not in results:
            button = st.empty()  # gone once clicked: the answer takes its place
            if button.button(label, key="diagnose.run", type="primary"):
                button.empty()
                _run(engine, choice, key)
        found = results.get(key)
        if found is not None:
            show(found)


def _run(engine, choice, key: str) -> None:
    with st.status("Diagnosing the fusion…", expanded=False) as status:
        def progress(p: dict) -> None:
            status.update(label=p.get("message") or "working…")

        folder = None
        try:  # a rewritten model is kept in the session's folder, within its quota, as the fixes keep theirs
            folder = upload.scratch("diagnose-")
            found = engine.diagnose(choice.spec, choice.config, reps=5, out=os.path.join(folder, "model-rewritten"),
                                    on_progress=progress)
            uploads.keep_written(upload.session_directory(), folder, "the rewritten model")
        except ExplorerError as exc:
            if folder:
                shutil.rmtree(folder, ignore_errors=True)
            status.update(label="The diagnosis could not run", state="error")
            frame.show_error(exc, "Diagnosing the fusion failed")
            return
        status.update(label="Diagnosed", state="complete")
    results = st.session_state[RESULTS]
    results[key] = dict(found, folder=folder)
    while len(results) > KEEP:
        shutil.rmtree(results.pop(next(iter(results))).get("folder") or "", ignore_errors=True)


def gave_up(result: dict) -> bool:
    """Whether TensorFlow logged that Grappler gave up on the model (it then ran the graph unoptimised) or that its
    remapper failed (the graph ran without any of its fusions)."""
    return bool(result.get("grappler_skipped") or result.get("remapper_failed"))  # as analysis.annotate found them


def show(found: dict) -> None:
    pinned = found.get("pinned")
    if pinned is None and found.get("warnings") and found["verdict"]["fault"] is None:
        said = ("Grappler gave up, and the model ran with no graph optimisation" if any(
            w.startswith(SKIPPED_MEANING) for w in found["warnings"]) else "the remapper failed, and none of its "
            "fusions were kept")
        st.markdown(f"The outputs agree, but TensorFlow dropped Grappler's work: {said}. Each way around it, run here:")
    elif pinned is None:
        st.warning("No fused node's ops, run alone, show the fault: it needs more of the model than one fusion.")
    else:
        kernel = pinned.get("kernel") or "not named by TensorFlow"
        st.markdown(f"Fused node responsible: **`{pinned['node']}`** — `{pinned['target']}`  \n"
                    f"Its ops: {pinned.get('describe') or ''}  \n"
                    f"Remapper pattern: `{pinned['pattern']}` · kernel: {kernel}"
                    + (f" (`{pinned['executed_op']}`)" if pinned.get("executed_op") else "") + "  \n"
                    f"Run alone in a fresh process, its ops {ALONE_WORDS.get(pinned['fault_alone'], '?').lower()}"
                    + (" — the model's fault." if pinned["reproduces"] else " — another fault than the model's."))
        script = found["nodes"][pinned["index"]].get("script")
        if script:
            st.download_button("Download the report to file upstream (fusion_repro.py)", script,
                               file_name="fusion_repro.py", mime="text/x-python", key="diagnose.download",
                               icon=":material/bug_report:")
    rows = [{"way around": w["words"], "runs": w.get("runs"), "agrees": w.get("agrees"),
             "ms a call": (w.get("timing") or {}).get("configured_ms"),
             "unfused ms": (w.get("timing") or {}).get("unfused_ms")}
            | ({"Grappler optimises": not w.get("warnings")} if found.get("warnings") else {})
            for w in found.get("ways") or ()]
    if rows:
        st.dataframe(rows, hide_index=True, width="stretch")
    for way in found.get("ways") or ():
        if way.get("model_out") and way.get("runs") and way.get("agrees"):
            download_model(way, f"diagnose.{way['way']}", f"the model with {way['way']}",
                           f"The model rewritten so that only the fusion that breaks it is prevented ({way['words']}), "
                           "run here and checked against its unfused graph")
