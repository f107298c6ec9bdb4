"""Share and keep an experiment: its link, "Save experiment" (a small JSON file, optionally with what was measured)
and "Open experiment" (a file checked like any input, then applied as a link is). docs/experiments.md.
"""

from __future__ import annotations

import streamlit as st

from ..errors import ExplorerError
from ..model.experiment import Experiment, server_default
from ..present.markdown import escaped, without_images
from . import experiment, state

OPEN_KEY = "experiment.open"  # the "Open experiment" uploader
WITH_RESULTS = "experiment.with_results"
OPENED = "experiment.opened"  # what the last opened file did, in one line (shown once)
state.VALUE_WIDGETS.add(WITH_RESULTS)


def page_url() -> str:
    """The address the browser reached the explorer at (st.context.url), or the default one."""
    try:
        url = st.context.url
    except Exception:  # noqa: BLE001 - no browser context (a test's AppTest): the standard address
        url = None
    return url or "http://localhost:8501"


def results_of(result: dict | None, bench_result: dict | None) -> dict:
    """What a saved experiment carries of its results, for a reader: the fusions and verdict, the machine, and
    the benchmark's figures when one ran. Never read back."""
    out: dict = {}
    if result:
        fp = result.get("fingerprint") or {}
        out["inspect"] = {
            "fusions": [f.get("describe") for f in result.get("fusions") or []],
            "verdict": (result.get("explanation") or {}).get("verdict"),
            "nodes": {stage: len((graph or {}).get("nodes") or []) for stage, graph in (result.get("stages") or {}).items()},
            "machine": {k: fp.get(k) for k in ("cpu_model", "tensorflow", "onednn") if k in fp},
        }
    if bench_result:
        summary = bench_result.get("summary") or {}
        sp = summary.get("speedup") or {}
        out["bench"] = {"fused_median_ms": (summary.get("fused") or {}).get("median_ms"),
                        "unfused_median_ms": (summary.get("unfused") or {}).get("median_ms"),
                        "speedup": sp.get("estimate"), "ci": [sp.get("ci_low"), sp.get("ci_high")],
                        "verdict": sp.get("verdict"), "processes": bench_result.get("processes", 1),
                        "pairs": sp.get("n_pairs_total", sp.get("n_pairs")),
                        "measured_at": bench_result.get("measured_at")}
    return out


def _open() -> None:
    """The "Open experiment" uploader's callback: check the file, then put its experiment on the page."""
    upload = st.session_state.get(OPEN_KEY)
    if upload is None:
        return
    try:
        exp = Experiment.from_json(upload.getvalue())  # its size checked first, stated as it is
    except ExplorerError as exc:
        st.session_state[OPENED] = ("error", f"{escaped(upload.name)} was not opened: {without_images(str(exc))}")
        return
    experiment.apply(exp)
    st.session_state[OPENED] = ("success", f"Opened {escaped(upload.name)}: the sidebar and the tabs show its experiment.")


def panel(exp: Experiment, result: dict | None = None, bench_result: dict | None = None) -> None:
    """The link of what is on screen, and its experiment file to save or another to open."""
    url = exp.link(page_url(), server_default())
    st.caption("This page's link holds the experiment on screen: open it in another browser and the same "
               "experiment opens; Back and Forward walk through what you tried.")
    st.code(url, language=None, wrap_lines=True)
    left, middle, right = st.columns([1.2, 1.2, 2.2], vertical_alignment="center")
    with_results = middle.toggle("With its results", key=WITH_RESULTS,
                                 help="Add the fusions, the verdict, the machine and the benchmark's figures (for a "
                                      "reader; opening the file runs the experiment again)")
    name = (exp.source.stem(exp.model) if exp.ready else "experiment") + ".experiment.json"
    left.download_button(
        "Save experiment", data=exp.to_json(results_of(result, bench_result) if with_results else None, link=url),
        file_name=name, mime="application/json", on_click="ignore", key="experiment.save",
        icon=":material/save:", width="stretch",
        help="A small JSON file of this experiment (the model, flags, switches, view and benchmark settings); "
             "`python -m explorer inspect --experiment FILE` runs it too")
    right.file_uploader("Open experiment", type=["json"], key=OPEN_KEY, on_change=_open,
                        help="An experiment file saved here (or written by hand: docs/experiments.md); it is "
                             "checked, then the sidebar and the tabs take it")


def opened_note(where) -> None:
    """What the last "Open experiment" did, once, in ``where`` (a place near the top of the page)."""
    opened = st.session_state.pop(OPENED, None)
    if opened:
        if opened[0] == "error":
            where.error(opened[1], icon=":material/error:")
        else:
            where.success(opened[1], icon=":material/file_open:")
