"""Imported models: plain data naming a user's model file and how to feed it, checked before TensorFlow runs.

``{"import": {"path", "format", "digest", "name", "signature", "unknown_dim", "outputs"}}`` is what
the page (an upload saved by ``engine.uploads``) and the command line (``--model PATH``) hand the
engine. ``digest`` is the sha256 of the file's content: results are cached by it, never by the path,
so two sessions that upload the same model share a result and see nothing else of each other.
The path is left out of results (``public_dict``): it names a session's own temporary directory.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from ..errors import SpecError
from . import json_text
from .schemas import IMPORT, IMPORT_FORMATS as FORMATS, MAX_UNKNOWN_DIM  # noqa: F401 (read from here)

FORMAT_LABELS = {"graphdef": "GraphDef (.pb, .pbtxt)", "savedmodel": "SavedModel (a directory, or a .zip of one)",
                 "keras": "Keras (.keras)"}
DEFAULT_SIGNATURE = "serving_default"
MAX_NODES = 50_000  # nodes in the graph and its functions together: MobileNetV2 frozen has ~1,000
MAX_UPLOAD_BYTES = 200 << 20
_DEFAULTS = {"format": None, "digest": None, "path": None, "name": "", "signature": None, "unknown_dim": 1,
             "fixed_dims": False}


@dataclass(frozen=True)
class ImportSpec:
    """A user's model file, its format, the signature to call and the value of unknown dimensions."""

    format: str
    digest: str
    path: str | None = None  # None in a result: the worker needs it, a reader of the result does not
    name: str = ""
    signature: str | None = None  # SavedModel only; None means serving_default
    unknown_dim: int = 1
    outputs: tuple[str, ...] = ()  # GraphDef only; empty means the nodes nothing consumes
    # False: traced as served (unknown dimensions stay unknown, ``unknown_dim`` only sizes the values fed);
    # True: traced with them fixed to ``unknown_dim``, and the result says what that changed.
    fixed_dims: bool = False

    preset = None
    chain = None
    source_id = "import"  # sources.SOURCES

    @property
    def p(self) -> dict:
        # What the benchmark's agreement check reads; imported models compare float outputs.
        return {"dtype": "float32"}

    @property
    def params(self) -> tuple:
        return ()

    def identity(self) -> dict:
        """What makes a result: the content and how it is fed, not where the file lies or its name."""
        data = {"format": self.format, "digest": self.digest, "unknown_dim": self.unknown_dim}
        if self.signature:
            data["signature"] = self.signature
        if self.outputs:
            data["outputs"] = list(self.outputs)
        if self.fixed_dims:
            data["fixed_dims"] = True
        return {"import": data}

    def public_dict(self) -> dict:
        data = self.identity()
        if self.name:
            data["import"]["name"] = self.name
        return data

    def to_dict(self) -> dict:
        data = self.public_dict()
        if self.path:
            data["import"]["path"] = self.path
        return data

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    def label(self) -> str:
        return f"{self.name or 'imported model'} ({FORMAT_LABELS[self.format].split(' (')[0]})"

    def cli_args(self) -> list[str]:
        """The command line's options for this model (the file as the user names it on their own disk)."""
        args = ["--model", self.name or "MODEL"]
        if self.signature:
            args += ["--signature", self.signature]
        if self.unknown_dim != 1:
            args += ["--dim", str(self.unknown_dim)]
        for output in self.outputs:
            args += ["--output", output]
        if self.fixed_dims:
            args.append("--fix-dims")
        return args

    def check_size(self) -> None:
        """Tensor sizes are known only once the worker reads the model's input specs; it checks them."""

    def sizes(self) -> list[str]:
        return []  # a file's sizes are its own

    def model_key(self) -> str:
        return json.dumps(self.identity(), sort_keys=True)


def parse_import(data: dict) -> ImportSpec:
    """The spec form the engine carries: {"import": {...}}."""
    if set(data) != {"import"}:
        raise SpecError("spec", f"an imported model takes no other field; got {sorted(set(data) - {'import'})}")
    return resolve_import(data["import"])


def resolve_import(data) -> ImportSpec:
    """Check the fields of ``{"import": {...}}``'s inner object (``schemas.IMPORT``); every error names its field."""
    if isinstance(data, dict):  # an absent field is its default; empty outputs of any kind mean none
        data = {**_DEFAULTS, **data, "outputs": data.get("outputs") or None}
    json_text.validate(data, IMPORT, "import", in_order=True)
    signature = None if data["signature"] == DEFAULT_SIGNATURE else data["signature"]  # one spelling, one cache entry
    return ImportSpec(data["format"], data["digest"], data["path"], data["name"], signature, int(data["unknown_dim"]),
                      tuple(data["outputs"] or ()), data["fixed_dims"])
