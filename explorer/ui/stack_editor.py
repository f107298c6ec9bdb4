"""The sidebar's layer-stack editor: start from a ready stack, edit its JSON, see every layer's shape.

The JSON text is the source of truth (blocks and skip connections are awkward in a table); below it,
a read-only table of the layers as they will be built (Blocks expanded, inputs resolved, output shapes)
shows what the text means. A bad edit keeps the text as typed and names the layer and field at fault.
"""

from __future__ import annotations

import json

import streamlit as st

from ..errors import SpecError
from ..model import json_text, stack_examples
from ..model.layers import field_help
from ..model.limits import MAX_TENSOR_BYTES
from ..model.stack import MAX_LAYERS, MAX_STACK_BYTES, StackSpec, parse, to_text
from ..present.markdown import without_images
from . import state


def _restore() -> None:
    """The text as last typed, when Streamlit dropped the widget's state (another mode was drawn)."""
    if state.STACK_TEXT not in st.session_state:
        st.session_state[state.STACK_TEXT] = st.session_state[state.STACK_SAVED]


def _load_example() -> None:
    """Replace the JSON with the chosen ready stack, keeping the text it replaces for one undo."""
    current = st.session_state.get(state.STACK_TEXT, "")
    name = st.session_state[state.STACK_EXAMPLE]
    new = to_text(stack_examples.example(name))
    if current.strip() and current != new:
        st.session_state[state.STACK_UNDO] = current
    st.session_state[state.STACK_TEXT] = new


def load(data: dict) -> None:
    """Put a layer stack into the sidebar's state (a link, an experiment file): its JSON as the editor's text."""
    stack = data["stack"]
    text = to_text(stack)
    st.session_state[state.MODE] = "stack"
    st.session_state[state.STACK_TEXT] = st.session_state[state.STACK_SAVED] = text
    for name in stack_examples.NAMES:
        if stack_examples.example(name) == stack:
            st.session_state[state.STACK_EXAMPLE] = name


def _undo() -> None:
    previous = st.session_state.get(state.STACK_UNDO)
    if previous is not None:
        st.session_state[state.STACK_UNDO] = None
        st.session_state[state.STACK_TEXT] = previous


def editor() -> tuple[dict, list[str]]:
    """The stack as the engine takes it ({"stack": ...}) and the problems that keep it from running."""
    st.caption("A model written as Keras 3 layers, built the way your own Keras code builds it. "
               "Start from a ready stack, then edit its JSON.")
    left, right = st.columns([3, 2], vertical_alignment="bottom")
    left.selectbox("Ready stack", stack_examples.NAMES, key=state.STACK_EXAMPLE,
                   help="\n\n".join(f"**{n}**: {stack_examples.describe(n)}" for n in stack_examples.NAMES))
    right.button("Start from it", key="stack.load", on_click=_load_example, width="stretch",
                 help="Replace the JSON below with this ready stack (your text can be restored once).")
    st.caption(stack_examples.describe(st.session_state[state.STACK_EXAMPLE]))
    _restore()
    if st.session_state.get(state.STACK_UNDO) is not None:
        st.button("Undo: restore my previous JSON", key="stack.undo", on_click=_undo, icon=":material/undo:")
    text = st.text_area(
        "Layers (JSON)", key=state.STACK_TEXT, height=320,
        help="input.shape includes the batch. Each layer takes the previous one's output; Add, Multiply and "
             "AddN name their inputs (a layer's name, 'prev', 'input', or 'block_in': what entered the "
             'current repetition of a Block). {"type": "Block", "repeat": N, "layers": [...]} repeats layers. '
             f"Limits: {MAX_LAYERS} layers after repeats, {MAX_TENSOR_BYTES >> 20} MiB per tensor.")
    st.session_state[state.STACK_SAVED] = text
    problems: list[str] = []
    spec: StackSpec | None = None
    data: object = None
    try:
        data = json_text.load(text, "stack", "a layer stack", MAX_STACK_BYTES)
        spec = parse(data)
    except SpecError as exc:
        problems.append(str(exc))
    for problem in problems:
        st.error(without_images(problem), icon=":material/error:")
    if spec is not None:
        _layers_table(spec)
    _layer_reference()
    return {"stack": data if spec is not None else {}}, problems


def _layers_table(spec: StackSpec) -> None:
    with st.expander(f"{len(spec.layers)} layers as built · output {list(spec.output_shape)}"):
        st.dataframe(
            [{"layer": layer.name, "type": layer.type, "inputs": ", ".join(layer.inputs),
              "output shape": str(list(layer.shape)),
              "parameters": ", ".join(f"{k}={_short(v)}" for k, v in layer.params.items())}
             for layer in spec.layers],
            hide_index=True, width="stretch", key="stack.table")
        shapes = {"input": spec.input_shape, **{layer.name: layer.shape for layer in spec.layers}}
        dense_nd = [layer.name for layer in spec.layers if layer.type == "Dense" and len(shapes[layer.inputs[0]]) > 2]
        if dense_nd:
            st.caption(f"Dense on an input of rank 3 or more ({', '.join(dense_nd)}): Keras reshapes around the "
                       "MatMul, so MatMul and its bias cannot fuse there.")


def _short(value) -> str:
    if isinstance(value, tuple) and len(set(value)) == 1:
        return str(value[0])
    return str(list(value)) if isinstance(value, tuple) else str(value)


def _layer_reference() -> None:
    with st.expander("Layer types and their fields"):
        rows = []
        for kind, fields in field_help().items():
            for f in fields or [{"name": "", "help": "(no fields)", "default": None, "required": False,
                                 "choices": [], "kind": ""}]:
                required = f["required"] or (f["default"] is None and f["kind"] not in ("int_or_tuple", ""))
                rows.append({"type": kind, "field": f["name"], "meaning": f["help"],
                             "default": "required" if required else json.dumps(f["default"]) if f["name"] else "",
                             "choices": ", ".join(f["choices"])})
        rows.append({"type": "Block", "field": "repeat, layers", "meaning": "repeat the layers N times (1..64)",
                     "default": "repeat 1", "choices": ""})
        st.dataframe(rows, hide_index=True, width="stretch", key="stack.reference")
