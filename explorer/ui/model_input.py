"""The sidebar's inputs of the preset and op-chain sources: pick a preset, or compose a chain; then sizes and knobs.

Each returns the spec data the engine takes ({"preset", "params"} or {"chain", "params"}) and the
problems that keep it from running (``model.sources`` names them as those sources' ``page``).
"""

from __future__ import annotations

import streamlit as st

from ..errors import SpecError
from ..model.catalog import PRESETS
from ..model.chain import ACTIVATION_LABELS, ACTIVATIONS, BIASES, CONTRACTIONS, NORMS, Chain
from ..model.spec import MAX_DIM, MAX_MODEL_BYTES, MAX_TENSOR_BYTES, PARAMS, resolve
from . import state

CONTRACTION_LABELS = {"MatMul": "MatMul", "BatchMatMulV2": "BatchMatMul", "Conv2D": "Conv2D",
                      "DepthwiseConv2dNative": "DepthwiseConv2D", "Conv3D": "Conv3D",
                      "none": "none (start at the norm)"}
PARAM_LABELS = {
    "m": "m (rows)", "k": "k (inner)", "n": "n (outputs)", "batch": "batch", "height": "height", "width": "width",
    "in_channels": "in channels", "out_channels": "out channels", "channels": "channels",
    "multiplier": "multiplier", "depth": "depth", "buckets": "hash buckets", "filter_size": "filter size", "dtype": "dtype", "data_format": "data format",
    "training": "training mode", "return_intermediate": "also return", "second_consumer": "second consumer",
}


def preset_input() -> tuple[dict, list[str]]:
    """A ready model for one fusion pattern, its explanation, and its sizes and knobs."""
    preset = PRESETS[st.selectbox("Preset", list(PRESETS), key=state.PRESET, format_func=lambda p: PRESETS[p].title)]
    st.caption(preset.explanation)
    st.caption(f"**Fuses to** `{preset.fused_op}`  \n**Where** (read from the remapper's source, checked on this "
               f"CPU and on the simulated GPU)**:** {preset.where}")
    return {"preset": preset.id, "params": _params(preset.chain, preset.id)}, []


def chain_input() -> tuple[dict, list[str]]:
    """An op chain composed from parts, checked as it is composed, and its sizes and knobs."""
    chain = _chain_builder()
    problems = []
    try:
        chain.check()
    except SpecError as exc:
        st.error(str(exc))
        problems.append(str(exc))
    return {"chain": chain.to_dict(), "params": _params(chain, "chain")}, problems


def load_preset(data: dict) -> None:
    """Put a preset and its sizes into the sidebar's state (a link, an experiment file, a matrix cell)."""
    spec = resolve(data)
    st.session_state[state.MODE], st.session_state[state.PRESET] = "preset", spec.preset
    for name, value in spec.params:
        st.session_state[state.param_key(spec.preset, name)] = value


def load_chain(data: dict) -> None:
    """Put an op chain and its sizes into the sidebar's state."""
    spec = resolve(data)
    st.session_state[state.MODE] = "chain"
    for name in state.CHAIN_FIELDS:
        st.session_state[state.chain_key(name)] = getattr(spec.chain, name)
    for name, value in spec.params:
        st.session_state[state.param_key("chain", name)] = value


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
