"""The one exception family of the explorer.

Every error that can reach a person carries a message written for that person; the page and the
command line print ``str(error)`` and nothing else.
"""

from __future__ import annotations


class ExplorerError(Exception):
    """Base class: something the explorer can explain in one sentence."""


class SpecError(ExplorerError):
    """A model spec or configuration is invalid; ``field`` names what is wrong."""

    def __init__(self, field: str, message: str):
        # Field names can come from user input: keep the message on one line and short.
        field = str(field)
        if not field.isprintable():
            field = field.encode("unicode_escape").decode("ascii")
        if len(field) > 80:
            field = field[:77] + "..."
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
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.detail = detail

    def to_dict(self) -> dict:
        return {"kind": self.kind, "message": self.message, "detail": self.detail}
