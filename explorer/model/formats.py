"""What a model file is, from its content (the extension is only a hint): graphdef, savedmodel or keras.

Plain data checking, shared by the page and the command line (which refuse garbage before a worker
sees it) and by the worker (which checks again what it is about to load). A zip is opened through
``archive``: whatever is wrong with it becomes one line naming it, never a traceback.
"""

from __future__ import annotations

import io
import os

from . import archive
from .archive import ModelFileError

EXPECTED = "expected a GraphDef (.pb, .pbtxt), a SavedModel (a .zip of its directory) or a Keras .keras file"
KERAS_REQUIRED = {"config.json", "metadata.json", "model.weights.h5"}
ARTICLES = {"graphdef": "a GraphDef", "savedmodel": "a SavedModel", "keras": "a Keras .keras file"}


def looks_like_text(head: bytes) -> bool:
    try:
        head.decode("utf-8")
    except UnicodeDecodeError:
        try:  # a multi-byte character cut at the end of the sample is still text
            head[:-3].decode("utf-8")
        except UnicodeDecodeError:
            return False
    printable = sum(32 <= b < 127 or b in (9, 10, 13) or b >= 128 for b in head)
    return bool(head) and printable / len(head) > 0.95


def sniff(name: str, data: bytes) -> str:
    """The format of a model file from its bytes (a zip's whole bytes: its directory is at the end)."""
    if not data:
        raise ModelFileError(name, f"the file is empty (0 bytes); {EXPECTED}")
    head = data[:4096]
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        with archive.open_zip(io.BytesIO(data), name) as opened:
            return zip_format(opened, name)
    if head.startswith(b"\x89HDF\r\n\x1a\n"):
        raise ModelFileError(name, "a legacy HDF5 Keras file (.h5): save the model as .keras "
                                   "(model.save('model.keras')) and give that")
    if looks_like_text(head):
        stripped = head.lstrip()
        if stripped.startswith((b"node", b"library", b"versions", b"#")):
            return "graphdef"  # a GraphDef in text format (pbtxt)
        if stripped.startswith((b"{", b"[")):
            raise ModelFileError(name, f"a JSON file, not a model; {EXPECTED}")
        raise ModelFileError(name, "a text file, but not a GraphDef in text format (a .pbtxt starts with "
                                   f"'node {{'); {EXPECTED}")
    # A binary GraphDef starts with field 1 (node, 0x0a), or 4 (library, 0x22) / 2 (versions, 0x12).
    if head[0] in (0x0A, 0x12, 0x22):
        return "graphdef"
    raise ModelFileError(name, f"not a model file (unrecognised binary, first bytes {head[:8].hex()}); {EXPECTED}")


def zip_format(opened, name: str) -> str:
    """savedmodel or keras for an open zip, its members checked by the archive policy of that format."""
    members = archive.zip_members(opened, name)
    paths = {m.path for m in members}
    if KERAS_REQUIRED <= paths:
        archive.check(members, name, archive.KERAS_MEMBERS)
        return "keras"
    if any(p.rsplit("/", 1)[-1] == "saved_model.pb" for p in paths):
        archive.check(members, name)
        return "savedmodel"
    raise ModelFileError(name, "a zip file, but neither a SavedModel (no saved_model.pb in it) nor a .keras "
                               "file (no config.json, metadata.json and model.weights.h5)")


def savedmodel_root(dest: str, what: str = "zip") -> str:
    """The directory holding saved_model.pb: ``dest`` itself or a directory one level down (links not followed)."""
    hits = []
    for root, dirs, files in os.walk(dest, followlinks=False):
        if "saved_model.pb" in files:
            hits.append(root)
        if os.path.relpath(root, dest).count(os.sep) >= 1:
            dirs[:] = []
    if not hits:
        raise ModelFileError(what, "holds no saved_model.pb (zip the SavedModel's directory)")
    if len(hits) > 1:
        raise ModelFileError(what, "holds several SavedModels: " + ", ".join(os.path.relpath(h, dest) for h in hits[:5]))
    return hits[0]
