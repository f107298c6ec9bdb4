"""The sidebar's "an imported model": the upload, its checks and limits, the signature and unknown dimensions.

The file is checked by ``engine.uploads`` (format from its content, archives by the one archive policy)
and kept in this session's own temporary directory under its content digest, within the session's
quota; no other session can name it, and the directory goes when the session ends. A refused file is
explained once, in one line, and nothing of it is kept; the rest of the session stays.
"""

from __future__ import annotations

import logging
import os
import tempfile

import streamlit as st

from ..engine import uploads
from ..errors import ExplorerError, shown
from ..model.imported import FORMAT_LABELS, MAX_NODES, MAX_UNKNOWN_DIM, MAX_UPLOAD_BYTES
from ..model.spec import MAX_TENSOR_BYTES
from ..present.markdown import escaped, without_images
from . import state
from .sidebar import Waiting

log = logging.getLogger(__name__)
FOLDER = "model.upload_folder"  # the session's SessionFolder: when the session's state goes, its folder goes
MISMATCH = "model.import.mismatch"  # (digest, words): the file uploaded for a link is not the link's
REFUSED = "model.import.refused"  # (the uploader's file, why it was refused): said while that file is in the uploader


def session_directory() -> str:
    folder = st.session_state.get(FOLDER)
    if folder is None or not os.path.isdir(folder.path):  # new, or swept after hours untouched
        folder = uploads.SessionFolder()
        st.session_state[FOLDER] = folder
        st.session_state[state.UPLOAD_DIR] = folder.path
    return folder.path


def scratch(prefix: str) -> str:
    """A new folder in this session's folder for a rewritten model: within its quota, gone with it. Raises
    ExplorerError (one line) when the disk has no room for one."""
    session = session_directory()
    uploads.disk_has_room(session)
    return tempfile.mkdtemp(prefix=prefix, dir=session)


def model_input() -> tuple[dict | None, list[str]]:
    """The spec of the uploaded model, or None and why nothing can run yet."""
    allowed = uploads.programs_allowed(st.get_option("server.address"))
    taken = "a GraphDef (.pb, .pbtxt)" + (", a SavedModel (a .zip of its directory) or a Keras .keras file"
                                          if allowed else "")
    upload = st.file_uploader(f"Model file: {taken}", key=state.UPLOAD, max_upload_size=MAX_UPLOAD_BYTES >> 20,
                              help=f"Up to {MAX_UPLOAD_BYTES >> 20} MiB and {MAX_NODES:,} nodes; each input tensor "
                                   f"up to {MAX_TENSOR_BYTES >> 20} MiB. Every op is checked against an allow-list "
                                   "of pure-compute ops before anything runs; the model runs only in a worker "
                                   "process, in a temporary directory of its own.")
    st.caption(f"Limits: {MAX_UPLOAD_BYTES >> 20} MiB per file, {MAX_NODES:,} nodes, {MAX_TENSOR_BYTES >> 20} MiB "
               "per input tensor. Ops that touch files, processes, the network or Python are refused, naming the "
               "op and node.")
    if not allowed:
        st.caption(f"SavedModel and .keras uploads are off on this server, which others can reach (models are "
                   f"programs). Whoever starts it can allow them with `{uploads.ALLOW_SETTING}=1`; a server that "
                   "listens on this machine only (`EXPLORER_ADDRESS=127.0.0.1`, `./dev.sh app`'s default) takes all "
                   "three formats, as does `python -m explorer inspect --model PATH`.")
    unknown_dim = st.number_input("Unknown dimensions (batch, sequence ...)", min_value=1, max_value=MAX_UNKNOWN_DIM,
                                  step=1, key=state.UNKNOWN_DIM,
                                  help="The value given to every dimension the model leaves open (default 1).")
    ss = st.session_state
    if upload is not None:
        refused = _take(upload, allowed, int(unknown_dim))
        if refused:
            return None, [refused]
    wanted = ss.get(state.IMPORT_WANTED)
    if wanted:
        found = _find(wanted, allowed, int(unknown_dim))
        if found is None:
            name = f"{escaped(wanted.get('name'))} " if wanted.get("name") else ""
            return None, [Waiting(f"This link names an imported model, {name}(sha256 {wanted['digest'][:12]}…), that "
                                  "this server no longer keeps. Upload the same file in the sidebar to open it: its "
                                  "digest is checked against the link's.")]
    kept = ss.get(state.IMPORT_KEPT)
    if not kept:
        return None, [Waiting(f"Upload a model file in the sidebar to start: {taken}. Its graphs before and after "
                              "Grappler, its fusions and the near-misses show here.")]
    if uploads.kept_upload(os.path.dirname(kept["path"]), kept["digest"]) != kept["path"]:
        ss[state.IMPORT_WANTED], ss[state.IMPORT_KEPT] = _public(kept), None  # evicted by the quota, or swept
        return None, [Waiting(f"The model uploaded earlier ({escaped(kept.get('name'))}) is no longer kept on the "
                              "server: upload it again to go on.")]
    mismatch = ss.get(MISMATCH)
    if mismatch and mismatch[0] == kept["digest"]:
        st.warning(mismatch[1], icon=":material/difference:")
    data = dict(_public(kept), path=kept["path"], unknown_dim=int(unknown_dim))
    info = (ss.get(state.IMPORT_INFO) or {}).get(data["digest"])
    data.pop("signature", None)
    if info:
        signature = _signature(info)
        if signature:
            data["signature"] = signature
        st.caption(inputs_text(info, int(unknown_dim)))
    size = os.path.getsize(kept["path"])
    st.caption(f"{FORMAT_LABELS[data['format']]} · {escaped(data.get('name'))} · {size / 1e6:.2f} MB · "
               f"sha256 {data['digest'][:12]}…" + ("" if upload is not None else " · kept from your upload or a link; "
                                                  "upload another file to replace it"))
    return {"import": data}, []


def _take(upload, allowed: bool, unknown_dim: int) -> str | None:
    """A file new in the uploader becomes the session's model (checked, kept in its folder); why not, when refused.
    A file already taken is not read again: the model kept is used, so a link or a look at a preset can change it."""
    ss = st.session_state
    seen = getattr(upload, "file_id", None) or f"{upload.name}:{upload.size}"
    refused = ss.get(REFUSED)
    if refused and refused[0] == seen:
        return refused[1]
    if ss.get(state.IMPORT_SEEN) == seen:
        return None
    try:
        spec = uploads.save_upload(session_directory(), upload.name, upload.getvalue(), allow_programs=allowed,
                                   unknown_dim=unknown_dim)
    except ExplorerError as exc:  # the page shows the problems, once
        ss[REFUSED] = (seen, without_images(f"The upload was refused: {exc}"))
        return ss[REFUSED][1]
    except Exception as exc:  # a file the checks did not foresee: one line here, the trace in the log
        log.exception("an upload could not be read")
        ss[REFUSED] = (seen, f"The upload could not be read ({shown(type(exc).__name__)}: {shown(exc)}); nothing was "
                             "kept.")
        return ss[REFUSED][1]
    ss[state.IMPORT_SEEN], ss[REFUSED] = seen, None
    data = spec["import"]
    wanted = ss.get(state.IMPORT_WANTED)
    ss[MISMATCH] = None
    if wanted and wanted["digest"] != data["digest"]:  # said while this file is the model on screen
        ss[MISMATCH] = (data["digest"], f"This file is not the one the link names: its sha256 is "
                                        f"{data['digest'][:12]}…, the link's {wanted['digest'][:12]}…. It is shown "
                                        "instead.")
    ss[state.IMPORT_KEPT] = dict(data, **_options(wanted if wanted and wanted["digest"] == data["digest"] else {}))
    ss[state.IMPORT_WANTED] = None
    return None


def _find(wanted: dict, allowed: bool, unknown_dim: int) -> dict | None:
    """The model a link names, from any session of this server that keeps it, as this session's kept model."""
    try:
        spec = uploads.adopt_upload(session_directory(), wanted["digest"], name=wanted.get("name", ""),
                                    allow_programs=allowed, unknown_dim=unknown_dim)
    except ExplorerError as exc:  # kept elsewhere, but not taken here (a SavedModel on a GraphDef-only server)
        st.session_state[state.IMPORT_WANTED] = None
        st.error(f"The model this link names was refused: {exc}")
        return None
    if spec is None:
        return None
    st.session_state[state.IMPORT_KEPT] = dict(spec["import"], **_options(wanted))
    st.session_state[state.IMPORT_WANTED] = None
    return spec


def _public(kept: dict) -> dict:
    return {k: v for k, v in kept.items() if k != "path"}


def load(data: dict) -> None:
    """Put an imported model named by a link or an experiment file into the sidebar's state: its options at once,
    the file by its digest (``model_input`` finds it, or asks for it)."""
    st.session_state[state.MODE] = "import"
    wanted = data.get("import")
    if not wanted:
        return
    st.session_state[state.UNKNOWN_DIM] = wanted.get("unknown_dim", 1)
    st.session_state[state.SIGNATURE] = wanted.get("signature")
    kept = st.session_state.get(state.IMPORT_KEPT) or {}
    if kept.get("digest") == wanted["digest"]:
        st.session_state[state.IMPORT_KEPT] = dict(kept, **_options(wanted))
        st.session_state[state.IMPORT_WANTED] = None
    else:
        st.session_state[state.IMPORT_WANTED] = dict(wanted)


def _options(data: dict) -> dict:
    """What a link or file says about feeding the model beyond the sidebar's own inputs."""
    return {"outputs": list(data.get("outputs") or []), "fixed_dims": bool(data.get("fixed_dims"))}


def _signature(info: dict) -> str | None:
    """The signature picked in the dropdown (shown when a SavedModel has several), or None for its default."""
    names = info.get("signatures") or []
    default = info.get("default_signature")
    if len(names) < 2:
        return None
    if st.session_state.get(state.SIGNATURE) not in names:
        st.session_state[state.SIGNATURE] = default if default in names else names[0]
    chosen = st.selectbox("Signature", names, key=state.SIGNATURE,
                          help=f"The SavedModel's signatures; {default!r} is the one run by default.")
    return None if chosen == default else chosen


def remember(result: dict) -> bool:
    """Keep an imported model's inputs and signatures for the sidebar; True when they are new to this session
    (the sidebar, drawn before the result, must then redraw to offer them)."""
    info = result.get("model_info")
    digest = ((result.get("spec") or {}).get("import") or {}).get("digest")
    if not info or not digest:
        return False
    known = dict(st.session_state.get(state.IMPORT_INFO) or {})
    first = digest not in known
    entry = dict(known.get(digest) or info, inputs=info["inputs"], signatures=info.get("signatures") or [])
    if first and not result["spec"]["import"].get("signature"):
        entry["default_signature"] = info.get("signature")
    known[digest] = entry
    st.session_state[state.IMPORT_INFO] = known
    return first


def inputs_text(info: dict, unknown_dim: int) -> str:
    """The model's inputs as declared and as fed: `image` [?, 224, 224, 3] float32 → [1, 224, 224, 3]."""
    parts, unknown = [], False
    for item in info.get("inputs") or []:
        shape = item["shape"]
        if shape is None:
            parts.append(f"`{item['name']}` unknown rank {item['dtype']}")
            continue
        declared = ", ".join("?" if d is None else str(d) for d in shape)
        fed = ", ".join(str(unknown_dim if d is None else d) for d in shape)
        unknown = unknown or None in shape
        parts.append(f"`{item['name']}` [{declared}] {item['dtype']}" + (f" → fed as [{fed}]" if None in shape else ""))
    tail = "" if unknown else " (no unknown dimension: the value above is not used)"
    return "Inputs: " + "; ".join(parts) + tail
