"""A small JSON input (an experiment file, a lesson file, a link's JSON part) read the one way every input is:
a size limit, UTF-8, valid JSON, and a SpecError naming the field when any of it fails."""

from __future__ import annotations

import json

from ..errors import SpecError


def load(text: str | bytes, field: str, what: str, max_bytes: int | None = None):
    """The parsed JSON of ``text``; ``field`` names the input in the error, ``what`` says what it should be
    ("an experiment", "a lesson"), ``max_bytes`` bounds a file's size."""
    if isinstance(text, bytes):
        if max_bytes is not None and len(text) > max_bytes:
            raise SpecError(field, f"{_size(len(text))}; {what} file is at most {_size(max_bytes)}")
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError:
            raise SpecError(field, f"not a text file ({what} is JSON)") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise SpecError(field, f"not valid JSON: {exc}") from None


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n >> 10} KiB"
