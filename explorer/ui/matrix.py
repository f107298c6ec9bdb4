"""The what-if matrix tab: the sidebar's model and presets × combinations of flags, switches and parameters, as a
heatmap.

A click on a cell (or the "open" picker below it) loads that cell's run into the explorer. The run
keeps its rows in the session as it goes, so the stop button (which reruns the page and so
interrupts the run between cells) leaves what was done, the rest marked stopped.
"""

from __future__ import annotations

import os

import streamlit as st

from ..engine import matrix
from ..errors import ExplorerError
from ..model.catalog import PRESETS
from ..model.flags import Config
from ..present import charts
from ..present import matrix as table
from . import experiment, matrix_against, state
from .sidebar import Choice

PRESETS_KEY = "matrix.presets"
VARY_KEY = "matrix.vary"  # text, one NAME=V1,V2 per line
BENCH_KEY = "matrix.bench"
RESULT_KEY = "matrix.result"  # {"rows": [...], "running": bool, "specs": {row name: spec} of non-preset rows}
OPEN_KEY = "matrix.open"
MISSING_KEY = "matrix.open.missing"  # the words of a cell the picker named that this matrix does not have
THIS_KEY = "matrix.this"  # the sidebar's own model (not a preset) is a row
DEFAULT_VARY = "TF_ENABLE_ONEDNN_OPTS=0,1\nremapping=on,off"
RAY_KEY = "matrix.ray"
RAY_ADDRESS = "EXPLORER_RAY_ADDRESS"  # set when the server starts: the page may send matrices to this Ray
state.VALUE_WIDGETS.update({PRESETS_KEY, VARY_KEY, BENCH_KEY, OPEN_KEY, RAY_KEY, THIS_KEY, "matrix.by"})


def cell_name(row: dict) -> str:
    """A row's model for people: the preset's title, or the model's own label."""
    return row.get("model") or (PRESETS[row["preset"]].title if row.get("preset") in PRESETS else row.get("preset", ""))


def parse(text: str) -> list[matrix.Axis]:
    return [matrix.parse_vary(line) for line in text.splitlines() if line.strip()]


def open_cell(row: dict) -> None:
    """Make a cell's model and configuration the page's experiment (runs as a callback, before the widgets)."""
    if row.get("preset"):
        spec = {"preset": row["preset"], "params": row["params"]}
    else:  # a row of the model that was on screen (its spec stays in the session, not in the rows' downloads)
        spec = ((st.session_state.get(RESULT_KEY) or {}).get("specs") or {}).get(row.get("model"))
    now = experiment.on_screen()
    experiment.apply(now.replace(model=spec if spec is not None else now.model,
                                 config=Config.make(row.get("device") or "cpu", row["env"], row["grappler"])))


def _on_select() -> None:
    points = (st.session_state.get("matrix.heatmap") or {}).get("selection", {}).get("points", [])
    rows = (st.session_state.get(RESULT_KEY) or {}).get("rows", [])
    for point in points:
        i = point.get("customdata")
        if isinstance(i, int) and 0 <= i < len(rows) and rows[i]["status"] == "ok":
            open_cell(rows[i])
            return


def _cell_words(rows: list[dict], i: int) -> str:
    return f"{cell_name(rows[i])} · {rows[i]['label']}"


def picked(rows: list[dict], value) -> dict | None:
    """The row the "Open a cell" picker names: its index, or the words the browser sends back for a choice made in
    an earlier matrix (Streamlit hands a choice missing from the options back as its text), matched by model and
    settings; None where this matrix has no such cell that ran."""
    ok = [i for i, r in enumerate(rows) if r["status"] == "ok"]
    if isinstance(value, int) and not isinstance(value, bool):
        return rows[value] if value in ok else None
    if isinstance(value, str):
        return next((rows[i] for i in ok if _cell_words(rows, i) == value), None)
    return None


def _open_picked() -> None:
    ss = st.session_state
    value = ss.get(OPEN_KEY)
    row = picked((ss.get(RESULT_KEY) or {}).get("rows", []), value)
    ss[MISSING_KEY] = None if row is not None else f"{value}" if value is not None else None
    if row is not None:
        open_cell(row)


def panel(engine, choice: Choice) -> None:
    st.caption("Models × every combination of the values you vary (env flags, Grappler switches, model "
               "parameters or `device`): which fuse, into what, and with timing how much faster. One warm worker "
               "per configuration runs all of its cells; cells already run come from the cache.")
    ss = st.session_state
    own = choice.preset is None  # an op chain, a layer stack or an imported model: a row of its own
    if PRESETS_KEY not in ss:
        ss[PRESETS_KEY] = [choice.preset.id] if choice.preset else []
    ss.setdefault(VARY_KEY, DEFAULT_VARY)
    ss.setdefault(THIS_KEY, True)
    c1, c2 = st.columns([1, 1])
    with c1:
        this = own and st.checkbox(f"This model: {choice.label}", key=THIS_KEY, persist_state=state.KEEP_HIDDEN,
                                   help="The model in the sidebar, as one row of the matrix")
        presets = st.multiselect("Presets" if not own else "Presets beside it", list(PRESETS), key=PRESETS_KEY,
                                 format_func=lambda p: PRESETS[p].title, persist_state=state.KEEP_HIDDEN)
    text = c2.text_area("Vary (one NAME=V1,V2 per line)", key=VARY_KEY, persist_state=state.KEEP_HIDDEN, height=90)
    c3, c4, c5 = st.columns([2, 1, 1], vertical_alignment="bottom")
    bench = c3.checkbox("Also time fused against unfused (20 calls per cell)", key=BENCH_KEY,
                        persist_state=state.KEEP_HIDDEN)
    run = c4.button("Run matrix", type="primary", key="matrix.run", width="stretch")
    stop = c5.button("Stop", key="matrix.stop", width="stretch")
    address = os.environ.get(RAY_ADDRESS)
    on_ray = bool(address) and st.checkbox(
        f"Run on Ray ({address})", key=RAY_KEY, persist_state=state.KEEP_HIDDEN,
        help="Each configuration runs as a Ray task on the cluster this server was started with; "
             "every cell names the node that ran it.")
    models = {choice.label: choice.spec} if this else {}
    if not presets and not models:
        st.info("Choose this model or a preset to make the matrix's rows.", icon=":material/table_rows:")
        return
    try:
        cells = matrix.plan(presets, parse(text), device=choice.config.device if choice.config else "cpu",
                            params={k: v for k, v in choice.model.p.items()
                                    if any(k in PRESETS[p].chain.param_names() for p in presets)} if presets else {},
                            models=models)
    except ExplorerError as exc:
        st.error(f"matrix: {exc}")
        return
    if stop and (ss.get(RESULT_KEY) or {}).get("running"):
        ss[RESULT_KEY] = dict(ss[RESULT_KEY], rows=[dict(r, status="stopped", reason="stopped before this cell ran")
                                                    if r["status"] == "planned" else r for r in ss[RESULT_KEY]["rows"]],
                              running=False)
    if run:
        _run(engine, cells, bench, address if on_ray else None, models)
    result = ss.get(RESULT_KEY)
    if not result:
        st.info(f"{len(cells)} cells planned: press **Run matrix**.")
        return
    show(result["rows"], engine, result.get("specs") or {})


def _run(engine, cells: list, bench: bool, ray_address: str | None = None, models: dict | None = None) -> None:
    bar = st.progress(0.0, text="starting")
    st.session_state[matrix_against.AGAINST_KEY] = {}  # timings against a base belong to the matrix they were of
    options = matrix.BenchOptions(reps=20, warmup=3, max_seconds=20) if bench else None

    def on_progress(p: dict) -> None:
        # Kept as it goes: a stop (a rerun) between cells leaves what was done.
        st.session_state[RESULT_KEY] = {"rows": matrix.rows(cells), "running": True, "specs": models or {}}
        bar.progress(min(max(p["fraction"], 0.0), 1.0), text=p.get("message", ""))

    if ray_address:
        from ..engine import ray_backend  # imports Ray only when a matrix goes there

        rows = ray_backend.run(engine, cells, ray_address, bench=options, on_progress=on_progress,
                               keep_connected=True)
    else:
        rows = matrix.run_local(engine, cells, bench=options, on_progress=on_progress)
    st.session_state[RESULT_KEY] = {"rows": rows, "running": False, "specs": models or {}}
    bar.empty()


def show(rows: list[dict], engine=None, specs: dict | None = None) -> None:
    timed = any(r.get("speedup") is not None for r in rows)
    by = (st.radio("Colour by", ["verdict", "speedup"], horizontal=True, key="matrix.by",
                   persist_state=state.KEEP_HIDDEN) if timed else "verdict")
    st.plotly_chart(charts.matrix_heatmap(rows, by=by), width="stretch", key="matrix.heatmap",
                    on_select=_on_select, selection_mode="points")
    st.caption("Click a cell to open its run in the explorer (the sidebar takes its model and configuration).")
    runnable = [i for i, r in enumerate(rows) if r["status"] == "ok"]
    if runnable:
        c1, c2 = st.columns([3, 1], vertical_alignment="bottom")
        c1.selectbox("Open a cell", runnable, key=OPEN_KEY, persist_state=state.KEEP_HIDDEN,
                     format_func=lambda i: _cell_words(rows, i) if isinstance(i, int) and 0 <= i < len(rows) else str(i))
        c2.button("Open in the explorer", key="matrix.open_button", on_click=_open_picked, width="stretch")
        if st.session_state.get(MISSING_KEY):
            st.warning(f"This matrix has no cell that ran as “{st.session_state[MISSING_KEY]}”: choose one of its "
                       "cells.", icon=":material/table_rows:")
    # The speedup before the result's words, which run long (the first failing condition): it stays in view.
    st.dataframe([{"model": cell_name(r), "settings": r["label"], "speedup": table.speedup_words(r),
                   "result": table.cell_words(r), "cached": r.get("cached"), "retried": table.retry_words(r)}
                  for r in rows],
                 hide_index=True, width="stretch",
                 column_config={"speedup": st.column_config.TextColumn(
                     help="Fused against unfused in this cell (95% interval); on a simulated GPU the predicted "
                          "speedup (a roofline on the data sheet, not measured); empty where nothing fused, so there "
                          "is nothing to compare"),
                     "result": st.column_config.TextColumn(width="large")})
    if engine is not None:
        matrix_against.panel(engine, rows, specs or {}, cell_name, _cell_words)
    d1, d2 = st.columns(2)
    d1.download_button("Matrix (CSV)", data=table.to_csv(rows), file_name="matrix.csv", mime="text/csv",
                       on_click="ignore", key="matrix.csv", icon=":material/download:")
    d2.download_button("Matrix (JSON)", data=table.to_json({"cells": rows}), file_name="matrix.json",
                       mime="application/json", on_click="ignore", key="matrix.json", icon=":material/download:")
