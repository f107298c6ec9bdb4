"""What-if: pin a result, change one thing in the sidebar, and see both side by side: a summary of each, and
one stage of both graphs drawn together (coloured by what differs from the pinned one to the current one).

A pin keeps a small summary of the result (what fused, what executed), not the result itself, so
it survives the engine's cache; a benchmark of either side is looked up by its run key.
"""

from __future__ import annotations

from collections import Counter

import streamlit as st

from ..analysis import stats
from ..errors import ExplorerError
from ..model.flags import Config
from ..model.spec import resolve
from ..present import compare_text
from . import against, bench, cached, experiment, linked, state
from . import stages as stages_ui
from .sidebar import Choice, device_label
from .why import verdict_badge

STAGE_WORDS = {"traced": "traced", "optimized": "after Grappler", "executed": "executed"}  # the tabs' words
GRAPHS = "whatif.graphs"  # draw both configurations' graphs side by side
GRAPH_STAGE = "whatif.stage"  # which stage of each
state.DEFAULTS.update({GRAPHS: True, GRAPH_STAGE: "optimized"})


def summarize(engine, choice: Choice, result: dict) -> dict:
    """What the comparison shows of one result (plain data, kept in the session)."""
    stages = cached.stage_ops(result["key"], result)
    executed, optimized = stages.get("executed"), stages.get("optimized")
    fp = result.get("fingerprint") or {}
    return {
        "label": choice.label,
        "spec": choice.spec,
        "result_key": result["key"],
        "params": dict(choice.model.params),
        "model": choice.model.model_key(),  # a stack's is its whole JSON: two edits of one stack share its name
        "config": choice.config.to_dict(),
        "run_key": bench.run_key(engine, choice),
        "fusions": [f["describe"] for f in result.get("fusions") or []],
        "executed": _op_counts(executed["compute_ops"]) if executed is not None else "",
        # Op types after Grappler: where the devices part before any kernel runs (the GPU keeps
        # Pow(x, 3), the CPU's arithmetic optimiser writes Square(x)*x).
        "optimized_ops": optimized["compute_ops"] if optimized is not None else [],
        "nodes": {stage: s["nodes"] for stage, s in stages.items()},
        "onednn": fp.get("onednn"),
        "simulated": bool(result.get("simulated")),
        "explanation": {"verdict": (result.get("explanation") or {}).get("verdict")},
        "warnings": list(result.get("warnings") or []),
    }


def _op_counts(ops: list[str]) -> str:
    counts = Counter(ops)
    seen, parts = set(), []
    for op in ops:
        if op not in seen:
            seen.add(op)
            parts.append(op if counts[op] == 1 else f"{op}×{counts[op]}")
    return " ".join(parts) or "(nothing)"


def _pin(summary: dict) -> None:
    st.session_state[state.PINNED] = summary


def _unpin() -> None:
    st.session_state[state.PINNED] = None


def pin_button(engine, choice: Choice, result: dict) -> None:
    pinned = st.session_state.get(state.PINNED)
    summary = summarize(engine, choice, result)
    is_pinned = bool(pinned) and pinned["run_key"] == summary["run_key"]
    st.button("Pinned" if is_pinned else "Pin this result", key="whatif.pin", icon=":material/push_pin:",
              on_click=_pin, args=(summary,), disabled=is_pinned, width="stretch",
              help="Keep this result to compare with: then change one thing in the sidebar (a flag, the device, "
                   "a size, the dtype).")


def differences(pinned: dict, current: dict) -> list[str]:
    """What changed from the pinned result to the current one, in words."""
    out = []
    if pinned["model"] != current["model"]:
        edited = " (edited)" if pinned["label"] == current["label"] else ""  # one stack's name, another JSON
        out.append(f"model: {pinned['label']} → {current['label']}{edited}")
    else:
        for name in sorted(set(pinned["params"]) | set(current["params"])):
            a, b = pinned["params"].get(name), current["params"].get(name)
            if a != b:
                out.append(f"{name}: {a} → {b}")
    return out + compare_text.config_changes(pinned["config"], current["config"])


def panel(engine, choice: Choice, result: dict | None) -> None:
    pinned = st.session_state.get(state.PINNED)
    if not pinned:
        return
    with st.container(border=True):
        head, button = st.columns([5, 1], vertical_alignment="center")
        head.markdown("**What-if:** the pinned result against the current one")
        button.button("Unpin", key="whatif.unpin", on_click=_unpin, icon=":material/close:", width="stretch")
        if result is None or not choice.ready:
            st.caption("The current choice has not produced a result; the pinned one is kept.")
            _side(engine, st.container(), "Pinned", pinned, None)
            return
        current = summarize(engine, choice, result)
        changes = differences(pinned, current)
        if not changes:
            st.caption("Nothing differs yet. Change one thing in the sidebar, e.g. set **TF_ENABLE_ONEDNN_OPTS** "
                       "to 0, and both results appear here side by side.")
            return
        st.markdown("Changed: " + "; ".join(f"`{c}`" for c in changes)
                    + ("" if len(changes) == 1 else "  \n*More than one thing differs, so the effect of each is mixed.*"))
        left, right = st.columns(2)
        _side(engine, left, "Pinned", pinned, current)
        _side(engine, right, "Current", current, pinned)
        _graphs(engine, pinned, result)
        missing = [side for side in (pinned, current)
                   if not side.get("simulated") and _measured(engine, side) is None]
        if missing:
            if st.button("Benchmark both", key="whatif.bench", icon=":material/timer:",
                         help="Time fused against unfused for the pinned and the current configuration, "
                              "with the settings of the 'Fused vs unfused' tab."):
                _bench_both(engine, pinned, current)
        against.panel(engine, pinned, current)


def _side(engine, col, title: str, mine: dict, other: dict | None) -> None:
    """One side of the comparison; what differs from the other side is marked."""
    only_here = " :orange-badge[only here]" if other is not None else ""
    with col:
        badge = verdict_badge(mine.get("explanation")) if (mine.get("explanation") or {}).get("verdict") else ""
        st.markdown(f"**{title}** {badge} · {mine['label']} · {device_label(mine['config']['device'])} · oneDNN "
                    f"{'on' if mine.get('onednn') else 'off'}")
        fusions = mine["fusions"]
        others = set(other["fusions"]) if other is not None else set()
        if fusions:
            st.markdown("Fusions found:\n" + "\n".join(
                f"- `{f}`" + (only_here if other is not None and f not in others else "") for f in fusions))
        else:
            st.markdown("Fusions found: **none**")
        ops = mine.get("optimized_ops") or []
        if ops:
            only = sorted(set(ops) - set(other.get("optimized_ops") or ops)) if other is not None else []
            st.markdown(f"After Grappler: `{_op_counts(ops)}`"
                        + (" · only here: " + ", ".join(f"`{op}`" for op in only) if only else ""))
        differs = other is not None and other["executed"] != mine["executed"]
        executed = f"`{mine['executed']}`" if mine["executed"] else "none: a simulated GPU runs nothing"
        st.markdown(f"Executed ops: {executed}" + (" :orange-badge[differs]" if differs else ""))
        st.caption(" → ".join(f"{STAGE_WORDS.get(stage, stage)} {n} nodes" for stage, n in mine["nodes"].items()))
        measured = _measured(engine, mine)
        if measured is not None:
            sp = measured["summary"]["speedup"]
            st.markdown(f"Speedup of fusion: **{stats.format_speedup(sp)}** ({sp['verdict']})")
        elif mine.get("simulated"):
            st.caption("Speedup: none, a simulated GPU runs nothing.")
        else:
            st.caption("Speedup: not measured for this configuration yet.")


def _measured(engine, side: dict) -> dict | None:
    """A side's benchmark (fused against unfused, one process) this session or the server's cache holds."""
    if side.get("simulated"):
        return None
    try:
        return bench.measured(engine, resolve(side["spec"]), Config.from_dict(side["config"]))
    except ExplorerError:
        return None


def _graphs(engine, pinned: dict, result: dict) -> None:
    """The pinned and the current configuration's graphs side by side, one stage of each, coloured by what differs
    from the pinned one to the current one."""
    top, pick = st.columns([1, 2], vertical_alignment="center")
    if not top.toggle("Both graphs, side by side", key=GRAPHS,
                      help="One stage of each configuration, drawn as the graph tab draws before and after: "
                           "purple is fused in the current one, grey what it absorbed, red what it no longer has"):
        return
    stages = [s for s in STAGE_WORDS if s in (result.get("stages") or {})]
    if st.session_state.get(GRAPH_STAGE) not in stages:
        st.session_state[GRAPH_STAGE] = "optimized" if "optimized" in stages else stages[0]
    stage = pick.radio("Stage", stages, key=GRAPH_STAGE, horizontal=True, format_func=STAGE_WORDS.get,
                       label_visibility="collapsed")
    other = _pinned_result(engine, pinned)
    if other is None or stage not in (other.get("stages") or {}):
        st.caption(f"The pinned result's {STAGE_WORDS[stage]} graph is not at hand any more (the cache let it go); "
                   "pin it again to draw it.")
        return
    drawn = cached.results_pair(other["key"], result["key"], stage, experiment.on_screen().fold, other,
                                result)
    titles = (f"Pinned · {STAGE_WORDS[stage]} · {drawn['nodes']['before']} nodes",
              f"Current · {STAGE_WORDS[stage]} · {drawn['nodes']['after']} nodes")
    for col, title in zip(st.columns(2), titles):
        col.markdown(f"**{title}**")
    if not linked.show(drawn["before"], drawn["after"], stages_ui.groups_of(drawn), titles=titles):
        left, right = st.columns(2)
        left.graphviz_chart(drawn["before"], width="stretch")
        right.graphviz_chart(drawn["after"], width="stretch")


def _pinned_result(engine, pinned: dict) -> dict | None:
    """The pinned configuration's full result, when the engine has it at once (never runs anything)."""
    try:
        spec, config = resolve(pinned["spec"]), Config.from_dict(pinned["config"])
        if engine.is_ready("inspect", spec, config):
            return engine.inspect(spec, config)
    except ExplorerError:
        return None
    return None


def _bench_both(engine, pinned: dict, current: dict) -> None:
    form = experiment.on_screen().bench
    reps, warmup, seconds = form.reps, form.warmup, float(form.seconds)
    for side in (pinned, current):
        if _measured(engine, side) is not None or side.get("simulated"):
            continue
        label = f"Timing {side['label']} ({side['config']['device']}, {side['config']['env'] or 'default flags'})"
        if bench.measure(engine, resolve(side["spec"]), Config.from_dict(side["config"]), side["run_key"], label,
                         reps=reps, warmup=warmup, max_seconds=seconds) is None:
            return
    st.rerun()
