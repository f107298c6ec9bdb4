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
from ..model.chain import (
    ACTIVATION_LABELS,
    ACTIVATIONS,
    BIASES,
    CONTRACTIONS,
    NORMS,
    Chain,
)
from ..model.devices import DEVICES, GPU_PROFILES, is_simulated, no_gpu_words
from ..model.flags import ENV_FLAGS, GRAPPLER_SWITCHES, Config
from ..model.spec import (
    MAX_DIM,
    MAX_MODEL_BYTES,
    MAX_TENSOR_BYTES,
    PARAMS,
    ModelSpec,
    resolve,
)
from ..model.stack import StackSpec
from ..present.machine import gpu_words
from . import stack_editor, state

DEVICE_LABELS = {"cpu": "CPU", "gpu": "GPU", "gpu-sim": "GPU, simulated"}
FLAG_DEVICE = {"cpu": "matters on CPU", "gpu": "matters on GPU", "any": "matters on any device"}
CONTRACTION_LABELS = {"MatMul": "MatMul", "BatchMatMulV2": "BatchMatMul", "Conv2D": "Conv2D",
                      "DepthwiseConv2dNative": "DepthwiseConv2D", "Conv3D": "Conv3D",
                      "none": "none (start at the norm)"}
PARAM_LABELS = {
    "m": "m (rows)", "k": "k (inner)", "n": "n (outputs)", "batch": "batch", "height": "height", "width": "width",
    "in_channels": "in channels", "out_channels": "out channels", "channels": "channels",
    "multiplier": "multiplier", "depth": "depth", "buckets": "hash buckets", "filter_size": "filter size", "dtype": "dtype", "data_format": "data format",
    "training": "training mode", "return_intermediate": "also return", "second_consumer": "second consumer",
}


@dataclass
class Choice:
    """What the sidebar adds up to: the spec and configuration to run, or why not."""

    spec: dict  # as the engine and the CLI take it: {"preset", "params"}, {"chain", "params"} or {"stack"}
    config: Config | None
    model: ModelSpec | StackSpec | None = None  # the resolved spec, when valid
    preset: Preset | None = None
    problems: list[str] = field(default_factory=list)  # readable sentences; nothing runs while any

    @property
    def ready(self) -> bool:
        return self.model is not None and self.config is not None and not self.problems

    @property
    def imported(self) -> bool:
        return "import" in (self.spec or {})

    @property
    def label(self) -> str:
        if self.imported:
            return self.model.label() if self.model else "imported model"
        return self.preset.title if self.preset else (self.model.label() if self.model else "custom model")


def device_label(device: str) -> str:
    """'CPU', 'GPU' or 'GPU, simulated (ampere)' for a Config's device string."""
    base, _, profile = device.partition(":")
    return DEVICE_LABELS.get(base, base) + (f" ({profile})" if profile else "")


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
        spec, preset, model_problems = _model()
        model = None
        if not model_problems:
            try:
                model = resolve(spec)
            except SpecError as exc:
                st.error(str(exc))
                model_problems.append(str(exc))
        st.header("Device")
        config, config_problems = _configuration(fingerprint)
    return Choice(spec, config, model if not model_problems else None, preset, model_problems + config_problems)


def _model() -> tuple[dict, Preset | None, list[str]]:
    mode = st.radio("Start from", ("preset", "chain", "stack", "import"), key=state.MODE, horizontal=True,
                    format_func={"preset": "a preset", "chain": "my own op chain", "stack": "a layer stack",
                                 "import": "an imported model"}.get,
                    help="A preset is a ready model for one fusion pattern; an op chain is built from parts; "
                         "a layer stack is a small Keras model (ResNet, MobileNet and Transformer blocks ready); "
                         "an imported model is your own file.")
    problems: list[str] = []
    if mode == "stack":
        spec, problems = stack_editor.editor()
        return spec, None, problems
    if mode == "import":
        from . import upload

        spec, problems = upload.model_input()
        return spec or {"import": None}, None, problems
    if mode == "preset":
        preset_id = st.selectbox("Preset", list(PRESETS), key=state.PRESET, format_func=lambda p: PRESETS[p].title)
        preset = PRESETS[preset_id]
        st.caption(preset.explanation)
        st.caption(f"**Fuses to** `{preset.fused_op}`  \n**Where:** {preset.where}")
        chain, model_id, spec = preset.chain, preset.id, {"preset": preset.id}
    else:
        preset = None
        chain = _chain_builder()
        model_id = "chain"
        spec = {"chain": chain.to_dict()}
        try:
            chain.check()
        except SpecError as exc:
            st.error(str(exc))
            problems.append(str(exc))
    spec["params"] = _params(chain, model_id)
    return spec, preset, problems


def _chain_builder() -> Chain:
    st.caption("Compose contraction → bias → normalisation → activation; the remapper looks for such chains.")
    c1, c2 = st.columns(2)
    contraction = c1.selectbox("Contraction", CONTRACTIONS, key=state.chain_key("contraction"),
                               format_func=lambda c: CONTRACTION_LABELS.get(c, c))
    bias = c2.selectbox("Bias", BIASES, key=state.chain_key("bias"),
                        help="BiasAdd is what the remapper fuses; Add with a 1-D bias fuses too on most paths.")
    norm = c1.selectbox("Normalisation", NORMS, key=state.chain_key("norm"),
                        help="FusedBatchNorm (inference unless 'training mode' is on); needs a 4-D tensor.")
    activation = c2.selectbox("Activation", ACTIVATIONS, key=state.chain_key("activation"),
                              format_func=lambda a: ACTIVATION_LABELS.get(a, a))
    squeeze = c1.checkbox("Squeeze", key=state.chain_key("squeeze"),
                          help="Squeeze the width dimension between Conv2D and the bias (Conv2D + Squeeze + BiasAdd).")
    side_add = c2.checkbox("Side add", key=state.chain_key("side_add"),
                           help="Add a second input of the output's shape before the activation (a residual).")
    return Chain(contraction, squeeze, bias, norm, side_add, activation)


# The playground: parameters that break (or mend) a fusion, in the order a learner tries them, with what
# each one does to the pattern in one line.
KNOBS = {
    "second_consumer": "Feeds the contraction output to one more op: it must stay a tensor of its own, so nothing "
                       "can fuse onto it.",
    "return_intermediate": "Also returns an intermediate from the function: a second consumer, so that op must "
                           "stay separate.",
    "dtype": "Fused kernels exist for some types only: float32 nearly everywhere, bfloat16/float16 only where the "
             "CPU supports them, float64 rarely.",
    "data_format": "NCHW: the stock CPU fuses convolutions only in NHWC; oneDNN takes both.",
    "training": "Training-mode batch norm computes batch statistics first, so a convolution cannot absorb it.",
    "filter_size": "1×1 or larger: on GPU, cuDNN's fused convolution needs a spatial filter (try GPU, simulated).",
}


def _params(chain: Chain, model_id: str) -> dict:
    names = chain.param_names()
    values: dict = {}
    ints = [n for n in names if PARAMS[n].kind == "int" and n not in KNOBS]
    st.caption("Sizes", help=f"Limits: each tensor up to {MAX_TENSOR_BYTES >> 20} MiB, the model about "
               f"{MAX_MODEL_BYTES >> 30} GiB in all, each dimension up to {MAX_DIM:,}. A size over a limit is "
               "refused with the limit named, before anything runs.")
    cols = st.columns(2)
    for i, name in enumerate(ints):
        p = PARAMS[name]
        key = state.ensure_param(model_id, name)
        values[name] = cols[i % 2].number_input(PARAM_LABELS.get(name, name), min_value=p.low, max_value=p.high,
                                                step=1, key=key, help=f"{p.help} ({p.low}..{p.high})")
    knobs = [n for n in KNOBS if n in names]
    if knobs:
        st.subheader("Break the fusion", anchor=False,
                     help="A playground for the remapper's rules: each knob changes one precondition of the "
                          "pattern. Flip one and watch the verdict (above the tabs, and in 'Why it fused (or not)').")
        st.caption("Each knob changes one precondition of the pattern: flip one and watch the verdict change.")
        for name in knobs:
            values[name] = _knob(name, model_id)
            st.caption(KNOBS[name])
    for name in (n for n in names if n not in values):  # anything a new model kind adds
        values[name] = _knob(name, model_id)
    return values


def _knob(name: str, model_id: str):
    p = PARAMS[name]
    key = state.ensure_param(model_id, name)
    label = PARAM_LABELS.get(name, name)
    if p.kind == "int":
        return st.number_input(label, min_value=p.low, max_value=p.high, step=1, key=key,
                               help=f"{p.help} ({p.low}..{p.high})")
    if p.kind == "choice":
        return st.selectbox(label, p.choices, key=key, help=p.help)
    return st.toggle(label, key=key, help=p.help)


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
            st.session_state[state.GPU_PROFILE] = _default_profile(profiles)
        profile = st.selectbox("GPU profile", list(profiles), key=state.GPU_PROFILE,
                               format_func=lambda p: profiles[p].get("label", p))
        st.caption(f"Grappler's real GPU decisions on a virtual {profiles[profile].get('model', profile)}: "
                   f"graphs and fusions only, nothing runs and nothing is timed. {profiles[profile].get('notes', '')}")
        device = f"gpu-sim:{profile}"
    elif device == "gpu" and fingerprint and fingerprint.get("gpus"):
        st.caption(f"GPU:0 {gpu_words(fingerprint['gpus'][0])} · CUDA {fingerprint.get('cuda_version') or '?'}, "
                   f"cuDNN {fingerprint.get('cudnn_version') or '?'} · TF32 {'on' if fingerprint.get('tf32') else 'off'}")
    elif fingerprint:
        st.caption(f"TensorFlow {fingerprint.get('tensorflow', '?')} · {fingerprint.get('cpu_model', 'CPU')}, "
                   f"{fingerprint.get('cpu_count', '?')} cores · "
                   + (f"{len(fingerprint['gpus'])} GPU(s)" if fingerprint.get("gpus") else "no GPU"))

    st.header("Flags")
    st.caption("Environment variables of the TensorFlow worker; each set of values gets its own process.")
    env = {}
    gpu_flags = [f for f in ENV_FLAGS.values() if f.device == "gpu"]
    for flag in ENV_FLAGS.values():
        if flag.device != "gpu":
            env[flag.name] = _flag(flag)
    with st.expander(f"GPU flags ({len(gpu_flags)})", expanded=device.startswith("gpu")):
        for flag in gpu_flags:
            env[flag.name] = _flag(flag)
    with st.expander(f"Grappler switches ({len(GRAPPLER_SWITCHES)})"):
        st.caption("Passes of Grappler, TensorFlow's graph optimiser. Turning `remapping` off is the unfused graph.")
        grappler = {}
        for switch in GRAPPLER_SWITCHES.values():
            grappler[switch.name] = st.radio(f"`{switch.name}`: {switch.meaning}", (state.UNSET, "on", "off"),
                                             key=state.switch_key(switch.name), horizontal=True)
    try:
        config = Config.make(device, {k: v for k, v in env.items() if v != state.UNSET},
                             {k: v for k, v in grappler.items() if v != state.UNSET})
    except SpecError as exc:  # not reachable through the widgets; a test may set a bad value
        st.error(str(exc))
        return None, problems + [str(exc)]
    return config, problems


def _default_profile(profiles: dict) -> str:
    from ..model.devices import DEFAULT_PROFILE

    return DEFAULT_PROFILE if DEFAULT_PROFILE in profiles else next(iter(profiles))


def _flag(flag) -> str:
    options = (state.UNSET, *flag.values)
    widget = st.radio if all(len(v) <= 3 for v in flag.values) else st.selectbox  # long values read better in a list
    kwargs = {"horizontal": True} if widget is st.radio else {}
    value = widget(flag.name, options, key=state.env_key(flag.name), format_func=lambda v: "unset" if v == state.UNSET else v,
                   help=f"{flag.meaning}\n\nUnset: {flag.default_note}.", **kwargs)
    st.caption(f"{flag.meaning} *{FLAG_DEVICE[flag.device]}; unset: {flag.default_note}.*")
    return value
