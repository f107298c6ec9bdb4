"""A user's model file on the parent side: refused early when it is garbage, kept per session when it is not.

Pure Python (no TensorFlow), so garbage is refused before a worker sees it: the format is read from
the content and every archive checked by the one archive policy (``model.formats``, ``model.archive``);
the worker parses and checks the graph itself (``worker.safety``). An upload is stored under a
session's own temporary directory by its content digest, within a quota (files and bytes, the oldest
evicted); the directory goes when the session ends, or once untouched for hours. A path on the user's
own disk (the command line) is digested without following a link or reading anything but regular files.
A page link names an upload by its digest: ``adopt_upload`` finds it in any session's folder by that exact
digest, and keeps a checked copy in the asking session's own folder (docs/experiments.md).
"""

from __future__ import annotations

import atexit
import hashlib
import ipaddress
import os
import re
import shutil
import stat
import tempfile
import time
import weakref
from pathlib import Path

from ..errors import quoted, shown
from ..model import archive
from ..model.archive import ModelFileError
from ..model.formats import ARTICLES, EXPECTED, looks_like_text, sniff, zip_format
from ..model.imported import MAX_UPLOAD_BYTES, resolve_import
from . import scratch

MAX_FILE_BYTES = 2 << 30  # protobuf's own limit, for a path given on the command line
SESSION_MAX_FILES = 8  # uploads a session keeps: the model shown and a few it may go back to
SESSION_MAX_BYTES = 2 * MAX_UPLOAD_BYTES
SESSION_MAX_AGE_S = 6 * 3600.0  # a session folder untouched this long belongs to a session long gone
DISK_RESERVE_BYTES = 1 << 30  # an upload is not kept if it would leave the disk less free than this
ALLOW_SETTING = "EXPLORER_ALLOW_MODEL_UPLOADS"
__all__ = ["ALLOW_SETTING", "EXPECTED", "ModelFileError", "adopt_upload", "digest_of", "disk_has_room", "keep_written",
           "kept_upload", "listens_on_loopback", "programs_allowed", "save_upload", "SessionFolder", "sniff",
           "spec_for_path", "upload_root"]


def listens_on_loopback(address: str | None) -> bool:
    """Whether a server bound to ``address`` can be reached from this machine only (None or "": Streamlit's default,
    every address)."""
    address = (address or "").strip().strip("[]").lower()
    if address == "localhost":
        return True
    try:
        return ipaddress.ip_address(address).is_loopback
    except ValueError:
        return False


def programs_allowed(address: str | None = None) -> bool:
    """Whether the page takes SavedModel and .keras uploads, models that are programs (README, docs/import.md):
    ALLOW_SETTING when the server's starter set it (1 or 0); else yes on a server that listens on loopback only
    (its one user runs their own programs on their own machine), no on one others can reach (GraphDef only)."""
    setting = os.environ.get(ALLOW_SETTING, "").strip().lower()
    if setting in ("1", "true", "yes", "on"):
        return True
    if setting in ("0", "false", "no", "off"):
        return False
    return listens_on_loopback(address)


def digest_of(path: str, what: str = "model") -> str:
    """sha256 of a file's content, or of a directory's relative paths and contents: regular files only,
    read without following a link or waiting on a pipe (``archive``), within the archive limits."""
    digest = hashlib.sha256()
    if os.path.isdir(path):
        for member in archive.check(archive.directory_members(path, what), what):
            if member.kind == "file":
                digest.update(member.path.encode() + b"\0")
                for chunk in archive.read_member(path, member, what):
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
    try:
        info = os.stat(path)  # the path the user gave may be a link; what lies inside is read without following
    except FileNotFoundError:
        raise ModelFileError(name, f"no such file or directory: {shown(path, 1000)}") from None
    except OSError as exc:
        raise ModelFileError(name, f"cannot read {quoted(path)}: {exc.strerror}") from None
    if stat.S_ISDIR(info.st_mode):
        if not os.path.isfile(os.path.join(path, "saved_model.pb")) or os.path.islink(os.path.join(path, "saved_model.pb")):
            raise ModelFileError(name, "a directory without saved_model.pb; " + EXPECTED)
        fmt = "savedmodel"
    elif stat.S_ISREG(info.st_mode):
        if info.st_size > MAX_FILE_BYTES:
            raise ModelFileError(name, f"{info.st_size >> 20} MiB; a model file over {MAX_FILE_BYTES >> 30} GiB "
                                       "cannot be read")
        with open(path, "rb") as handle:
            head = handle.read(4096)
        if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
            with archive.open_zip(path, name) as opened:  # its directory is at its end: read from the file
                fmt = zip_format(opened, name)
        else:
            fmt = sniff(name, head)
    else:
        raise ModelFileError(name, f"not a regular file or directory ({_kind(info.st_mode)}); {EXPECTED}")
    data = {"path": os.path.abspath(path), "format": fmt, "digest": digest_of(path, name), "name": name,
            **_options(signature, unknown_dim, outputs)}
    resolve_import(data)
    return {"import": data}


def _kind(mode: int) -> str:
    return archive.KINDS.get(stat.S_IFMT(mode), "not a file")


def upload_root() -> Path:
    """Where the page keeps uploads: one private directory per user (or EXPLORER_UPLOAD_DIR), one below it per
    server process (``server_root``), one below that per session."""
    root = Path(os.environ.get("EXPLORER_UPLOAD_DIR") or Path(tempfile.gettempdir()) / f"explorer-uploads-{os.getuid()}")
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    return root


_SERVERS: dict[tuple[int, str], Path] = {}  # (pid, upload root) -> this server's folder


def server_root() -> Path:
    """This server's own folder, ``server-<pid>-*`` under ``upload_root()``: a "server" is one process serving the
    page (``./dev.sh app``, ``streamlit run app.py``); two servers one user runs (two ports, two classes) keep
    their sessions apart, and a link finds an upload only among its own server's sessions. The folder goes when
    the process exits; one whose process is gone (killed outright) is removed by the next server to start."""
    root = upload_root()
    key = (os.getpid(), str(root))
    path = _SERVERS.get(key)
    if path is None or not path.is_dir():
        _sweep_servers(root)
        path = Path(tempfile.mkdtemp(prefix=f"server-{os.getpid()}-", dir=root))
        _SERVERS[key] = path
        atexit.register(shutil.rmtree, path, True)
    return path


def _sweep_servers(root: Path) -> None:
    sweep(root)  # session folders of the layout before servers had folders of their own
    for entry in os.scandir(root):
        match = _SERVER_FOLDER.match(entry.name)
        if match and entry.is_dir(follow_symlinks=False) and not scratch.alive(int(match.group(1))):
            shutil.rmtree(entry.path, ignore_errors=True)


class SessionFolder:
    """One session's private upload directory (unguessable name, mode 0700). It is removed when this object
    goes, as the session's state does when the session ends; a new session also sweeps away the folders
    of sessions untouched for SESSION_MAX_AGE_S (a server stopped without its sessions ending)."""

    def __init__(self):
        root = server_root()
        sweep(root)
        self.path = tempfile.mkdtemp(prefix="session-", dir=root)
        self._remove = weakref.finalize(self, shutil.rmtree, self.path, True)

    def __fspath__(self) -> str:
        return self.path

    def remove(self) -> None:
        self._remove()


def sweep(root: Path, now: float | None = None) -> None:
    """Remove the session folders under ``root`` that nothing has touched for SESSION_MAX_AGE_S."""
    now = time.time() if now is None else now
    for entry in os.scandir(root):
        try:
            if (entry.name.startswith("session-") and entry.is_dir(follow_symlinks=False)
                    and now - entry.stat(follow_symlinks=False).st_mtime > SESSION_MAX_AGE_S):
                shutil.rmtree(entry.path, ignore_errors=True)
        except OSError:  # removed meanwhile by another session's sweep
            continue


def _entries(directory: str, leave: tuple = ()) -> list[tuple[float, str, int]]:
    """What the session's folder holds, oldest first: (mtime, path, bytes) of each upload and of each folder the
    explorer wrote for the session (a fixed model's), its bytes counted without following a link."""
    out = []
    for entry in os.scandir(directory):
        if entry.path in leave or entry.name.endswith(".part"):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
            size = _tree_bytes(entry.path) if entry.is_dir(follow_symlinks=False) else info.st_size
        except OSError:  # removed meanwhile
            continue
        out.append((info.st_mtime, entry.path, size))
    return sorted(out)


def _tree_bytes(path: str) -> int:
    total = 0
    for root, _dirs, files in os.walk(path, followlinks=False):
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                continue
    return total


def _remove(path: str) -> None:
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


def _make_room(directory: str, target: str, size: int) -> None:
    """Evict the session's oldest uploads and written models until one more of ``size`` bytes fits its quota;
    refuse when the disk would be left nearly full."""
    files = _entries(directory, leave=(target,))
    count, total = len(files) + 1, sum(f[2] for f in files) + size
    while files and (count > SESSION_MAX_FILES or total > SESSION_MAX_BYTES):
        _, path, nbytes = files.pop(0)
        _remove(path)
        count, total = count - 1, total - nbytes
    free = shutil.disk_usage(directory).free
    if free - size < DISK_RESERVE_BYTES:
        raise ModelFileError("upload", f"the server's disk is nearly full ({free >> 20:,} MiB free); the upload was "
                                       "not kept. Tell whoever runs the server.")


def keep_written(directory, written: str, what: str = "the fixed model") -> None:
    """Count ``written`` (a file or folder the explorer just wrote into the session's folder, such as a fixed
    model) against the session's quota like an upload: the oldest others are evicted to make room; it is removed
    and refused when it alone is over the quota or has left the disk under its reserve."""
    directory, written = os.fspath(directory), os.fspath(written)
    size = _tree_bytes(written) if os.path.isdir(written) else os.lstat(written).st_size
    if size > SESSION_MAX_BYTES:
        _remove(written)
        raise ModelFileError(what, f"{size >> 20:,} MiB; a session keeps at most {SESSION_MAX_BYTES >> 20} MiB")
    try:
        _make_room(directory, written, 0)
    except ModelFileError:
        _remove(written)
        raise
    os.utime(directory)


def disk_has_room(directory) -> None:
    """Refuse before writing anything for a session when the disk is already under its reserve."""
    free = shutil.disk_usage(os.fspath(directory)).free
    if free < DISK_RESERVE_BYTES:
        raise ModelFileError("upload", f"the server's disk is nearly full ({free >> 20:,} MiB free); nothing more is "
                                       "written for a session. Tell whoever runs the server.")


def save_upload(directory: str, name: str, data: bytes, *, allow_programs: bool | None = None,
                signature: str | None = None, unknown_dim: int = 1, outputs=()) -> dict:
    """Check an uploaded file and keep it in the session's directory under its digest; return its spec."""
    name = os.path.basename(name.replace("\\", "/"))[:200] or "upload"
    if len(data) > MAX_UPLOAD_BYTES:
        raise ModelFileError(name, f"{len(data) >> 20} MiB; uploads are limited to {MAX_UPLOAD_BYTES >> 20} MiB")
    fmt = sniff(name, data)
    allow = programs_allowed() if allow_programs is None else allow_programs
    if fmt != "graphdef" and not allow:
        raise ModelFileError(name, f"{ARTICLES[fmt]} is a program (TensorFlow's security policy: models are "
                                   "programs), and this server takes only GraphDef uploads (.pb, .pbtxt). Whoever "
                                   f"starts the server can allow them with {ALLOW_SETTING}=1 (single-user or trusted "
                                   "setups); or use the command line, `python -m explorer inspect --model PATH`, on "
                                   "your own machine.")
    digest = hashlib.sha256(data).hexdigest()
    suffix = {"graphdef": ".pbtxt" if looks_like_text(data[:4096]) else ".pb", "savedmodel": ".zip",
              "keras": ".keras"}[fmt]
    directory = os.fspath(directory)
    target = os.path.join(directory, digest + suffix)
    if os.path.exists(target):
        os.utime(target)  # the newest again: the last to be evicted
    else:
        _make_room(directory, target, len(data))
        tmp = f"{target}.{os.getpid()}.part"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, target)
    os.utime(directory)  # the session is alive: its folder is not swept
    spec = {"path": target, "format": fmt, "digest": digest, "name": name, **_options(signature, unknown_dim, outputs)}
    resolve_import(spec)
    return {"import": spec}


# ---- an upload named by its digest (a page link, an experiment file) ----------------------------------------

SUFFIXES = (".pb", ".pbtxt", ".zip", ".keras")  # what save_upload names a kept upload: <digest><suffix>
_DIGEST = re.compile(r"[0-9a-f]{64}")
_SERVER_FOLDER = re.compile(r"^server-(\d+)-")


def kept_upload(directory, digest: str) -> str | None:
    """The path of the upload with this exact digest in one session's folder (a regular file), or None."""
    if not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
        return None
    for suffix in SUFFIXES:
        path = os.path.join(os.fspath(directory), digest + suffix)
        try:
            if stat.S_ISREG(os.lstat(path).st_mode):
                return path
        except OSError:
            continue
    return None


def adopt_upload(directory, digest: str, *, name: str = "", allow_programs: bool | None = None,
                 signature: str | None = None, unknown_dim: int = 1, outputs=()) -> dict | None:
    """The model with this exact digest that a session of this server (``server_root``) keeps (this one first),
    checked again as a new upload and kept in this session's own folder (its quota, its lifetime); its spec, or
    None when no session keeps it. Nothing is listed: only the full sha256 of a file's content, which cannot be
    guessed, finds it."""
    if not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
        return None
    root = server_root()
    candidates = [kept_upload(directory, digest)]
    for entry in os.scandir(root):
        if entry.name.startswith("session-") and entry.is_dir(follow_symlinks=False) and entry.path != os.fspath(directory):
            candidates.append(kept_upload(entry.path, digest))
    for path in filter(None, candidates):
        data = _read_kept(path)
        if data is None or hashlib.sha256(data).hexdigest() != digest:
            continue  # gone meanwhile (its session ended), or not what its name says
        return save_upload(directory, name or os.path.basename(path), data, allow_programs=allow_programs,
                           signature=signature, unknown_dim=unknown_dim, outputs=outputs)
    return None


def _read_kept(path: str) -> bytes | None:
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError:
        return None
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(MAX_UPLOAD_BYTES + 1)
    return data if len(data) <= MAX_UPLOAD_BYTES else None
