"""The sidebar's "an imported model": the upload, its checks and limits, the signature and unknown dimensions.

The file is checked by ``engine.uploads`` (format from its content, zips member by member) and kept
in this session's own temporary directory under its content digest; no other session can name it.
A refused file is explained under the widget and nothing of it is kept; the rest of the session stays.
"""

from __future__ import annotations

import os

import streamlit as st

from ..engine import uploads
from ..errors import SpecError
from ..model.imported import FORMAT_LABELS, MAX_NODES, MAX_UNKNOWN_DIM, MAX_UPLOAD_BYTES
from ..model.spec import MAX_TENSOR_BYTES
from . import state


def session_directory() -> str:
    directory = st.session_state.get(state.UPLOAD_DIR)
    if not directory or not os.path.isdir(directory):
        directory = uploads.session_directory()
        st.session_state[state.UPLOAD_DIR] = directory
    return directory


def model_input() -> tuple[dict | None, list[str]]:
    """The spec of the uploaded model, or None and why nothing can run yet."""
    allowed = uploads.programs_allowed()
    taken = "a GraphDef (.pb, .pbtxt)" + (", a SavedModel (a .zip of its directory) or a Keras .keras file"
                                          if allowed else "")
    upload = st.file_uploader(f"Model file: {taken}", key=state.UPLOAD,
                              help=f"Up to {MAX_UPLOAD_BYTES >> 20} MiB and {MAX_NODES:,} nodes; each input tensor "
                                   f"up to {MAX_TENSOR_BYTES >> 20} MiB. Every op is checked against an allow-list "
                                   "of pure-compute ops before anything runs; the model runs only in a worker "
                                   "process, in a temporary directory of its own.")
    st.caption(f"Limits: {MAX_UPLOAD_BYTES >> 20} MiB per file, {MAX_NODES:,} nodes, {MAX_TENSOR_BYTES >> 20} MiB "
               "per input tensor. Ops that touch files, processes, the network or Python are refused, naming the "
               "op and node.")
    if not allowed:
        st.caption(f"SavedModel and .keras uploads are off on this server (models are programs). Whoever starts it "
                   f"can allow them with `{uploads.ALLOW_SETTING}=1`; on your own machine, "
                   "`python -m explorer inspect --model PATH` takes all three formats.")
    unknown_dim = st.number_input("Unknown dimensions (batch, sequence ...)", min_value=1, max_value=MAX_UNKNOWN_DIM,
                                  step=1, key=state.UNKNOWN_DIM,
                                  help="The value given to every dimension the model leaves open (default 1).")
    if upload is None:
        return None, ["Upload a model file in the sidebar to start."]
    try:
        spec = uploads.save_upload(session_directory(), upload.name, upload.getvalue(), allow_programs=allowed,
                                   unknown_dim=int(unknown_dim))
    except SpecError as exc:
        st.error(str(exc))
        return None, [f"The upload was refused: {exc}"]
    data = spec["import"]
    if data["format"] == "savedmodel":
        signature = st.text_input("Signature", key=state.SIGNATURE,
                                  help="The SavedModel's signature to call; a name it lacks is answered with "
                                       "the list of those it has.").strip()
        if signature:
            data["signature"] = signature
    st.caption(f"{FORMAT_LABELS[data['format']]} · {len(upload.getvalue()) / 1e6:.2f} MB · "
               f"sha256 {data['digest'][:12]}…")
    return spec, []
