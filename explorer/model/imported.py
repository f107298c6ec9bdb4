"""Imported models: plain data naming a user's model file and how to feed it, checked before TensorFlow runs.

``{"import": {"path", "format", "digest", "name", "signature", "unknown_dim", "outputs"}}`` is what
the page (an upload saved by ``engine.uploads``) and the command line (``--model PATH``) hand the
engine. ``digest`` is the sha256 of the file's content: results are cached by it, never by the path,
so two sessions that upload the same model share a result and see nothing else of each other.
The path is left out of results (``public_dict``): it names a session's own temporary directory.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from ..errors import SpecError

FORMATS = ("graphdef", "savedmodel", "keras")
FORMAT_LABELS = {"graphdef": "GraphDef (.pb, .pbtxt)", "savedmodel": "SavedModel (a directory, or a .zip of one)",
                 "keras": "Keras (.keras)"}
DEFAULT_SIGNATURE = "serving_default"
MAX_UNKNOWN_DIM = 4096  # a value for a dimension the model leaves open (batch, sequence length...)
MAX_OUTPUTS = 64
MAX_NODES = 50_000  # nodes in the graph and its functions together: MobileNetV2 frozen has ~1,000
MAX_UPLOAD_BYTES = 200 << 20
FIELDS = ("path", "format", "digest", "name", "signature", "unknown_dim", "outputs", "fixed_dims")
_DIGEST = re.compile(r"[0-9a-f]{64}")  # fullmatch: "$" would take a trailing newline
_NODE_NAME = re.compile(r"[A-Za-z0-9_.\-/>]+(:[0-9]+)?")  # fullmatch: "$" would take a trailing newline


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
    """Check the fields of ``{"import": {...}}``'s inner object; every error names its field."""
    if not isinstance(data, dict):
        raise SpecError("import", "expected an object with 'format', 'digest' and 'path'")
    unknown = set(data) - set(FIELDS)
    if unknown:
        raise SpecError("import", f"unknown field(s) {sorted(unknown)}; allowed: {', '.join(FIELDS)}")
    fmt = data.get("format")
    if fmt not in FORMATS:
        raise SpecError("import.format", f"{fmt!r} is not one of {list(FORMATS)}")
    digest = data.get("digest")
    if not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
        raise SpecError("import.digest", "expected the sha256 of the model's content (64 hex digits)")
    path = data.get("path")
    if path is not None and (not isinstance(path, str) or not path or "\x00" in path):
        raise SpecError("import.path", "expected a file or directory path")
    name = data.get("name", "")
    if not isinstance(name, str) or len(name) > 200 or not name.isprintable():
        raise SpecError("import.name", "expected a short printable file name")
    signature = data.get("signature")
    if signature is not None:
        if fmt != "savedmodel":
            raise SpecError("import.signature", f"only a SavedModel has signatures, not a {fmt}")
        if not isinstance(signature, str) or not signature or len(signature) > 200 or not signature.isprintable():
            raise SpecError("import.signature", "expected a signature name such as 'serving_default'")
        if signature == DEFAULT_SIGNATURE:
            signature = None  # one spelling, one cache entry
    dim = data.get("unknown_dim", 1)
    if isinstance(dim, bool) or not isinstance(dim, int) or not 1 <= dim <= MAX_UNKNOWN_DIM:
        raise SpecError("import.unknown_dim", f"{dim!r} is out of range; allowed 1..{MAX_UNKNOWN_DIM}")
    outputs = data.get("outputs") or ()
    if outputs:
        if fmt != "graphdef":
            raise SpecError("import.outputs", f"output nodes are chosen for a GraphDef only; a {fmt} has its own")
        if not isinstance(outputs, (list, tuple)) or len(outputs) > MAX_OUTPUTS or not all(
                isinstance(o, str) and _NODE_NAME.fullmatch(o) for o in outputs):
            raise SpecError("import.outputs", f"expected up to {MAX_OUTPUTS} node names such as 'dense/BiasAdd'")
    fixed = data.get("fixed_dims", False)
    if not isinstance(fixed, bool):
        raise SpecError("import.fixed_dims", f"expected true or false, got {fixed!r}")
    return ImportSpec(fmt, digest, path, name, signature, dim, tuple(outputs), fixed)
