"""The sidebar: build a model, pick the device, set environment flags and Grappler switches.

Everything the user picks is checked here, with the engine's own rules (``spec.resolve``,
``Config.make``), before anything runs: a wrong combination is explained right under the widget
group it comes from, and ``Choice.problems`` tells the page not to run.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import streamlit as st

from ..errors import SpecError
from ..model.catalog import PRESETS, Preset
from ..model.devices import DEFAULT_PROFILE, DEVICES, GPU_PROFILES, Device, is_simulated, no_gpu_words
from ..model.flags import ENV_FLAGS, GRAPPLER_SWITCHES, UNSET_WORDS, Config
from ..model.hooks import hook
from ..model.sources import Source, source_for_data, sources
from ..model.spec import resolve
from ..present.machine import gpu_words
from . import experiment, state

DEVICE_LABELS = {"cpu": "CPU", "gpu": "GPU", "gpu-sim": "GPU, simulated"}
FLAG_DEVICE = {"cpu": "matters on CPU", "gpu": "matters on GPU (read from TensorFlow 2.21's source)",
               "any": "matters on any device (read from TensorFlow 2.21's source)"}


class Waiting(str):
    """A problem that is no error: nothing to run yet, and what to do (upload a model first). The page shows it as
    guidance rather than as a red error."""


@dataclass
class Choice:
    """What the sidebar adds up to: the spec and configuration to run, or why not."""

    spec: dict  # as the engine and the CLI take it: one model source's JSON ({"preset": ..., "params": ...})
    config: Config | None
    model: object = None  # the resolved spec (model.spec.resolve), when valid
    problems: list[str] = field(default_factory=list)  # readable sentences; nothing runs while any

    @property
    def ready(self) -> bool:
        return self.model is not None and self.config is not None and not self.problems

    @property
    def source(self) -> Source | None:
        """The model source chosen (model.sources): what the page offers for it."""
        return source_for_data(self.spec)

    @property
    def preset(self) -> Preset | None:
        return PRESETS.get((self.spec or {}).get("preset"))

    @property
    def label(self) -> str:
        if self.preset:
            return self.preset.title_for(self.model.p if self.model else {})
        return self.model.label() if self.model else "custom model"


def device_label(device: str) -> str:
    """'CPU', 'GPU' or 'GPU, simulated (ampere)' for a Config's device string."""
    d = Device.of(device)
    return DEVICE_LABELS.get(d.kind, d.kind) + (f" ({d.profile})" if d.profile else "")


def no_gpu_reason(fingerprint: dict | None) -> str | None:
    """Why GPU cannot be chosen here, or None when TensorFlow sees a GPU (or we cannot tell)."""
    if not fingerprint or fingerprint.get("gpus"):
        return None
    seen = ", ".join(d.rsplit("/", 1)[-1].replace("physical_device:", "") for d in fingerprint.get("devices", [])) or "no devices"
    driver = bool(fingerprint.get("nvidia_driver"))
    build = (f"It is a CUDA build (CUDA {fingerprint.get('cuda_version') or '?'}, cuDNN "
             f"{fingerprint.get('cudnn_version') or '?'})" + ("." if driver else ", so a GPU would be used if there were one.")
             if fingerprint.get("cuda_build") else "It is a CPU-only build of TensorFlow.")
    simulated = " or a simulated GPU (graphs only)" if "gpu-sim" in DEVICES else ""
    elsewhere = "" if driver else ", or run the explorer on a machine with an NVIDIA GPU"
    return (f"No GPU for TensorFlow here: TensorFlow {fingerprint.get('tensorflow', '')} sees only {seen}. "
            f"{no_gpu_words(driver)} {build} Choose CPU{simulated}{elsewhere}.")


def render(fingerprint: dict | None) -> Choice:
    with st.sidebar:
        st.header("Model")
        spec, model_problems = _model()
        model = None
        if not model_problems:
            try:
                model = resolve(spec)
            except SpecError as exc:
                st.error(str(exc))
                model_problems.append(str(exc))
        st.header("Device")
        config, config_problems = _configuration(fingerprint)
    return Choice(spec, config, model if not model_problems else None, model_problems + config_problems)


def _model() -> tuple[dict, list[str]]:
    """The model sources the page offers (model.sources: those with a ``page`` input), one at a time."""
    offered = {sid: source for sid, source in sources().items() if source.page}
    mode = st.radio("Start from", list(offered), key=state.MODE, horizontal=True,
                    format_func=lambda sid: offered[sid].label,
                    help="\n\n".join(f"**{s.label}**: {s.help}." for s in offered.values()))
    data, problems = hook(offered[mode].page)()
    return data or {mode: None}, problems


def _configuration(fingerprint: dict | None) -> tuple[Config | None, list[str]]:
    problems: list[str] = []
    gpu_reason = no_gpu_reason(fingerprint)
    device = st.radio(
        "Device", list(DEVICES), key=state.DEVICE, horizontal=True, label_visibility="collapsed",
        format_func=lambda d: DEVICE_LABELS.get(d, d) + (" (none here)" if d == "gpu" and gpu_reason else ""),
        help="\n\n".join(f"**{DEVICE_LABELS.get(d, d)}**: {text}" for d, text in DEVICES.items()),
    )
    if device == "gpu" and gpu_reason:
        st.error(gpu_reason)
        problems.append(gpu_reason)
    elif is_simulated(device):
        profiles = GPU_PROFILES
        if st.session_state.get(state.GPU_PROFILE) not in profiles:
            st.session_state[state.GPU_PROFILE] = DEFAULT_PROFILE
        profile = st.selectbox("GPU profile", list(profiles), key=state.GPU_PROFILE,
                               format_func=lambda p: profiles[p].get("label", p))
        st.caption(f"Simulated: Grappler's real GPU decisions on a virtual {profiles[profile].get('model', profile)}. "
                   "Nothing runs, so times are predicted from the data sheet (a roofline), never measured. "
                   f"{profiles[profile].get('notes', '')}")
    elif device == "gpu" and fingerprint and fingerprint.get("gpus"):
        st.caption(f"GPU:0 {gpu_words(fingerprint['gpus'][0])} · CUDA {fingerprint.get('cuda_version') or '?'}, "
                   f"cuDNN {fingerprint.get('cudnn_version') or '?'} · TF32 {'on' if fingerprint.get('tf32') else 'off'}")
    elif fingerprint:
        st.caption(f"TensorFlow {fingerprint.get('tensorflow', '?')} · {fingerprint.get('cpu_model', 'CPU')}, "
                   f"{fingerprint.get('cpu_count', '?')} cores · "
                   + (f"{len(fingerprint['gpus'])} GPU(s)" if fingerprint.get("gpus") else "no GPU"))

    st.header("Flags")
    st.caption("Environment variables of the TensorFlow worker; each set of values gets its own process.")
    gpu_flags = [f for f in ENV_FLAGS.values() if f.device == "gpu"]
    for flag in ENV_FLAGS.values():
        if flag.device != "gpu":
            _flag(flag)
    with st.expander(f"GPU flags ({len(gpu_flags)})", expanded=device.startswith("gpu")):
        for flag in gpu_flags:
            _flag(flag)
    with st.expander(f"Grappler switches ({len(GRAPPLER_SWITCHES)})"):
        st.caption("Passes of Grappler, TensorFlow's graph optimiser. Turning `remapping` off is the unfused graph.")
        for switch in GRAPPLER_SWITCHES.values():
            st.radio(f"`{switch.name}`: {switch.meaning}", (state.UNSET, "on", "off"), key=state.switch_key(switch.name),
                     horizontal=True, format_func=lambda v: UNSET_WORDS["grappler"] if v == state.UNSET else v)
    try:
        config = experiment.config()  # the request is the page's experiment's (the widgets above hold it)
    except SpecError as exc:  # not reachable through the widgets; a test may set a bad value
        st.error(str(exc))
        return None, problems + [str(exc)]
    return config, problems


def _flag(flag) -> None:
    options = (state.UNSET, *flag.values)
    widget = st.radio if all(len(v) <= 3 for v in flag.values) else st.selectbox  # long values read better in a list
    kwargs = {"horizontal": True} if widget is st.radio else {}
    widget(flag.name, options, key=state.env_key(flag.name), format_func=lambda v: UNSET_WORDS["env"] if v == state.UNSET else v,
                   help=f"{flag.meaning}\n\nUnset: {flag.default_note}.", **kwargs)
    st.caption(f"{flag.meaning} *{FLAG_DEVICE[flag.device]}; unset: {flag.default_note}.*")
