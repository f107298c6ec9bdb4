"""Try the fixes, in the Fusion report of an imported model: rewrite it, check it, time it, take it away.

The person picks the fixes (those that apply are preselected) and how to time them; the engine
(``engine.fix``) writes the fixed copy into this session's folder, compares its outputs with the
original's, and times it against the original interleaved. The panel shows what each fix changed and
the sentence to act on, the fusions gained, the agreement, the speedup of all the fixes together and
of each alone, the memory traffic saved, the graphs after Grappler side by side, and the download.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import zipfile

import streamlit as st

from ..analysis import fix_plan, traffic
from ..errors import ExplorerError
from ..analysis.fusion import is_fused_node
from ..engine import uploads
from ..model.graph import Graph
from ..model.sources import source_for_data
from ..present import fix_text
from ..present.dot import to_dot
from . import cached, frame, state, upload

RESULTS = "fixes.results"  # {run key: fix result} of this session (the last few)
KEEP = 4
PROCESSES = {"quick: 1 process": 1, "repeatable: 3 processes": 3}
FIX_HELP = {
    "fold-batchnorm": "batch norm written as Mul and AddV2 after a convolution or Dense, folded into its weights "
                      "and a BiasAdd",
    "bias-add": "a 1-D bias added with AddV2 after a contraction, written as BiasAdd",
    "bias-before-reshape": "a Dense layer's bias moved before the Reshape that keeps its last dimension",
    "dilated-conv": "a dilated convolution written as SpaceToBatchND → Conv2D → BatchToSpaceND, as one Conv2D with "
                    "dilations",
    "freeze": "the variables as constants, as a frozen serving graph has them",
}


def run_key(result: dict, fixes: list[str], processes: int) -> str:
    return hashlib.sha256(json.dumps([result["key"], sorted(fixes), processes]).encode()).hexdigest()[:16]


def panel(engine, result: dict, choice, key: str = "fixes") -> None:
    """``choice``: the sidebar's (its spec names the model's file, which the result leaves out)."""
    if engine is None or choice is None or "fix" not in choice.source.offers:  # model.sources: what a fix rewrites
        return
    st.divider()
    st.markdown("#### Try the fixes")
    chosen, skipped = fix_plan.choose(result)
    st.caption("Rewrite a copy of this model into the form the remapper fuses, with the same maths: the copy's "
               "outputs are compared with the original's on the same seeded inputs, and it is timed against the "
               "original, interleaved. A rewrite that would change the result is not offered."
               + (" Not applicable here: " + "; ".join(f"{k} ({v})" for k, v in skipped.items()) + "."
                  if skipped else ""))
    if not chosen:
        st.info("No fix applies to this model's near-misses.")
        return
    _fresh_choice(key, result, chosen)
    left, middle, right = st.columns([3, 2, 1], vertical_alignment="bottom")
    fixes = left.multiselect("Fixes", list(fix_plan.FIXES), key=f"{key}.chosen", persist_state=state.KEEP_HIDDEN,
                             format_func=lambda f: f, help="; ".join(f"{k}: {v}" for k, v in FIX_HELP.items()))
    timing = middle.radio("Timing", list(PROCESSES), horizontal=True, key=f"{key}.processes",
                          help="Quick: one warm worker process, an interval for that process only. Repeatable: "
                               "three fresh processes, an interval that holds from one run to the next.",
                          persist_state=state.KEEP_HIDDEN)
    processes = PROCESSES[timing]
    results = st.session_state.setdefault(RESULTS, {})
    this = run_key(result, fixes, processes)
    if right.button("Try the fixes", type="primary", key=f"{key}.run", disabled=not fixes, width="stretch"):
        _run(engine, result, choice, fixes, processes, this)
    fixed = results.get(this)
    if fixed is not None:
        show(engine, result, fixed, choice.config, key)


def _fresh_choice(key: str, result: dict, chosen: list[str]) -> None:
    """A new model (or a configuration under which other fixes apply) starts from the fixes that apply to it: the
    widget's state would otherwise keep the previous model's choice (run a fix called not applicable here, and
    leave out the one that applies)."""
    ss = st.session_state
    this = json.dumps([result.get("spec"), chosen], sort_keys=True, default=str)
    if ss.get(f"{key}.chosen.for") != this:
        ss[f"{key}.chosen.for"] = this
        ss[f"{key}.chosen"] = list(chosen)


def _run(engine, result: dict, choice, fixes: list[str], processes: int, this: str) -> None:
    try:
        folder = upload.scratch("fixed-")
    except ExplorerError as exc:
        frame.show_error(exc, "Trying the fixes failed")
        return
    session, out = upload.session_directory(), os.path.join(folder, _stem(result) + "-fixed")
    failed = None
    with st.status("Rewriting the model…", expanded=False) as status:
        def progress(p: dict) -> None:
            status.update(label=p.get("message") or "working…")

        try:
            fixed = engine.fix(choice.spec, choice.config, apply=fixes, out=out, processes=processes, reps=20,
                               warmup=3, max_seconds=20.0, on_progress=progress)
            uploads.keep_written(session, folder)
            status.update(label="Fixed, checked and timed" if fixed["applied"] else "Nothing to rewrite",
                          state="complete")
        except ExplorerError as exc:
            failed = exc
            status.update(label="The fixes could not be tried", state="error")
    if failed is not None:
        shutil.rmtree(folder, ignore_errors=True)
        frame.show_error(failed, "Trying the fixes failed")
        return
    results = st.session_state[RESULTS]
    gone = [results.pop(this)] if this in results else []  # run again: the earlier run's model goes
    results[this] = dict(fixed, folder=folder)
    while len(results) > KEEP:
        gone.append(results.pop(next(iter(results))))
    for earlier in gone:
        if earlier.get("folder"):
            shutil.rmtree(earlier["folder"], ignore_errors=True)
    for evicted in [k for k, r in results.items() if r.get("folder") and not os.path.isdir(r["folder"])]:
        results.pop(evicted)  # its model evicted by the session's quota


def _stem(result: dict) -> str:
    spec = result.get("spec") or {}
    source = source_for_data(spec)
    return source.stem(spec) if source else "model"


def show(engine, result: dict, fixed: dict, config, key: str) -> None:
    if not fixed["applied"]:  # the rewrites found nothing: no copy was made, so nothing was checked or timed
        st.info("Nothing was rewritten, so there is no copy to check or time. "
                + "; ".join(f"**{k}**: {v}" for k, v in (fixed.get("skipped") or {}).items()),
                icon=":material/info:")
        return
    before, after = fixed.get("fused_kernels_before"), fixed.get("fused_kernels_after")
    sp = fixed.get("speedup")
    cols = st.columns(4)
    cols[0].metric("Fused kernels", f"{before} → {after}", f"{after - before:+d}" if before is not None else None)
    cols[1].metric("Speedup, all fixes", f"{sp['estimate']:.2f}×" if sp else "not timed",
                   f"95% CI {sp['ci_low']:.2f}–{sp['ci_high']:.2f}" if sp and sp.get("ci_low") else None,
                   delta_color="off", delta_arrow="off", help=fix_text.speedup_words(sp))
    cols[2].metric("Outputs", "agree" if fixed.get("within_tolerance") else "DIFFER",
                   f"max abs diff {fixed['max_abs_diff']:.2g}" if fixed.get("max_abs_diff") is not None else None,
                   delta_color="off", delta_arrow="off", help=fix_text.agreement_words(fixed))
    saved = fixed.get("bytes_saved")
    cols[3].metric("Memory traffic saved", traffic.size_text(saved),
                   help=fix_text.bytes_words(saved, fixed.get("bytes_written_before")))
    for failed in fixed.get("tensorflow_failed_after") or []:
        st.error(f"**On the fixed model, not on the original:** {failed} {fix_text.FAILED_AFTER}",
                 icon=":material/report:")
    for applied in fixed["applied"]:
        st.markdown(f"**{applied['fix']}** · {fix_text.resolved_words(applied)}, "
                    f"{fix_text.plural(len(applied['nodes']), 'node')} rewritten")
        st.info(applied["advice"], icon=":material/edit_note:")
        if applied.get("left"):
            with st.expander(f"{len(applied['left'])} left as they are (the result would change)"):
                st.dataframe([{"node": s["nodes"][0], "why": s["why"]} for s in applied["left"]], hide_index=True)
    a, b = st.columns(2)
    with a:
        st.markdown("**Fused ops before → after**")
        st.dataframe([{"fused op": op, "before": x, "after": y, "gained": y - x}
                      for op, x, y in fix_text.fusion_changes(fixed["fusions_before"], fixed["fusions_after"])],
                     hide_index=True, width="stretch")
    with b:
        st.markdown("**Each fix alone**")
        st.dataframe([_alone(p) for p in fixed["per_fix"]], hide_index=True, width="stretch",
                     column_config=ALONE_COLUMNS)
        for line in fix_text.slower_alone_words(fixed):
            st.warning(line, icon=":material/timer:")
    if sp:
        st.caption(f"Timed interleaved with the model as imported in {fix_text.runs_words(sp)}. Outputs: "
                   f"{fix_text.agreement_words(fixed)}. Memory traffic: "
                   f"{fix_text.bytes_words(saved, fixed.get('bytes_written_before'))}.")
    download_model(fixed, key)
    if st.toggle("Show both models' graphs after Grappler, side by side", key=f"{key}.graphs",
                 persist_state=state.KEEP_HIDDEN):
        _graphs(engine, result, fixed, config)


# sized to fit half the page at 1400 px: with Streamlit's own widths the last column was cut off
ALONE_COLUMNS = {
    "fix": st.column_config.TextColumn("fix", width=130),
    "speedup": st.column_config.TextColumn("speedup", width=70, help="this fix alone against the model as imported"),
    "95% CI": st.column_config.TextColumn("95% CI", width=85),
    "fused kernels": st.column_config.NumberColumn("fused", width=60, help="fused kernels with this fix alone"),
    "traffic saved": st.column_config.TextColumn("saved", width=80, help="memory traffic saved per call"),
}


def _alone(entry: dict) -> dict:
    sp = entry.get("speedup")
    return {"fix": entry["fix"], "speedup": f"{sp['estimate']:.2f}×" if sp else "—",
            "95% CI": f"{sp['ci_low']:.2f}–{sp['ci_high']:.2f}" if sp and sp.get("ci_low") else "—",
            "fused kernels": entry.get("fused_kernels_after"),
            "traffic saved": traffic.size_text(entry.get("bytes_saved"))}


def _graphs(engine, result: dict, fixed: dict, config) -> None:
    """The original's and the fixed model's graphs after Grappler, side by side, each scrolling in its own
    pane (fused kernels in purple): a network's graph is hundreds of nodes tall."""
    spec = fixed.get("fixed_spec")
    if not spec:
        return
    try:
        other = engine.inspect(spec, config)
    except ExplorerError as exc:
        frame.show_error(exc, "The fixed model's graphs could not be made")
        return
    for column, title, drawn in zip(st.columns(2), ("As imported", "With the fixes"), (result, other)):
        graph = Graph.from_dict(drawn["stages"]["optimized"])
        dot = to_dot(graph, fold_boilerplate=True)
        fused = sum(1 for n in graph.nodes if is_fused_node(n))
        column.markdown(f"**{title}**, after Grappler · {len(graph)} nodes, {fused} fused (purple)")
        with column.container(height=720):
            try:
                st.image(cached.svg(dot), width="stretch")
            except ExplorerError:  # no Graphviz here: the browser draws the DOT
                st.graphviz_chart(dot, width="stretch")


def download_model(fixed: dict, key: str, what: str = "the fixed model",
                   why: str = "The model with all the fixes applied, as this page ran it") -> None:
    """A button that downloads the rewritten copy at ``fixed["model_out"]`` (a SavedModel zipped), if it is there."""
    path = fixed.get("model_out")
    if not path or not os.path.exists(path):
        return
    name = os.path.basename(path)
    if os.path.isdir(path):
        data = io.BytesIO()
        with zipfile.ZipFile(data, "w", zipfile.ZIP_DEFLATED) as archive:
            for root, _, files in os.walk(path):
                for file in files:
                    full = os.path.join(root, file)
                    archive.write(full, os.path.join(name, os.path.relpath(full, path)))
        payload, file_name, mime = data.getvalue(), f"{name}.zip", "application/zip"
    else:
        with open(path, "rb") as handle:
            payload, file_name, mime = handle.read(), name, "application/octet-stream"
    st.download_button(f"Download {what} ({'SavedModel, .zip' if os.path.isdir(path) else 'GraphDef'})",
                       data=payload, file_name=file_name, mime=mime, on_click="ignore", key=f"{key}.download",
                       icon=":material/download:", help=f"{why}: import it again here, or serve it.")
