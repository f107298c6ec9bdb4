"""The page's experiment (``model.experiment``): the one on screen, and the one way to change it.

``current()`` reads the experiment the sidebar and the tabs show; ``apply(exp)`` makes ``exp`` the page's experiment.
Every door that changes the page as a whole goes through ``apply``: a link (``link.bind``), a lesson's step, an opened
experiment file, a matrix cell's "Open in the explorer" and a why-not fix button (``apply_settings``: the experiment on
screen with a fix's settings changed). Call it before the sidebar draws: at the start of a run, or in a callback.
"""

from __future__ import annotations

import streamlit as st

from ..errors import SpecError
from ..model.devices import GPU_PROFILES, Device
from ..model.experiment import Bench, Experiment, canonical_model, server_default
from ..model.flags import ENV_FLAGS, GRAPPLER_SWITCHES, Config
from ..model.hooks import hook
from . import state


def apply(exp: Experiment) -> None:
    """Put ``exp`` into the session state the sidebar and the tabs read. The model is loaded only when it is not the
    one on screen (loading it again would rewrite a stack's text as typed, or ask for an upload)."""
    ss = st.session_state
    if ss.get(state.EXPERIMENT) is None or ss[state.EXPERIMENT].model != exp.model:
        if exp.source.page_load:
            hook(exp.source.page_load)(exp.model)
        else:
            ss[state.MODE] = exp.source.id
    ss.update(state.experiment_keys(exp))


def apply_settings(settings: list[dict]) -> None:
    """A fix's settings (``{"kind", "name", "value"}``: an env flag, a Grappler switch, the device, a model parameter
    or an op chain's field) applied to the experiment on screen. A simulated GPU keeps the profile last chosen."""
    exp = on_screen()
    for setting in settings:
        value = setting["value"]
        if setting["kind"] == "device" and value == "gpu-sim":
            value = str(Device("gpu-sim", st.session_state.get(state.GPU_PROFILE)
                               if st.session_state.get(state.GPU_PROFILE) in GPU_PROFILES else None))
        exp = exp.with_setting(setting["kind"], setting["name"], value)
    apply(exp)


def on_screen() -> Experiment:
    """The experiment on screen: the one the last ``link.sync`` made (in a callback, the last run's; a fragment's view
    changes included). ``current`` reads the widgets only there."""
    return st.session_state.get(state.EXPERIMENT) or current()


def config() -> Config:
    """The configuration the sidebar's widgets hold; SpecError when one holds a value no Config takes."""
    ss = st.session_state
    kind = ss.get(state.DEVICE, "cpu")
    device = Device(kind, ss.get(state.GPU_PROFILE) if kind == "gpu-sim" else None)
    return Config.make(str(device), *({n: ss.get(key(n)) for n in names if ss.get(key(n), state.UNSET) != state.UNSET}
                                      for names, key in ((ENV_FLAGS, state.env_key),
                                                         (GRAPPLER_SWITCHES, state.switch_key))))


def current(spec: dict | None = None, config_: Config | None = None) -> Experiment:
    """The experiment on screen: the model and configuration the sidebar built (``spec``, ``config_``; else the last
    model it built, and the widgets' configuration) and the rest of the session state. A part that cannot be read
    (a test's odd value) keeps the server's default."""
    ss = st.session_state
    default = server_default()
    spec = spec if spec is not None else ss.get(state.MODEL_SPEC)
    try:
        model = canonical_model(spec) if spec else default.model
    except SpecError:
        model = {ss.get(state.MODE, "preset"): None}  # the source chosen; what is in it cannot run
    try:
        config_ = config_ or config()
    except SpecError:
        config_ = default.config
    processes = int(ss.get(state.BENCH_PROCESSES) or 1) if ss.get(state.BENCH_MODE) == "repeatable" else 1
    try:
        bench = Bench(*(Bench.checked(k, v) for k, v in (
            ("reps", ss.get(state.BENCH_REPS)), ("warmup", ss.get(state.BENCH_WARMUP)),
            ("seconds", ss.get(state.BENCH_SECONDS)), ("processes", processes))))
    except SpecError:
        bench = default.bench
    parts = {"tab": ss.get(state.TAB), "stages": ss.get(state.STAGE_PAIR), "fold": bool(ss.get(state.FOLD)),
             "graph_view": ss.get(state.GRAPH_VIEW) or default.graph_view, "present": bool(ss.get(state.PRESENT)),
             "lesson": ss.get(state.LESSON), "step": ss.get(state.LESSON_STEP)}
    try:
        return Experiment(model, config_, "both" if ss.get(state.XLA_ON) else "grappler", bench=bench, **parts)
    except SpecError:
        return Experiment(model, config_, "both" if ss.get(state.XLA_ON) else "grappler", bench=bench)
