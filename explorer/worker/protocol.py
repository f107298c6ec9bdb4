"""The worker's side of the pipe: JSON lines out on the original stdout, TF's log read back from stderr.

The parent (``explorer.engine.runner``) writes one JSON request per line on stdin; the worker answers
with zero or more ``{"id", "progress"}`` lines, then ``{"id", "ok": true, "result"}`` or
``{"id", "ok": false, "error"}``. Everything else TensorFlow prints goes to stderr, a file the
parent gave the worker, which is rewound before each request so that it holds that request's log.
"""

from __future__ import annotations

import json
import os
import stat
import sys
import tempfile
from contextlib import contextmanager


class NoGpu(Exception):
    """A GPU run was asked for and TensorFlow sees none."""


class BadRequest(Exception):
    """A request the worker cannot serve; the message says why."""


class Refused(Exception):
    """TensorFlow could not do what was asked, said better than its own error: ``message`` is the user's line,
    ``detail`` what TensorFlow said."""

    def __init__(self, message: str, detail: str = ""):
        super().__init__(message)
        self.message = message
        self.detail = detail


class Protocol:
    """Writes response lines on the original stdout; fd 1 is pointed at stderr for stray prints."""

    def __init__(self):
        self.out = os.fdopen(os.dup(1), "w", buffering=1)
        os.dup2(2, 1)
        sys.stdout = sys.stderr

    def send(self, message: dict) -> None:
        self.out.write(json.dumps(message, default=_jsonable) + "\n")
        self.out.flush()


def _jsonable(value):
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, (set, tuple)):
        return list(value)
    return str(value)


class StderrCapture:
    """Rewinds the stderr file before a request and reads back what was written during it."""

    def __init__(self):
        try:
            os.lseek(2, 0, os.SEEK_CUR)
            self.seekable = True
        except OSError:
            self.seekable = False

    def start(self) -> None:
        sys.stderr.flush()
        if self.seekable:
            os.ftruncate(2, 0)
            os.lseek(2, 0, os.SEEK_SET)

    def read(self) -> list[str]:
        sys.stderr.flush()
        if not self.seekable:
            return []
        size = os.lseek(2, 0, os.SEEK_CUR)
        try:
            data = os.pread(2, size, 0)
        except OSError:
            return []
        return data.decode("utf-8", "replace").splitlines()


@contextmanager
def fd2_lines(lines: list):
    """Collect what C++ writes to fd 2 (VLOG lines) meanwhile.

    When fd 2 is a regular file (the worker's), read back the bytes written after the current
    offset, leaving them in place so that a fatal message stays in the worker's log if
    TensorFlow aborts. Otherwise point fd 2 at a temporary file meanwhile and copy it on.
    """
    sys.stderr.flush()
    try:
        start = os.lseek(2, 0, os.SEEK_CUR)
        seekable = stat.S_ISREG(os.fstat(2).st_mode)
    except OSError:
        seekable = False
    if seekable:
        try:
            yield lines
        finally:
            sys.stderr.flush()
            end = os.lseek(2, 0, os.SEEK_CUR)
            data = os.pread(2, max(0, end - start), start) if end > start else b""
            lines.extend(data.decode("utf-8", "replace").splitlines())
        return
    saved = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield lines
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            data = tmp.read()
            if data:
                os.write(2, data)
            lines.extend(data.decode("utf-8", "replace").splitlines())


def error_line(message: str) -> str:
    """The line of a TF error that says what went wrong, not where ('Graph execution error:')."""
    lines = [ln.strip() for ln in message.strip().splitlines() if ln.strip()]
    skip = ("Graph execution error", "Detected at node", "[[", "in user code", "File ", "Traceback")
    useful = [ln for ln in lines if not ln.startswith(skip) and not ln.endswith(":")]
    text = useful[-1] if useful else (lines[-1] if lines else "")
    return text.split(" [Op:")[0].split("\t [[")[0].strip()
