"""The one exception family of the explorer.

Every error that can reach a person carries a message written for that person; the page and the
command line print ``str(error)`` and nothing else.
"""

from __future__ import annotations

NAME_CHARS = 200  # a name from a user's file, as a message shows it
MESSAGE_CHARS = 4000


def shown(text, limit: int = NAME_CHARS) -> str:
    """Text from a user's file as a message shows it: control characters escaped, cut to ``limit`` characters."""
    text = str(text)
    if not text.isprintable():
        text = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in text)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def quoted(name) -> str:
    """A name in a message: 'name', escaped and cut as ``shown`` does."""
    return f"'{shown(name)}'"


def one_line(message: str) -> str:
    """A message for a person: one line (control characters escaped), at most MESSAGE_CHARS characters."""
    return shown(message, MESSAGE_CHARS)


class ExplorerError(Exception):
    """Base class: something the explorer can explain in one sentence."""


class SpecError(ExplorerError):
    """A model spec or configuration is invalid; ``field`` names what is wrong."""

    def __init__(self, field: str, message: str):
        # Field names can come from user input: keep the message on one line and short.
        field = shown(field, 80)
        message = one_line(message)
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class WorkerError(ExplorerError):
    """The worker process failed: ``kind`` is one of KINDS.

    A worker's "spec" error (a request it found invalid) reaches the caller as a ``SpecError``.
    """

    KINDS = {
        "crash": "the worker process died (the engine starts a new one for the next request)",
        "timeout": "a request overran its deadline and the worker was stopped",
        "memory": "the worker grew past its memory cap and was stopped",
        "no_gpu": "a GPU run was asked for and TensorFlow sees no GPU",
        "tensorflow": "TensorFlow failed to start, or refused or failed to run the model",
        "protocol": "the worker could not read or serve the request",
    }

    def __init__(self, kind: str, message: str, detail: str = ""):
        if kind not in self.KINDS:
            raise ValueError(f"unknown WorkerError kind {kind!r}; one of {', '.join(self.KINDS)}")
        message = one_line(message)
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.detail = detail

    def to_dict(self) -> dict:
        return {"kind": self.kind, "message": self.message, "detail": self.detail}
