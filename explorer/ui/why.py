"""Why it fused (or not): the verdict, the remapper's preconditions checked on this model, and what to change.

Everything shown comes from ``result["explanation"]`` (``analysis.verdict.explain``) and the
result's warnings: the verdict is what TensorFlow did, the checklist is what the rules say, and
where the two disagree the page says so (the graph is what happened).
"""

from __future__ import annotations

import html

import streamlit as st

from ..model.flags import ENV_FLAGS
from ..model.sources import source_for_data
from . import experiment, report, state

VERDICTS = {
    # verdict -> (colour, icon, one line for a learner)
    "fused": ("green", ":material/check_circle:", "the whole pattern became one fused op"),
    "partly fused": ("orange", ":material/timelapse:", "part of the chain fused; the rest runs as separate ops"),
    "not fused": ("red", ":material/cancel:", "the chain runs op by op"),
    "decomposed": ("green", ":material/call_split:", "the remapper replaced the op with simpler primitives"),
    "not decomposed": ("red", ":material/cancel:", "the op stayed as it was"),
}
MARKS = {True: ("✓", "#1e8e3e", "holds"), False: ("✗", "#d93025", "fails"), None: ("?", "#b06000", "cannot tell here")}


def fusion_text(item: dict | None) -> str:
    if not item:
        return "no fused op"
    return f"{item['op']} [{', '.join(item['fused_ops'])}]" if item.get("fused_ops") else item["op"]


def fusions_text(items: list[dict]) -> str:
    return ", ".join(fusion_text(i) for i in items) if items else "no fused op"


# ---- one-click fixes ------------------------------------------------------------------------------

def setting_label(setting: dict, model_id: str, params: dict, gpu_here: bool) -> str | None:
    """A fix's setting as a button's words, or None where the page cannot apply it."""
    kind, name, value = setting["kind"], setting["name"], setting["value"]
    if kind == "env" and name in ENV_FLAGS and (value is None or value in ENV_FLAGS[name].values):
        return f"Set {name}={value}" if value is not None else f"Unset {name}"
    if kind == "grappler":
        return f"Switch {name} {value}" if value else f"Reset {name}"
    if kind == "device":
        if value == "gpu-sim":
            # There may be no GPU here, but the simulated one shows Grappler's GPU decision all the same.
            return "Try it on the simulated GPU"
        return None if value == "gpu" and not gpu_here else f"Run on the {value.upper()}"
    if kind == "param" and name in params and params[name] != value:
        return "Apply: " + (f"{name} {'on' if value else 'off'}" if isinstance(value, bool) else f"{name} → {value}")
    if kind == "chain" and model_id == "chain" and name in state.CHAIN_FIELDS:
        return f"Apply: {name} → {value}"
    return None


def fix_actions(changes: list[list[dict]], model_id: str, params: dict, gpu_here: bool = False) -> list[tuple[str, list]]:
    """Buttons for the explanation's changes: one per way to make it fuse that the page can apply."""
    actions = []
    for alternative in changes:
        labels = [setting_label(s, model_id, params, gpu_here) for s in alternative]
        if labels and all(labels):
            label = " + ".join(map(str, labels))
            if all(label != a[0] for a in actions):
                actions.append((label, list(alternative)))
    return actions


# ---- the panel ------------------------------------------------------------------------------------

def verdict_badge(explanation: dict | None) -> str:
    """':green-badge[fused]' for the summary line above the tabs ('' without an explanation)."""
    if not explanation:
        return ""
    colour, icon, _ = VERDICTS.get(explanation["verdict"], ("gray", ":material/help:", ""))
    return f":{colour}-badge[{icon} {explanation['verdict']}]"


def panel(result: dict, model_id: str | None = None, params: dict | None = None, gpu_here: bool = False) -> None:
    explanation = result.get("explanation")
    source = source_for_data(result.get("spec"))
    if not explanation and source is not None and not source.checklist:
        report.panel(result)  # a stack holds many chains: the whole-model report, not one pattern's checklist
        return
    if not explanation:
        st.info("No explanation for this result: the engine explains a model once it has its graph after Grappler.")
        return
    verdict = explanation["verdict"]
    colour, icon, meaning = VERDICTS.get(verdict, ("gray", ":material/help:", ""))
    with st.container(border=True):
        st.markdown(f"#### :{colour}[{icon} {verdict.capitalize()}]")
        st.markdown(f"**{explanation['pattern']}** — {meaning}.")
        lines = []
        if explanation.get("full"):
            lines.append(f"Where every condition holds, it becomes `{fusion_text(explanation['full'])}`.")
        if verdict != "decomposed":
            lines.append(f"TensorFlow made: `{fusions_text(explanation.get('observed') or [])}`.")
        if lines:
            st.markdown("  \n".join(lines))
        reasons = explanation.get("reasons") or []
        if reasons:
            st.markdown(f"**Why:** {'; '.join(reasons)}.")

    skipped = result.get("grappler_skipped")
    if skipped:
        st.error(
            "**TensorFlow silently skipped Grappler for this function.** Grappler failed on it and TensorFlow ran "
            "the function with no graph optimisation at all, without raising an error: the graph 'after Grappler' "
            "is the traced graph, and no fusion (nor constant folding, nor pruning) happened. This is a "
            f"TensorFlow defect, not something the model did wrong. TensorFlow logged: `{skipped.split('] ', 1)[-1]}`",
            icon=":material/report:")
    failed = result.get("remapper_failed")
    if failed:
        st.error(
            "**The remapper failed, and TensorFlow dropped what it did.** Grappler's remapper raised an error on this "
            "graph and TensorFlow went on without its changes, without raising one itself: no fusion it made was "
            "kept (the other passes' work was). This is a TensorFlow defect, not something the model did wrong. "
            f"TensorFlow logged: `{failed.split('] ', 1)[-1]}`", icon=":material/report:")
    if not explanation.get("agrees", True):
        st.warning(
            f"**The rules predicted {fusions_text(explanation.get('predicted') or [])}, but TensorFlow made "
            f"{fusions_text(explanation.get('observed') or [])}.** The graph is what happened; the checklist below "
            "is the explorer's reading of the remapper's rules, and it missed something here.",
            icon=":material/rule:")
    if result.get("simulated"):
        st.info("**Simulated GPU:** the checklist comes from the remapper's rules (read from its source); the graph "
                "comes from Grappler itself running on a virtual GPU. No kernel ran, so refusals that happen only at "
                "run time cannot show.", icon=":material/memory:")
    elif not explanation.get("certain", True):
        st.info("Some conditions cannot be checked on this machine (marked **?**): the rules cannot tell here.",
                icon=":material/help:")

    checks = explanation.get("checks") or []
    st.markdown("**The pattern's conditions, checked on this model and configuration**")
    st.markdown(checklist_html(checks), unsafe_allow_html=True)

    fixes = explanation.get("fixes") or []
    if fixes and verdict not in ("fused", "decomposed"):
        st.markdown("**To make it fuse:** " + "; ".join(f"`{f}`" for f in fixes))
        actions = fix_actions(explanation.get("changes") or [], model_id or "", params or {}, gpu_here)
        if actions:
            cols = st.columns(min(len(actions), 3))
            for i, (label, settings) in enumerate(actions):
                cols[i % len(cols)].button(label, key=f"why.fix.{i}", on_click=experiment.apply_settings, args=(settings,),
                                           icon=":material/build:", help="Changes the sidebar and runs again")
    notes = [n for n in explanation.get("notes") or []
             if not (result.get("simulated") and n.startswith("Simulated GPU:"))]  # said in the box above
    if notes:
        st.markdown("**Notes**\n" + "\n".join(f"- {n}" for n in notes))
    st.caption("The checklist is the explorer's reading of Grappler's remapper (TensorFlow 2.21), checked against "
               "what TensorFlow did for every preset on this kind of machine. The verdict always comes from the "
               "graph after Grappler.")


def checklist_html(checks: list[dict]) -> str:
    """The checklist as a small table: mark, condition, finding, and the fix for the failing ones."""
    rows = []
    for ch in checks:
        mark, colour, word = MARKS.get(ch["ok"], MARKS[None])
        fix = (f"<code>{html.escape(ch['fix'])}</code>" if ch.get("fix") and ch["ok"] is not True else "")
        shade = {False: "background:#fdecea", None: "background:#fff6dd"}.get(ch["ok"], "")
        rows.append(
            f"<tr style='{shade}'><td style='color:{colour};font-weight:700;font-size:1.1em;text-align:center' "
            f"title='{word}'>"
            f"{mark}</td><td><b>{html.escape(ch['name'])}</b></td><td>{html.escape(ch['detail'])}</td>"
            f"<td>{fix}</td></tr>")
    head = ("<tr><th></th><th>condition (read from the remapper's source)</th><th>on this model and configuration</th>"
            "<th>to make it pass</th></tr>")
    return ("<table style='width:100%;font-size:0.9rem;border-collapse:collapse'>" + head + "".join(rows)
            + "</table>")

