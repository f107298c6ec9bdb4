"""The built-in model sources in a page link: a few short words each, not their JSON.

Each model source names its link words in ``sources.SOURCES`` (``link``): an object with

    keys                               the query keys it reads (its id first)
    to_query(data) -> {key: text}      a checked spec's JSON as query parameters (a list: the key repeated), only what differs from
                                       the source's defaults (a preset's own sizes, a ready stack by name)
    from_query(params) -> (data, [ignored])   read back; a part that is wrong is left out and named
                                       ("m=abc (expected a whole number)"); SpecError when nothing is left

A source without one travels as ``<id>=<its JSON>`` (``JsonLink``). docs/experiments.md lists every word.
"""

from __future__ import annotations

import json
from typing import Protocol

from ..errors import SpecError
from . import json_text
from .catalog import PRESETS
from .chain import ACTIVATIONS, BIASES, CONTRACTIONS, KINDS, NORMS, Chain
from .imported import FORMATS, resolve_import
from .spec import DEFAULT_PARAMS, PARAMS, parse_model, resolve
from .stack import parse as parse_stack_data
from .stack_examples import NAMES as STACK_NAMES
from .stack_examples import example

MAX_WORDS = 200  # a parameter's text in an "ignored" line


class Link(Protocol):
    """A source's link words, as the module's doc describes them."""

    @property
    def keys(self) -> tuple[str, ...]: ...

    def to_query(self, data: dict) -> dict[str, str]: ...

    def from_query(self, params: dict) -> tuple[dict, list[str]]: ...


def word(value) -> str:
    """A value as the link writes it: true/false, numbers and names as they are."""
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def _short(text: str) -> str:
    text = str(text)
    return text if len(text) <= MAX_WORDS else text[:MAX_WORDS - 1] + "…"


class _Params:
    """Sources whose spec is an op chain with size and type parameters (presets, op chains): each parameter
    is a key of its own (``m=4096``), written where it differs from the model's default."""

    keys: tuple[str, ...] = ()

    def _params_from(self, data: dict, params: dict, takes: list[str], label: str) -> tuple[dict, list[str]]:
        given = {name: params[name] for name in takes if name in params}
        ignored = [f"{name}={_short(params[name])} ({label} has no such parameter)"
                   for name in PARAMS if name in params and name not in takes]
        while True:
            try:
                parse_model(dict(data, params=given))
                return dict(data, params=given), ignored
            except SpecError as exc:
                name = exc.field.removeprefix("params.")
                if name in given:
                    ignored.append(f"{name}={_short(given.pop(name))} ({exc.message})")
                elif exc.field == "sizes" and given:  # too big together: the model's own sizes instead
                    ignored.append(", ".join(f"{k}={_short(v)}" for k, v in given.items()) + f" ({exc.message})")
                    given = {}
                else:
                    raise


class PresetLink(_Params):
    keys = ("preset", *PARAMS)

    def to_query(self, data: dict) -> dict[str, str]:
        spec = resolve(data)
        defaults = parse_model({"preset": spec.preset}).p
        return {"preset": spec.preset, **{k: word(v) for k, v in spec.p.items() if defaults.get(k) != v}}

    def from_query(self, params: dict) -> tuple[dict, list[str]]:
        preset = PRESETS.get(params.get("preset", ""))
        if preset is None:
            raise SpecError("preset", f"unknown preset {_short(str(params.get('preset', '')))!r}")
        return self._params_from({"preset": preset.id}, params, preset.chain.param_names(), preset.title)


class ChainLink(_Params):
    """``chain=Conv2D-BiasAdd-Swish``: the chain's ops in order (Squeeze, SideAdd and Pad as words of their
    own, a special model by its kind), then its parameters."""

    keys = ("chain", *PARAMS)
    WORDS = {"squeeze": "Squeeze", "side_add": "SideAdd", "pad": "Pad"}

    def to_query(self, data: dict) -> dict[str, str]:
        chain = resolve(data).chain
        if chain.kind != "chain":
            words = [chain.kind] + ([chain.activation] if chain.activation != "none" else [])
        else:
            words = [w for w in (("Pad" if chain.pad else ""), chain.contraction, ("Squeeze" if chain.squeeze else ""),
                                 chain.bias, chain.norm, ("SideAdd" if chain.side_add else ""), chain.activation)
                     if w and w != "none"]
        return {"chain": "-".join(words), **{k: word(v) for k, v in resolve(data).p.items()
                                              if DEFAULT_PARAMS.get(k) != v}}

    def from_query(self, params: dict) -> tuple[dict, list[str]]:
        fields: dict = {"contraction": "none", "bias": "none", "norm": "none", "activation": "none"}
        flags = {v: k for k, v in self.WORDS.items()}
        for part in filter(None, params.get("chain", "").split("-")):
            for name, allowed in (("contraction", CONTRACTIONS), ("bias", BIASES), ("norm", NORMS),
                                  ("activation", ACTIVATIONS), ("kind", KINDS)):
                if part in allowed and part != "none":
                    fields[name] = part
                    break
            else:
                if part not in flags:
                    raise SpecError("chain", f"{_short(part)!r} is not an op of a chain (such as Conv2D, BiasAdd, "
                                             "FusedBatchNorm, Relu, Squeeze, SideAdd)")
                fields[flags[part]] = True
        chain = Chain.from_dict(fields)
        return self._params_from({"chain": chain.to_dict()}, params, chain.param_names(), chain.describe())


class StackLink:
    """``stack=resnet_basic_block`` for a ready stack as it is; ``stack={...}`` (its JSON) once edited."""

    keys = ("stack",)

    def to_query(self, data: dict) -> dict[str, str]:
        stack = resolve(data).source
        for name in STACK_NAMES:
            if example(name) == stack:
                return {"stack": name}
        return {"stack": json.dumps(stack, separators=(",", ":"))}

    def from_query(self, params: dict) -> tuple[dict, list[str]]:
        text = params.get("stack", "")
        if text in STACK_NAMES:
            return {"stack": example(text)}, []
        if not text.lstrip().startswith("{"):
            raise SpecError("stack", f"no ready stack {_short(text)!r}; one of {', '.join(STACK_NAMES)}, or the "
                                     "stack's JSON")
        data = json_text.load(text, "stack", "a layer stack")
        parse_stack_data(data)
        return {"stack": data}, []


class ImportLink:
    """``import=<sha256>`` and how the model is fed; ``name`` and ``fmt`` say what to upload when the server no
    longer keeps it. The path never travels: a link names content, never a file of the server."""

    keys = ("import", "name", "fmt", "dim", "sig", "out", "fixed")

    def to_query(self, data: dict) -> dict[str, str]:
        spec = resolve(data)
        out = {"import": spec.digest}
        if spec.name:
            out["name"] = spec.name
        if spec.format != FORMATS[0]:
            out["fmt"] = spec.format
        if spec.unknown_dim != 1:
            out["dim"] = str(spec.unknown_dim)
        if spec.signature:
            out["sig"] = spec.signature
        if spec.outputs:
            out["out"] = list(spec.outputs)
        if spec.fixed_dims:
            out["fixed"] = "true"
        return out

    def from_query(self, params: dict) -> tuple[dict, list[str]]:
        data: dict = {"digest": params.get("import", "").lower(), "format": params.get("fmt", FORMATS[0])}
        if params.get("name"):
            data["name"] = params["name"]
        if "dim" in params:
            data["unknown_dim"] = json_text.number_or_text(params["dim"])
        if params.get("sig"):
            data["signature"] = params["sig"]
        if params.get("out"):
            data["outputs"] = [o.strip() for o in params["out"].split(",") if o.strip()]
        if "fixed" in params:
            data["fixed_dims"] = {"true": True, "false": False}.get(params["fixed"], params["fixed"])
        resolve_import(data)
        return {"import": data}, []


class JsonLink:
    """Any other source: ``<id>=<its JSON spec>``."""

    def __init__(self, source_id: str):
        self.keys: tuple[str, ...] = (source_id,)

    def to_query(self, data: dict) -> dict[str, str]:
        return {self.keys[0]: json.dumps(resolve(data).public_dict(), separators=(",", ":"), sort_keys=True)}

    def from_query(self, params: dict) -> tuple[dict, list[str]]:
        data = json_text.load(params.get(self.keys[0], ""), self.keys[0], "a model spec")
        if not isinstance(data, dict) or self.keys[0] not in data:
            raise SpecError(self.keys[0], f"expected the model's JSON spec, {{\"{self.keys[0]}\": ...}}")
        resolve(data)
        return data, []


PRESET = PresetLink()
CHAIN = ChainLink()
STACK = StackLink()
IMPORT = ImportLink()
