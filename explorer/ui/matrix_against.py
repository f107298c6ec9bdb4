"""The what-if matrix's A against B: a row's configurations timed against a chosen base cell of the same model,
each as served (``Engine.compare``: a fresh worker per side and round, the speedup with its interval)."""

from __future__ import annotations

import streamlit as st

from ..errors import ExplorerError
from ..model.devices import is_simulated
from ..model.flags import Config
from ..present import compare_text
from . import frame, state

BASE_KEY = "matrix.base"
AGAINST_KEY = "matrix.against"  # {(base index, cell index): compare result} of the matrix on screen
REPS = 20
state.VALUE_WIDGETS.add(BASE_KEY)


def _side(row: dict, specs: dict) -> tuple[dict, Config] | None:
    spec = {"preset": row["preset"], "params": row["params"]} if row.get("preset") else specs.get(row.get("model"))
    if spec is None or is_simulated(str(row.get("device") or "cpu")):
        return None
    return spec, Config.make(row.get("device") or "cpu", row.get("env") or {}, row.get("grappler") or {})


def panel(engine, rows: list[dict], specs: dict, name, words) -> None:
    """``name(row)``: the row's model for people; ``words(rows, i)``: a cell in words."""
    ok = [i for i, r in enumerate(rows) if r["status"] == "ok" and _side(r, specs) is not None]
    if len(ok) < 2:
        return
    st.markdown("**Against a base**: each configuration of the base's model timed against it, as served")
    left, right = st.columns([3, 1], vertical_alignment="bottom")
    base = left.selectbox("Base (A)", ok, key=BASE_KEY, format_func=lambda i: words(rows, i)
                          if isinstance(i, int) and 0 <= i < len(rows) else str(i), persist_state=state.KEEP_HIDDEN)
    if not isinstance(base, int) or base not in ok:
        return
    others = [i for i in ok if i != base and name(rows[i]) == name(rows[base])]
    rounds = state.form_processes()
    store = st.session_state.setdefault(AGAINST_KEY, {})
    if right.button(f"Time {len(others)} against it", key="matrix.against_button", icon=":material/compare_arrows:",
                    width="stretch", disabled=not others,
                    help=f"Each cell of the same model (B) against the base (A): {rounds} rounds, a fresh worker "
                         f"process per side, {REPS} calls a side"):
        a = _side(rows[base], specs)
        bar = st.progress(0.0, text="queued")
        for n, i in enumerate(others):
            bar.progress(n / len(others), text=f"{words(rows, i)} against the base")
            try:
                store[(base, i)] = engine.compare(*a, *_side(rows[i], specs), processes=rounds, reps=REPS, warmup=3,
                                                  max_seconds=30.0)
            except ExplorerError as exc:
                frame.show_error(exc, f"{words(rows, i)} could not be timed against the base")
        bar.empty()
    timed = [(i, store[(base, i)]) for i in others if (base, i) in store]
    if timed:
        st.dataframe([{"B": rows[i]["label"], "A (base)": rows[base]["label"],
                       "B against A": compare_text.speedup_words(r["speedup"]), "verdict": r["speedup"]["verdict"],
                       "A median (ms)": round(r["summary"]["A"]["median_ms"], 4),
                       "B median (ms)": round(r["summary"]["B"]["median_ms"], 4)} for i, r in timed],
                     hide_index=True, width="stretch")
        st.caption(f"{compare_text.how(timed[0][1])}; median(A) ÷ median(B): above 1, B is faster.")
