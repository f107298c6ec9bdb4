"""The agreement check on the page: the verdict above everything else when the fusion breaks the model or
changes its numbers, one quiet line when it agrees, and the failing node outlined on the graphs."""

from __future__ import annotations

import streamlit as st

from ..present import agreement as words


def banner(result: dict) -> None:
    """At the top of the main view: "The fusion breaks this model" (or changes its numbers), with what it rests
    on folded below; nothing when the outputs agree (``caption`` says so in the summary line)."""
    check = result.get("agreement")
    title = words.headline(check)
    if not title:
        return
    summary = check["summary"]
    st.error(f"**{title}.** {summary[:1].upper()}{summary[1:]}.", icon=":material/dangerous:")
    with st.expander("What this rests on: the run with the remapper off, the inputs, each output",
                     icon=":material/rule:"):
        st.markdown("\n".join(f"- {line.strip()}" for line in words.lines(check)[1:]))
        rows = [{"output": o["index"], "agrees": o["agree"], "shape": str(o["shape"]["reference"]),
                 "dtype": o["dtype"]["reference"], "max abs diff": o["max_abs"], "at": str(o["max_abs_at"]),
                 "max rel diff": o["max_rel"], "at ": str(o["max_rel_at"]), "tolerance": o["tolerance"]["rtol"],
                 "NaN (fused/ref)": f"{o['nan']['fused']}/{o['nan']['reference']}",
                 "Inf (fused/ref)": f"{o['inf']['fused']}/{o['inf']['reference']}"}
                for o in (check.get("comparison") or {}).get("outputs", [])]
        if rows:
            st.dataframe(rows, hide_index=True, width="stretch")


def caption(result: dict) -> str:
    """The summary line's words for a check that agrees (or was not made), e.g. "outputs agree unfused"."""
    check = result.get("agreement")
    if not check or words.headline(check):
        return ""
    if check["status"] == "agrees":
        shared = words.shared_fusions(result)
        return (f"Fused and unfused outputs agree ({check['summary']}, same seeded inputs)."
                + (f" {shared[:1].upper()}{shared[1:]}." if shared else ""))
    if check["status"] == "varies":
        return f"Fused against unfused: not comparable: {check['summary']}."
    return f"Fused against unfused: {words.STATUS_WORDS.get(check['status'], check['status'])}."


def focus(result: dict, wanted: dict | None) -> dict | None:
    """A lesson's focus, with the node TensorFlow's error named in the fused run outlined after Grappler."""
    node = words.failing_node(result.get("agreement"))
    if not node:
        return wanted
    merged = dict(wanted or {})
    for stage in ("optimized", "executed"):
        merged[stage] = list(merged.get(stage) or ()) + [node]
    return merged
