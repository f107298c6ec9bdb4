"""The Grappler's log tab: what TensorFlow itself logged while optimising the model."""

from __future__ import annotations

import streamlit as st

from ..model.graph import STAGES


def remapper_silence(result: dict) -> str:
    """What an empty remapper log means here: silence is not 'fused nothing' (some rewrites log no line)."""
    if result.get("grappler_skipped"):
        return ("(the remapper logged nothing, but it did rewrite the graph: TensorFlow then threw Grappler's "
                "work away, see 'Pass pipeline')")
    if result.get("fusions"):
        return "(the remapper logged nothing: its rewrites here log no line; the fusions are in 'Graphs before → after')"
    return "(the remapper logged nothing, and nothing fused)"


def panel(result: dict) -> None:
    grappler = result.get("grappler") or {}
    st.caption("What TensorFlow itself logged while optimising this model, with the remapper's and Grappler's "
               "verbose logging on (TF_CPP_VMODULE=remapper=2,meta_optimizer=4).")
    st.markdown("**The remapper's own lines**")
    lines = grappler.get("remapper_log") or []
    st.code("\n".join(lines) if lines else remapper_silence(result), language="text", wrap_lines=True)
    if lines and result.get("remapper_failed"):
        st.caption("None of these fusions were kept: the remapper then failed, and TensorFlow dropped everything it "
                   f"did. TensorFlow logged: {result['remapper_failed'].split('] ', 1)[-1]}")
    elif lines:
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
