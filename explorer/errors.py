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
    """The worker process failed: ``kind`` is one of KINDS."""

    KINDS = ("crash", "timeout", "memory", "no_gpu", "tensorflow", "protocol", "busy", "limit")

    def __init__(self, kind: str, message: str, detail: str = ""):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.detail = detail

    def to_dict(self) -> dict:
        return {"kind": self.kind, "message": self.message, "detail": self.detail}
