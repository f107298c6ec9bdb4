"""Why it fused (or not): the verdict, the remapper's preconditions checked on this model, and what to change.

Everything shown comes from ``result["explanation"]`` (``explorer.patterns.explain``) and the
result's warnings: the verdict is what TensorFlow did, the checklist is what the rules say, and
where the two disagree the page says so (the graph is what happened).
"""

from __future__ import annotations

import html
import re

import streamlit as st

from ..model.flags import ENV_FLAGS
from . import state

VERDICTS = {
    # verdict -> (colour, icon, one line for a learner)
    "fused": ("green", ":material/check_circle:", "the whole pattern became one fused op"),
    "partly fused": ("orange", ":material/timelapse:", "part of the chain fused; the rest runs as separate ops"),
    "not fused": ("red", ":material/cancel:", "the chain runs op by op"),
    "decomposed": ("green", ":material/call_split:", "the remapper replaced the op with simpler primitives"),
    "not decomposed": ("red", ":material/cancel:", "the op stayed as it was"),
}
MARKS = {True: ("✓", "#1e8e3e", "holds"), False: ("✗", "#d93025", "fails"), None: ("?", "#b06000", "cannot tell here")}
SKIPPED = "Ignoring multi-device function optimization failure"


def fusion_text(item: dict | None) -> str:
    if not item:
        return "no fused op"
    return f"{item['op']} [{', '.join(item['fused_ops'])}]" if item.get("fused_ops") else item["op"]


def fusions_text(items: list[dict]) -> str:
    return ", ".join(fusion_text(i) for i in items) if items else "no fused op"


def unique_checks(checks: list[dict]) -> list[dict]:
    """The checklist without repeats (a condition checked for two parts of the chain shows once)."""
    seen, out = set(), []
    for ch in checks:
        key = (ch["name"], ch["detail"], ch["ok"])
        if key not in seen:
            seen.add(key)
            out.append(ch)
    return out


def own_why(explanation: dict) -> str:
    """The explanation's 'why' without its note on a disagreement (the panel shows that on its own)."""
    why = explanation.get("why") or ""
    why = why.split(" — note: ", 1)[0]
    parts = list(dict.fromkeys(p.strip() for p in why.split("; ") if p.strip()))
    return "; ".join(parts)


def skipped_grappler(result: dict) -> str | None:
    """The log line by which TensorFlow admits it ran the function with no Grappler at all, if any."""
    lines = (result.get("grappler") or {}).get("notable") or []
    hit = next((ln for ln in lines if SKIPPED in ln), None)
    if hit:
        return hit
    return next((w for w in result.get("warnings") or [] if SKIPPED in w), None)


# ---- one-click fixes ------------------------------------------------------------------------------

_ENV = re.compile(r"set (TF_[A-Z_]+)=(\S+)")
_KNOBS = (  # fix wording -> (parameter, value)
    ("remove the second consumer", "second_consumer", False),
    ("do not return the intermediate", "return_intermediate", "none"),
    ("use inference mode", "training", False),
    ("use float32", "dtype", "float32"),
    ("use NHWC", "data_format", "NHWC"),
)


def fix_actions(fix: str, model_id: str, params: dict) -> list[tuple[str, dict]]:
    """Buttons a fix can become: (label, session-state changes), for flags, the device and the playground knobs."""
    actions = []
    for name, value in _ENV.findall(fix):
        value = value.rstrip(".,;)")
        flag = ENV_FLAGS.get(name)
        if flag is not None and value in flag.values:
            actions.append((f"Set {name}={value}", {state.env_key(name): value}))
    if "run on a GPU" in fix:
        # There may be no GPU here, but the simulated one shows Grappler's GPU decision all the same.
        actions.append(("Try it on the simulated GPU", {state.DEVICE: "gpu-sim"}))
    for words, param, value in _KNOBS:
        if words in fix and param in params and params[param] != value:
            label = f"{param} → {value}" if not isinstance(value, bool) else f"{param} off"
            actions.append((f"Apply: {label}", {state.param_key(model_id, param): value}))
    return actions


def _apply(changes: dict) -> None:
    for key, value in changes.items():
        st.session_state[key] = value


# ---- the panel ------------------------------------------------------------------------------------

def verdict_badge(explanation: dict | None) -> str:
    """':green-badge[fused]' for the summary line above the tabs ('' without an explanation)."""
    if not explanation:
        return ""
    colour, icon, _ = VERDICTS.get(explanation["verdict"], ("gray", ":material/help:", ""))
    return f":{colour}-badge[{icon} {explanation['verdict']}]"


def panel(result: dict, model_id: str | None = None, params: dict | None = None) -> None:
    explanation = result.get("explanation")
    if not explanation and "stack" in (result.get("spec") or {}):
        st.info("The checklist here covers one pattern at a time: the presets and op chains, whose pattern is "
                "known. A layer stack holds many chains; a whole-model report of its fusions and near-misses "
                "comes later. Meanwhile 'Graphs before → after' shows every fusion Grappler made in it, and "
                "the Grappler log why the remapper skipped a chain.", icon=":material/info:")
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
        why = own_why(explanation)
        if why:
            st.markdown(f"**Why:** {why}.")

    skipped = skipped_grappler(result)
    if skipped:
        st.error(
            "**TensorFlow silently skipped Grappler for this function.** Grappler failed on it and TensorFlow ran "
            "the function with no graph optimisation at all, without raising an error: the graph 'after Grappler' "
            "is the traced graph, and no fusion (nor constant folding, nor pruning) happened. This is a "
            f"TensorFlow defect, not something the model did wrong. TensorFlow logged: `{skipped.split('] ', 1)[-1]}`",
            icon=":material/report:")
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

    checks = unique_checks(explanation.get("checks") or [])
    st.markdown("**The pattern's conditions, checked on this model and configuration**")
    st.markdown(checklist_html(checks), unsafe_allow_html=True)

    fixes = list(dict.fromkeys(explanation.get("fixes") or []))
    if fixes and verdict not in ("fused", "decomposed"):
        st.markdown("**To make it fuse:** " + "; ".join(f"`{f}`" for f in fixes))
        actions = [a for f in fixes for a in fix_actions(f, model_id or "", params or {})]
        if actions:
            cols = st.columns(min(len(actions), 3))
            for i, (label, changes) in enumerate(dict((a[0], a) for a in actions).values()):
                cols[i % len(cols)].button(label, key=f"why.fix.{i}", on_click=_apply, args=(changes,),
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
    head = ("<tr><th></th><th>condition</th><th>on this model and configuration</th>"
            "<th>to make it pass</th></tr>")
    return ("<table style='width:100%;font-size:0.9rem;border-collapse:collapse'>" + head + "".join(rows)
            + "</table>")

