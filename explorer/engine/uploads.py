"""A user's model file on the parent side: its format from its content, safe zips, per-session storage.

Pure Python (no TensorFlow), so garbage is refused before a worker sees it. The worker parses and
checks the graph itself (``worker.safety``); this module decides what the file *is*, refuses what
the server does not take, stores an upload under a session's own temporary directory by its
content digest, and extracts a SavedModel zip without writing outside the directory it is given.
"""

from __future__ import annotations

import hashlib
import io
import os
import stat
import tempfile
import zipfile
from pathlib import Path

from ..errors import SpecError
from ..model.imported import FORMAT_LABELS, MAX_UPLOAD_BYTES, resolve_import

MAX_MEMBERS = 2000  # a SavedModel has about 5 files
MAX_EXPANDED_BYTES = 512 << 20  # a zip's members, decompressed, together
MAX_RATIO = 200  # decompressed : compressed per member past 1 MiB: a zip bomb
MAX_FILE_BYTES = 2 << 30  # protobuf's own limit, for a path given on the command line
ALLOW_SETTING = "EXPLORER_ALLOW_MODEL_UPLOADS"
EXPECTED = "expected a GraphDef (.pb, .pbtxt), a SavedModel (a .zip of its directory) or a Keras .keras file"
KERAS_MEMBERS = {"config.json", "metadata.json", "model.weights.h5"}


class ModelFileError(SpecError):
    """A model file refused before anything ran; the message names the file and what was expected."""

    def __init__(self, name: str, message: str):
        super().__init__(name or "model", message)


def programs_allowed() -> bool:
    """Whether the page takes SavedModel and .keras uploads: models that are programs (README)."""
    return os.environ.get(ALLOW_SETTING, "").strip().lower() in ("1", "true", "yes", "on")


def _looks_like_text(head: bytes) -> bool:
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
    """The format of a model file from its first bytes (the extension is only a hint): graphdef|savedmodel|keras."""
    if not data:
        raise ModelFileError(name, f"the file is empty (0 bytes); {EXPECTED}")
    head = data[:4096]
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as archive:
                names = archive.namelist()
        except zipfile.BadZipFile as exc:
            raise ModelFileError(name, f"a damaged or truncated zip file ({exc}); {EXPECTED}") from None
        base = {n.rstrip("/").rsplit("/", 1)[-1] for n in names}
        if KERAS_MEMBERS <= set(names):
            return "keras"
        if "saved_model.pb" in base:
            return "savedmodel"
        raise ModelFileError(name, "a zip file, but neither a SavedModel (no saved_model.pb in it) nor a .keras "
                                   "file (no config.json, metadata.json and model.weights.h5)")
    if head.startswith(b"\x89HDF\r\n\x1a\n"):
        raise ModelFileError(name, "a legacy HDF5 Keras file (.h5): save the model as .keras "
                                   "(model.save('model.keras')) and give that")
    if _looks_like_text(head):
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


def _member_path(info: zipfile.ZipInfo) -> str:
    """A zip member's safe relative path, or a refusal naming the member."""
    raw = info.filename
    name = raw.replace("\\", "/")
    if "\x00" in raw:
        raise ModelFileError("zip", f"member {raw!r}: a NUL byte in its name")
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise ModelFileError("zip", f"member {raw!r}: an absolute path is refused")
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ModelFileError("zip", f"member {raw!r}: '..' in a path is refused (it would write outside the model)")
    mode = (info.external_attr >> 16) & 0xFFFF
    kind = stat.S_IFMT(mode)  # zipfile.writestr stores no type bits: an ordinary file
    if info.create_system == 3 and kind == stat.S_IFLNK:
        raise ModelFileError("zip", f"member {raw!r}: a symbolic link is refused")
    if info.create_system == 3 and kind and kind not in (stat.S_IFREG, stat.S_IFDIR):
        raise ModelFileError("zip", f"member {raw!r}: not a regular file or directory")
    if info.flag_bits & 0x1:
        raise ModelFileError("zip", f"member {raw!r}: an encrypted member is refused")
    return "/".join(parts)


def check_zip(archive: zipfile.ZipFile) -> list[tuple[zipfile.ZipInfo, str]]:
    """Every member checked before anything is written: paths, links, count, declared sizes."""
    infos = archive.infolist()
    if len(infos) > MAX_MEMBERS:
        raise ModelFileError("zip", f"{len(infos)} members; at most {MAX_MEMBERS} are taken")
    plan, seen, declared = [], set(), 0
    for info in infos:
        rel = _member_path(info)
        if not rel:
            continue
        if rel.lower() in seen:
            raise ModelFileError("zip", f"member {info.filename!r} appears twice")
        seen.add(rel.lower())
        if info.file_size > 1 << 20 and info.file_size > MAX_RATIO * max(info.compress_size, 1):
            raise ModelFileError("zip", f"member {info.filename!r} expands {info.file_size // max(info.compress_size, 1)}"
                                        ":1, which looks like a zip bomb")
        declared += info.file_size
        if declared > MAX_EXPANDED_BYTES:
            raise ModelFileError("zip", f"expands to more than {MAX_EXPANDED_BYTES >> 20} MiB; that is the limit")
        plan.append((info, rel))
    return plan


def extract_zip(path: str, dest: str) -> str:
    """Extract a SavedModel zip into ``dest`` (an empty directory the caller owns); return the model's root.

    Files are created with O_EXCL|O_NOFOLLOW and the bytes actually decompressed are counted (a
    header's sizes can lie)."""
    dest = os.path.realpath(dest)
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile as exc:
        raise ModelFileError(os.path.basename(path), f"not a valid zip file ({exc})") from None
    with archive:
        written = 0
        for info, rel in check_zip(archive):
            target = os.path.join(dest, *rel.split("/"))
            parent = target if info.is_dir() else os.path.dirname(target)
            os.makedirs(parent, mode=0o700, exist_ok=True)
            if os.path.commonpath([dest, os.path.realpath(parent)]) != dest:
                raise ModelFileError("zip", f"member {info.filename!r} would land outside the model's directory")
            if info.is_dir():
                continue
            fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
            with os.fdopen(fd, "wb") as out, archive.open(info) as member:
                while chunk := member.read(1 << 20):
                    written += len(chunk)
                    if written > MAX_EXPANDED_BYTES:
                        raise ModelFileError("zip", f"expands to more than {MAX_EXPANDED_BYTES >> 20} MiB; "
                                                    "that is the limit")
                    out.write(chunk)
    return savedmodel_root(dest)


def savedmodel_root(dest: str) -> str:
    """The directory holding saved_model.pb: ``dest`` itself or a directory at most two levels down."""
    hits = []
    for root, dirs, files in os.walk(dest, followlinks=False):
        if "saved_model.pb" in files:
            hits.append(root)
        if os.path.relpath(root, dest).count(os.sep) >= 1:
            dirs[:] = []
    if not hits:
        raise ModelFileError("zip", "holds no saved_model.pb (zip the SavedModel's directory)")
    if len(hits) > 1:
        raise ModelFileError("zip", "holds several SavedModels: " + ", ".join(os.path.relpath(h, dest) for h in hits))
    return hits[0]


def digest_of(path: str) -> str:
    """sha256 of a file's content, or of a directory's relative paths and contents."""
    digest = hashlib.sha256()
    if os.path.isdir(path):
        for root, dirs, files in os.walk(path):
            dirs.sort()
            for name in sorted(files):
                full = os.path.join(root, name)
                digest.update(os.path.relpath(full, path).encode() + b"\0")
                with open(full, "rb") as handle:
                    for chunk in iter(lambda: handle.read(1 << 20), b""):
                        digest.update(chunk)
        return digest.hexdigest()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _options(signature, unknown_dim, outputs) -> dict:
    data: dict = {"unknown_dim": unknown_dim}
    if signature:
        data["signature"] = signature
    if outputs:
        data["outputs"] = list(outputs)
    return data


def spec_for_path(path: str, *, signature: str | None = None, unknown_dim: int = 1, outputs=()) -> dict:
    """The spec of a model on the user's own disk (the command line): all three formats are taken."""
    name = os.path.basename(os.path.normpath(path)) or path
    if os.path.isdir(path):
        if not os.path.isfile(os.path.join(path, "saved_model.pb")):
            raise ModelFileError(name, "a directory without saved_model.pb; " + EXPECTED)
        fmt = "savedmodel"
    elif os.path.isfile(path):
        size = os.path.getsize(path)
        if size > MAX_FILE_BYTES:
            raise ModelFileError(name, f"{size >> 20} MiB; a model file over {MAX_FILE_BYTES >> 30} GiB cannot be read")
        with open(path, "rb") as handle:
            head = handle.read(size if size <= 64 << 20 else 4096)
        if head.startswith(b"PK") and len(head) < size:
            with open(path, "rb") as handle:
                head = handle.read()  # a zip's directory is at its end
        fmt = sniff(name, head)
        if fmt == "savedmodel":
            with zipfile.ZipFile(path) as archive:
                check_zip(archive)
    else:
        raise ModelFileError(name, f"no such file or directory: {path}")
    data = {"path": os.path.abspath(path), "format": fmt, "digest": digest_of(path), "name": name,
            **_options(signature, unknown_dim, outputs)}
    resolve_import(data)
    return {"import": data}


def upload_root() -> Path:
    """Where the page keeps uploads: one private directory per server, one below it per session."""
    root = Path(os.environ.get("EXPLORER_UPLOAD_DIR") or Path(tempfile.gettempdir()) / f"explorer-uploads-{os.getuid()}")
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    return root


def session_directory() -> str:
    """A new private directory for one session's uploads (unguessable name, mode 0700)."""
    return tempfile.mkdtemp(prefix="session-", dir=upload_root())


def save_upload(directory: str, name: str, data: bytes, *, allow_programs: bool | None = None,
                signature: str | None = None, unknown_dim: int = 1, outputs=()) -> dict:
    """Check an uploaded file and keep it in the session's directory under its digest; return its spec."""
    name = os.path.basename(name.replace("\\", "/"))[:200] or "upload"
    if len(data) > MAX_UPLOAD_BYTES:
        raise ModelFileError(name, f"{len(data) >> 20} MiB; uploads are limited to {MAX_UPLOAD_BYTES >> 20} MiB")
    fmt = sniff(name, data)
    allow = programs_allowed() if allow_programs is None else allow_programs
    if fmt != "graphdef" and not allow:
        raise ModelFileError(name, f"a {FORMAT_LABELS[fmt].split(' (')[0]} is a program (TensorFlow's security "
                                   "policy: models are programs), and this server takes only GraphDef uploads "
                                   f"(.pb, .pbtxt). Whoever starts the server can allow them with {ALLOW_SETTING}=1 "
                                   "(single-user or trusted setups); or use the command line, "
                                   "`python -m explorer inspect --model PATH`, on your own machine.")
    if fmt == "savedmodel":
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            check_zip(archive)
    digest = hashlib.sha256(data).hexdigest()
    suffix = {"graphdef": ".pbtxt" if _looks_like_text(data[:4096]) else ".pb", "savedmodel": ".zip",
              "keras": ".keras"}[fmt]
    target = os.path.join(directory, digest + suffix)
    if not os.path.exists(target):
        tmp = f"{target}.{os.getpid()}.part"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, target)
    spec = {"path": target, "format": fmt, "digest": digest, "name": name, **_options(signature, unknown_dim, outputs)}
    resolve_import(spec)
    return {"import": spec}
