"""A setting-fix measured in time: the model under a verified setting (B) against the current setting (A).

The fusion report offers a setting only once the engine has run it and seen the chain fuse
(``engine.fix_check``); fusing is not the goal, speed is. "Time it" asks the engine for A against B
(``Engine.compare``: each side as served, a fresh worker per side and round, the speedup with its interval),
and says plainly when a setting that fuses is not faster here.
"""

from __future__ import annotations

import streamlit as st

from ..engine.fix_check import configured
from ..errors import ExplorerError
from ..present import compare_text
from . import frame, state

KIND = "compare"
LIMIT = 3  # distinct settings offered a timing


def verified_settings(report: dict) -> list[list[dict]]:
    """The distinct settings that fused a near-miss here, the most near-misses first."""
    counts: dict[str, tuple[int, list[dict]]] = {}
    for miss in report.get("near_misses") or []:
        if miss.get("verified") is True and miss.get("changes"):
            settings = miss["changes"][0]
            key = repr(settings)
            counts[key] = (counts.get(key, (0, settings))[0] + 1, settings)
    return [s for _, s in sorted(counts.values(), key=lambda pair: -pair[0])][:LIMIT]


def words(settings: list[dict]) -> str:
    return ", ".join(f"{s['name']}={s['value']}" if s["kind"] in ("env", "grappler") else f"device {s['value']}"
                     for s in settings)


def outcome(sp: dict) -> str:
    """What the timing says of a setting that fuses, only as far as its interval goes."""
    code = sp.get("verdict_code")
    quick = " in this one process" if sp.get("mode", "").startswith("quick") else ""
    if code == "faster":
        return f"it fuses and it is faster here{quick}"
    if code == "slower":
        return f"it fuses, but the model is slower with it here{quick}"
    if code == "same":
        return "it fuses, but it is not measurably faster here"
    return "too few samples to tell"


def panel(engine, result: dict, choice, key: str) -> None:
    if engine is None or choice is None or not choice.ready or choice.config is None:
        return
    candidates = [(s, configured(choice.config, s)) for s in verified_settings(result.get("report") or {})]
    candidates = [(s, target) for s, target in candidates if target is not None and target != choice.config]
    if not candidates:
        return
    rounds, reps = state.form_processes(), 30
    st.markdown("**Is it faster?** A setting that fuses, timed against the current setting on this model")
    for i, (settings, target) in enumerate(candidates):
        extra = {"against": choice.config.to_dict(), "processes": rounds, "reps": reps}
        left, right = st.columns([3, 1], vertical_alignment="center")
        if right.button(f"Time it ({rounds} rounds)", key=f"{key}.time.{i}", icon=":material/timer:",
                        width="stretch", help="The model with this setting (B) against the current setting (A), each "
                                              "as served: every round a fresh worker process per side"):
            with st.spinner(f"Timing {words(settings)} against the current setting, {rounds} rounds…"):
                try:
                    timed = engine.compare(choice.spec, choice.config, choice.spec, target, processes=rounds,
                                           reps=reps, warmup=3, max_seconds=30.0)
                except ExplorerError as exc:
                    frame.show_error(exc, "The setting could not be timed")
                    continue
            engine.store(KIND, choice.spec, target, timed, extra)
        timed = engine.stored(KIND, choice.spec, target, extra)
        if timed is None:
            left.markdown(f"`{words(settings)}`: fuses here; not timed yet")
            continue
        sp = timed["speedup"]
        left.markdown(f"`{words(settings)}`: **{compare_text.speedup_words(sp)}** against the current setting, "
                      f"{outcome(sp)} (median {timed['summary']['B']['median_ms']:.3f} ms against "
                      f"{timed['summary']['A']['median_ms']:.3f} ms; {compare_text.how(timed)})")
