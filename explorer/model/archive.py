"""One policy for every archive a model comes in: a SavedModel's .zip or directory, a .keras file.

Plain data checking (no TensorFlow): an archive's members are listed and checked before anything is
unpacked or read: their number, names (no '..', absolute paths, control characters), kinds (regular
files and directories only: no links, pipes or devices), each one's and all of their expanded sizes,
the expansion ratio (a zip bomb), compression and the zip version. Unpacking writes only the checked
members, only inside the directory it is given (``O_EXCL | O_NOFOLLOW``), counting the bytes as they
come: a zip header's sizes can lie. A directory's files are read the same way: regular files only,
opened without following a link or blocking on a pipe, never past their listed size.
"""

from __future__ import annotations

import os
import stat
import struct
import zipfile
import zlib
from dataclasses import dataclass

from ..errors import SpecError, quoted
from .op_allowlist import TEXT_HINT

MAX_MEMBERS = 2000  # a SavedModel has about 5 files, a .keras file 3
MAX_EXPANDED_BYTES = 512 << 20  # all members, expanded
MAX_MEMBER_BYTES = 512 << 20  # one member, expanded
MAX_RATIO = 200  # expanded : compressed, for a member past 1 MiB
MAX_NAME_CHARS = 1024
MAX_DEPTH = 16  # directories in a member's path
CHUNK = 1 << 20
KERAS_MEMBERS = {"config.json": 16 << 20, "metadata.json": 1 << 20, "model.weights.h5": MAX_MEMBER_BYTES}
# What reading a zip can raise besides BadZipFile: a name marked UTF-8 that is not, a newer zip version,
# an unknown compression, damaged deflate data, a truncated or lying header.
ZIP_ERRORS = (zipfile.BadZipFile, zipfile.LargeZipFile, UnicodeDecodeError, NotImplementedError, ValueError,
              EOFError, struct.error, zlib.error, RuntimeError, OSError, OverflowError)
KINDS = {stat.S_IFLNK: "a symbolic link", stat.S_IFIFO: "a named pipe", stat.S_IFCHR: "a character device",
         stat.S_IFBLK: "a block device", stat.S_IFSOCK: "a socket"}


class ModelFileError(SpecError):
    """A model file refused before anything ran; the message names the file (or member) and what is wrong."""

    def __init__(self, name: str, message: str):
        super().__init__(name or "model", message)


@dataclass(frozen=True)
class Member:
    name: str  # as the archive spells it (messages quote it, escaped and cut)
    path: str  # the checked relative path, "/"-separated
    kind: str  # "file", "dir", or what else it is ("a symbolic link" ...)
    size: int  # expanded bytes, as declared
    stored: int  # compressed bytes (a directory's file: its size)


def _path(name: str, what: str) -> str:
    if len(name) > MAX_NAME_CHARS:
        raise ModelFileError(what, f"member {quoted(name)}: a name of {len(name):,} characters; at most "
                                   f"{MAX_NAME_CHARS:,} are taken")
    if any(not c.isprintable() for c in name):
        raise ModelFileError(what, f"member {quoted(name)}: a control character in its name is refused")
    path = name.replace("\\", "/")
    if path.startswith("/") or (len(path) > 1 and path[1] == ":"):
        raise ModelFileError(what, f"member {quoted(name)}: an absolute path is refused")
    parts = [p for p in path.split("/") if p not in ("", ".")]
    if ".." in parts:
        raise ModelFileError(what, f"member {quoted(name)}: '..' in a path is refused (it would write outside the model)")
    if len(parts) > MAX_DEPTH:
        raise ModelFileError(what, f"member {quoted(name)}: a path {len(parts)} levels deep; at most {MAX_DEPTH} are taken")
    return "/".join(parts)


def check(members: list[Member], what: str, allowed: dict | None = None) -> list[Member]:
    """The members that may be unpacked, in order, or a refusal naming the first that may not.
    ``allowed``: {path: its own size limit}; any other path is refused (a .keras file's three members)."""
    if len(members) > MAX_MEMBERS:
        raise ModelFileError(what, f"{len(members):,} members; at most {MAX_MEMBERS:,} are taken")
    plan, seen, total = [], set(), 0
    for member in members:
        if member.kind not in ("file", "dir"):
            raise ModelFileError(what, f"member {quoted(member.name)}: {member.kind} is refused (only regular files "
                                       "and directories are taken)")
        if not member.path:
            continue
        if member.path.lower() in seen:
            raise ModelFileError(what, f"member {quoted(member.name)} appears twice")
        seen.add(member.path.lower())
        if member.kind == "dir" and allowed is None:
            plan.append(member)
            continue
        limit = MAX_MEMBER_BYTES if allowed is None else allowed.get(member.path)
        if limit is None:
            text = any(word in member.path.lower() for word in ("vocabulary", "_lookup_layer"))  # a text layer's asset
            raise ModelFileError(what, f"member {quoted(member.name)} is not part of a .keras file (it holds "
                                       f"{', '.join(sorted(allowed or ()))} only; assets and other files are not taken)"
                                       + (f". {TEXT_HINT}" if text else ""))
        if member.size > limit:
            raise ModelFileError(what, f"member {quoted(member.name)} expands to {_mib(member.size)}; at most "
                                       f"{_mib(limit)} per member")
        if member.size > CHUNK and member.size > MAX_RATIO * max(member.stored, 1):
            raise ModelFileError(what, f"member {quoted(member.name)} expands {member.size // max(member.stored, 1):,}:1 "
                                       f"(more than {MAX_RATIO}:1 looks like a zip bomb)")
        total += member.size
        if total > MAX_EXPANDED_BYTES:
            raise ModelFileError(what, f"expands to more than {_mib(MAX_EXPANDED_BYTES)} (at member "
                                       f"{quoted(member.name)}); that is the limit")
        plan.append(member)
    return plan


def _mib(n: int) -> str:
    return f"{n / 2**20:,.1f} MiB" if n < 10 * 2**20 else f"{n >> 20:,} MiB"


# ---- zip files --------------------------------------------------------------------------------

def open_zip(source, what: str) -> zipfile.ZipFile:
    """A zip file (a path or a file object) open for reading, or a refusal saying what is wrong with it."""
    try:
        return zipfile.ZipFile(source)
    except UnicodeDecodeError:
        raise ModelFileError(what, "a member's name is marked as UTF-8 but is not valid UTF-8; the zip is "
                                   "damaged or not made by a zip tool") from None
    except NotImplementedError as exc:
        raise ModelFileError(what, f"a member needs a newer zip reader ({exc}); zip the model with an ordinary zip "
                                   "tool (stored or deflated members)") from None
    except ZIP_ERRORS as exc:
        raise ModelFileError(what, f"a damaged or truncated zip file ({type(exc).__name__}: {exc})") from None


def zip_members(archive: zipfile.ZipFile, what: str) -> list[Member]:
    """Each entry of a zip's directory as a Member; encrypted members, compression other than stored or
    deflated and versions past what those need are refused here."""
    members = []
    infos = archive.infolist()
    if len(infos) > MAX_MEMBERS:
        raise ModelFileError(what, f"{len(infos):,} members; at most {MAX_MEMBERS:,} are taken")
    for info in infos:
        name = info.filename  # zipfile cuts a name at a NUL byte: what it reads is what would be written
        if info.flag_bits & 0x1:
            raise ModelFileError(what, f"member {quoted(name)}: an encrypted member is refused")
        if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            raise ModelFileError(what, f"member {quoted(name)}: compression method {info.compress_type} is refused "
                                       "(stored and deflated members are taken)")
        if info.extract_version > zipfile.ZIP64_VERSION:
            raise ModelFileError(what, f"member {quoted(name)}: needs zip version {info.extract_version / 10:.1f} "
                                       f"to extract; at most {zipfile.ZIP64_VERSION / 10:.1f} is taken")
        kind = stat.S_IFMT(info.external_attr >> 16) if info.create_system == 3 else 0  # writestr: no type, a file
        members.append(Member(name, _path(name, what), _kind(kind, info.is_dir()), info.file_size,
                              info.compress_size))
    return members


def _kind(mode_type: int, is_dir: bool) -> str:
    """A member's kind from its file type bits (0: none stored, an ordinary file or a directory by its name)."""
    if mode_type in KINDS:
        return KINDS[mode_type]
    if mode_type == stat.S_IFDIR or (not mode_type and is_dir):
        return "dir"
    return "file" if mode_type in (0, stat.S_IFREG) else "something other than a file"


def check_zip(archive: zipfile.ZipFile, what: str, allowed: dict | None = None) -> list[Member]:
    return check(zip_members(archive, what), what, allowed)


def unpack_zip(path: str, dest: str, what: str, allowed: dict | None = None) -> None:
    """Every checked member of the zip at ``path`` written under ``dest`` (an empty directory the caller owns
    and removes): nothing outside it, no member past its declared size, the total within the limit."""
    dest = os.path.realpath(dest)
    with open_zip(path, what) as archive:
        plan = check_zip(archive, what, allowed)
        infos = {info.filename: info for info in archive.infolist()}
        written = 0
        for member in plan:
            target = os.path.join(dest, *member.path.split("/"))
            parent = target if member.kind == "dir" else os.path.dirname(target)
            os.makedirs(parent, mode=0o700, exist_ok=True)
            if os.path.commonpath([dest, os.path.realpath(parent)]) != dest:
                raise ModelFileError(what, f"member {quoted(member.name)} would land outside the model's directory")
            if member.kind == "dir":
                continue
            try:
                source = archive.open(infos[member.name])
            except ZIP_ERRORS as exc:
                raise ModelFileError(what, f"member {quoted(member.name)} cannot be read ({type(exc).__name__}: "
                                           f"{exc})") from None
            written += _copy(source, _create(target), member, what, MAX_EXPANDED_BYTES - written)


def _create(target: str):
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    return os.fdopen(fd, "wb")


def _copy(source, out, member: Member, what: str, budget: int) -> int:
    """Copy at most ``member.size`` bytes (and ``budget``): a member that holds more than it declares is refused."""
    count = 0
    with source, out:
        try:
            while chunk := source.read(CHUNK):
                count += len(chunk)
                if count > member.size or count > budget:
                    raise ModelFileError(what, f"member {quoted(member.name)} holds more than its header says "
                                               f"({_mib(member.size)}); the zip is damaged or made to mislead")
                out.write(chunk)
        except ZIP_ERRORS as exc:
            raise ModelFileError(what, f"member {quoted(member.name)} is damaged ({type(exc).__name__}: {exc})") from None
    return count


# ---- directories ------------------------------------------------------------------------------

def directory_members(root: str, what: str) -> list[Member]:
    """A directory's entries as Members, read with lstat (a link is listed as a link, never followed);
    the walk stops past MAX_MEMBERS, so a directory of a million files is refused quickly."""
    members, pending = [], [("", root)]
    while pending:
        rel, directory = pending.pop()
        below = []
        with os.scandir(directory) as entries:
            for entry in sorted(entries, key=lambda e: e.name):
                info = entry.stat(follow_symlinks=False)
                kind = stat.S_IFMT(info.st_mode)
                path = f"{rel}/{entry.name}" if rel else entry.name
                members.append(Member(path, _path(path, what), _kind(kind, False),
                                      info.st_size if kind == stat.S_IFREG else 0, info.st_size))
                if len(members) > MAX_MEMBERS:
                    raise ModelFileError(what, f"more than {MAX_MEMBERS:,} files; at most {MAX_MEMBERS:,} are taken")
                if kind == stat.S_IFDIR:
                    below.append((path, entry.path))
        pending.extend(reversed(below))  # depth first, in name order
    return members


def read_member(root: str, member: Member, what: str):
    """Chunks of a directory's regular file, opened without following a link or waiting on a pipe, and
    never past the size it was listed with (a file that grows meanwhile is refused)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(os.path.join(root, *member.path.split("/")), flags)
    except OSError as exc:
        raise ModelFileError(what, f"member {quoted(member.name)} cannot be opened ({exc.strerror})") from None
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ModelFileError(what, f"member {quoted(member.name)} is no longer a regular file")
        count = 0
        while chunk := handle.read(CHUNK):
            count += len(chunk)
            if count > member.size:
                raise ModelFileError(what, f"member {quoted(member.name)} grew while it was read")
            yield chunk


def copy_directory(root: str, dest: str, what: str) -> None:
    """The checked regular files and directories of ``root`` copied under ``dest`` (which the caller owns)."""
    for member in check(directory_members(root, what), what):
        target = os.path.join(dest, *member.path.split("/"))
        if member.kind == "dir":
            os.makedirs(target, mode=0o700, exist_ok=True)
            continue
        os.makedirs(os.path.dirname(target), mode=0o700, exist_ok=True)
        with _create(target) as out:
            for chunk in read_member(root, member, what):
                out.write(chunk)
