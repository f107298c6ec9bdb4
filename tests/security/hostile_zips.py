"""Zip files as an attacker makes them: members of any name and kind, headers that say what they like.

``make`` writes an ordinary zip with ``zipfile``; ``patch`` then rewrites fields of one member's entry in
the central directory (the table a reader trusts: sizes, flags, the zip version, file type bits) and
``rename`` swaps a member's name bytes for any bytes (a name marked UTF-8 that is not).
"""

from __future__ import annotations

import io
import stat
import struct
import warnings
import zipfile

CENTRAL = struct.Struct("<4s4B4HL2L5H2L")  # zipfile's structCentralDir
FIELDS = ("signature", "create_version", "create_system", "extract_version", "reserved", "flag_bits",
          "compress_type", "time", "date", "crc", "compress_size", "file_size", "name_length", "extra_length",
          "comment_length", "disk", "internal_attr", "external_attr", "header_offset")


def make(members, compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    """members: [(name or ZipInfo, bytes)]."""
    buffer = io.BytesIO()
    with warnings.catch_warnings(), zipfile.ZipFile(buffer, "w", compression) as archive:
        warnings.simplefilter("ignore", UserWarning)  # "Duplicate name": a duplicate is the point
        for member, data in members:
            archive.writestr(member, data)
    return buffer.getvalue()


def link(name: str) -> zipfile.ZipInfo:
    """A member that is a symbolic link (Unix type bits), as `zip -y` stores one."""
    info = zipfile.ZipInfo(name)
    info.create_system = 3
    info.external_attr = (stat.S_IFLNK | 0o777) << 16
    return info


def fifo(name: str) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name)
    info.create_system = 3
    info.external_attr = (stat.S_IFIFO | 0o644) << 16
    return info


def _entries(data: bytes):
    end = data.rindex(b"PK\x05\x06")
    count, size, offset = struct.unpack("<HLL", data[end + 10:end + 20])
    position = offset
    for _ in range(count):
        values = dict(zip(FIELDS, CENTRAL.unpack_from(data, position)))
        start = position + CENTRAL.size
        name = data[start:start + values["name_length"]]
        yield position, values, name
        position = start + values["name_length"] + values["extra_length"] + values["comment_length"]


def patch(data: bytes, member: str, **fields) -> bytes:
    """The zip with ``member``'s central directory entry rewritten (e.g. file_size=10**10, extract_version=99)."""
    out = bytearray(data)
    for position, values, name in _entries(data):
        if name == member.encode():
            values.update(fields)
            CENTRAL.pack_into(out, position, *(values[f] for f in FIELDS))
            return bytes(out)
    raise KeyError(member)


def rename(data: bytes, member: str, raw: bytes, utf8_flag: bool = True) -> bytes:
    """The zip with ``member``'s name replaced by ``raw`` (same length) in both headers, flagged UTF-8."""
    old = member.encode()
    assert len(raw) == len(old)
    out = bytearray(data)
    for position, values, name in _entries(data):
        if name == old:
            start = position + CENTRAL.size
            out[start:start + len(old)] = raw
            local = values["header_offset"]
            out[local + 30:local + 30 + len(old)] = raw
            if utf8_flag:
                values["flag_bits"] |= 0x800
                CENTRAL.pack_into(out, position, *(values[f] for f in FIELDS))
                flags = struct.unpack_from("<H", out, local + 6)[0] | 0x800
                struct.pack_into("<H", out, local + 6, flags)
            return bytes(out)
    raise KeyError(member)


def of_directory(directory, prefix: str = "model") -> list[tuple[str, bytes]]:
    """A directory's files as zip members under ``prefix/`` (a SavedModel zipped as people zip it)."""
    return [(f"{prefix}/{p.relative_to(directory)}", p.read_bytes()) for p in sorted(directory.rglob("*"))
            if p.is_file()]
