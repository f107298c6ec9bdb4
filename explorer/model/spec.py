"""Model specs: plain data that says which model to build, checked before TensorFlow runs.

``resolve`` turns spec data of any model source (``sources.SOURCES``: {"preset": ...}, {"chain": ...},
{"stack": ...}, {"import": ...}) into that source's checked spec, or raises ``SpecError`` naming the
field that is wrong. This module holds the first two sources' spec: a preset id or an op chain
(``chain.Chain``) with parameter values, resolved into a ``ModelSpec`` whose every parameter is filled
and valid (``parse_model``).
"""

from __future__ import annotations

import json
import math
from contextlib import suppress
from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

from ..errors import SpecError, shown
from .catalog import PRESETS
from . import json_text
from .chain import Chain
from .limits import MAX_DIM, MAX_MODEL_BYTES, MAX_TENSOR_BYTES
from .hooks import hook
from .schemas import FLAG, SPEC, choice
from .sources import is_spec, source_for_data

DTYPES = ("float32", "float16", "bfloat16", "float64")
DATA_FORMATS = ("NHWC", "NCHW")
# Intermediates a knob may also return from the function (adds a consumer to that tensor).
RETURNABLE = ("none", "contraction", "bias", "norm")

# Limits a request must stay under (MAX_DIM, MAX_TENSOR_BYTES, MAX_MODEL_BYTES) live in limits.py,
# shared with layer stacks; they are imported above and stay importable from here.


@dataclass(frozen=True)
class Param:
    name: str
    kind: str  # "int", "choice" or "bool"
    help: str
    low: int = 1
    high: int = MAX_DIM
    choices: tuple[str, ...] = ()

    @cached_property
    def schema(self) -> dict:
        """Its values' JSON Schema, made once (``json_text`` keeps a validator per schema)."""
        if self.kind != "int":
            return FLAG if self.kind == "bool" else choice(self.choices)
        out_of_range = f"{{value}} is out of range; allowed {self.low}..{self.high}"
        return {"type": "integer", "minimum": self.low, "maximum": self.high, "messages": {
            "type": "expected a whole number, got {value}", "minimum": out_of_range, "maximum": out_of_range}}

    def check(self, value):
        """``value`` as this parameter takes it: a number, or text as a command line or a link gives it."""
        if self.kind == "int" and (isinstance(value, (str, np.integer)) or isinstance(value, float) and value.is_integer()):
            with suppress(ValueError):
                value = int(value)
        elif self.kind == "bool" and isinstance(value, str):
            value = _WORDS.get(value.lower(), value)
        json_text.validate(value, self.schema, f"params.{self.name}")
        return value


_WORDS = {**dict.fromkeys(("1", "true", "yes", "on"), True), **dict.fromkeys(("0", "false", "no", "off"), False)}


PARAMS: dict[str, Param] = {
    p.name: p
    for p in (
        Param("m", "int", "rows of the input (batch of tokens)"),
        Param("k", "int", "inner dimension (input features)"),
        Param("n", "int", "output features"),
        Param("batch", "int", "batch size", high=4096),
        Param("height", "int", "input height", high=8192),
        Param("width", "int", "input width", high=8192),
        Param("in_channels", "int", "input channels", high=65536),
        Param("out_channels", "int", "output channels (filters)", high=65536),
        Param("channels", "int", "channels", high=65536),
        Param("depth", "int", "input depth (Conv3D)", high=1024),
        Param("buckets", "int", "number of hash buckets", high=1 << 30),
        Param("multiplier", "int", "depthwise channel multiplier", high=64),
        Param("filter_size", "int", "filter height and width", high=15),
        Param("dtype", "choice", "element type", choices=DTYPES),
        Param("data_format", "choice", "layout of 4-D tensors", choices=DATA_FORMATS),
        Param("training", "bool", "FusedBatchNorm in training mode (computes batch statistics)"),
        Param("return_intermediate", "choice", "also return this intermediate tensor from the function", choices=RETURNABLE),
        Param("second_consumer", "bool", "give the contraction output a second consumer (an extra Identity output)"),
    )
}


DEFAULT_PARAMS = {
    "m": 4096, "k": 256, "n": 1024, "batch": 8, "height": 56, "width": 56,
    "in_channels": 32, "out_channels": 32, "channels": 32, "multiplier": 1, "filter_size": 3,
    "depth": 8, "buckets": 1000,
    "dtype": "float32", "data_format": "NHWC", "training": False,
    "return_intermediate": "none", "second_consumer": False,
}


def itemsize(dtype: str) -> int:
    # numpy has no bfloat16; it is two bytes like float16.
    return 2 if dtype == "bfloat16" else np.dtype(dtype).itemsize


def _bytes(n: float) -> str:
    """'768 MiB', '3.2 GiB', '4 TiB': the unit a reader takes in at once."""
    units = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")
    i = min(int(math.log(max(n, 1), 1024)), len(units) - 1)
    return f"{n / 1024 ** i:.3g} {units[i]}"


@dataclass(frozen=True)
class ModelSpec:
    """A fully resolved model: the chain to build and every parameter value."""

    chain: Chain
    params: tuple[tuple[str, object], ...]
    preset: str | None = None

    @property
    def source_id(self) -> str:
        return "preset" if self.preset else "chain"

    @property
    def p(self) -> dict:
        return dict(self.params)

    def to_dict(self) -> dict:
        data: dict = {"chain": self.chain.to_dict(), "params": dict(self.params)}
        if self.preset:
            data["preset"] = self.preset
        return data

    def identity(self) -> dict:
        """What makes its results (the cache's key): all of it."""
        return self.to_dict()

    def public_dict(self) -> dict:
        """The spec as a result carries it."""
        return self.to_dict()

    def cli_args(self) -> list[str]:
        """The command line's model arguments that rebuild it: the preset (or 'chain' and its parts) and the
        parameters that differ from their defaults."""
        if self.preset:
            defaults = parse_model({"preset": self.preset}).p
            head = [self.preset]
        else:
            plain = Chain().to_dict()
            fields = {k: v for k, v in self.chain.to_dict().items() if k == "contraction" or plain[k] != v}
            head = ["chain"] + [a for k, v in fields.items() for a in ("--chain", f"{k}={v}")]
            defaults = DEFAULT_PARAMS
        params = {k: v for k, v in self.params if defaults.get(k) != v}  # only what differs
        return head + [a for k, v in params.items() for a in ("--set", f"{k}={v}")]

    def sizes(self) -> list[str]:
        """Its size parameters (what a size sweep may vary)."""
        return [n for n in self.chain.param_names() if PARAMS[n].kind == "int"]

    def model_key(self) -> str:
        """What tells this model from another apart from its parameters (the what-if comparison's 'model')."""
        return self.preset or self.chain.describe()

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    def label(self) -> str:
        return self.preset or self.chain.describe()

    def with_params(self, **changes) -> "ModelSpec":
        data = self.to_dict()
        data["params"].update(changes)
        return resolve(data)

    def tensor_shapes(self) -> dict[str, tuple[int, ...]]:
        """Shapes of the inputs and of the main output, as the worker will build them."""
        c, p = self.chain, self.p
        shapes: dict[str, tuple[int, ...]] = {}
        out: tuple[int, ...]
        if c.kind != "chain":
            return _kind_shapes(c, p)
        if c.contraction == "MatMul":
            shapes["x"] = (p["m"], p["k"])
            shapes["w"] = (p["k"], p["n"])
            out, channels = (p["m"], p["n"]), p["n"]
        elif c.contraction == "BatchMatMulV2":
            shapes["x"] = (p["batch"], p["m"], p["k"])
            shapes["w"] = (p["batch"], p["k"], p["n"])
            out, channels = (p["batch"], p["m"], p["n"]), p["n"]
        elif c.contraction == "Conv3D":
            cin, cout, last = p["in_channels"], p["out_channels"], p["data_format"] == "NHWC"
            spatial = (p["depth"], p["height"], p["width"])
            shapes["x"] = (p["batch"], *spatial, cin) if last else (p["batch"], cin, *spatial)
            shapes["w"] = (p["filter_size"],) * 3 + (cin, cout)
            out, channels = ((p["batch"], *spatial, cout) if last else (p["batch"], cout, *spatial)), cout
        else:
            cin = p["in_channels"] if c.contraction != "none" else p["channels"]
            nhwc = p["data_format"] == "NHWC"
            shapes["x"] = (p["batch"], p["height"], p["width"], cin) if nhwc else (p["batch"], cin, p["height"], p["width"])
            if c.contraction == "Conv2D":
                shapes["w"] = (p["filter_size"], p["filter_size"], cin, p["out_channels"])
                channels = p["out_channels"]
            elif c.contraction == "DepthwiseConv2dNative":
                shapes["w"] = (p["filter_size"], p["filter_size"], cin, p["multiplier"])
                channels = cin * p["multiplier"]
            else:
                channels = cin
            out = (p["batch"], p["height"], p["width"], channels) if nhwc else (p["batch"], channels, p["height"], p["width"])
            if c.squeeze:
                out = tuple(d for i, d in enumerate(out) if i != (2 if nhwc else 3))
        if c.bias != "none":
            shapes["b"] = (channels,)
        if c.norm != "none":
            for name in ("scale", "offset", "mean", "variance"):
                shapes[name] = (channels,)
        if c.side_add:
            shapes["side"] = out
        shapes["out"] = out
        return shapes

    def check_size(self) -> None:
        size = itemsize(self.p.get("dtype", "int64"))
        shapes = self.tensor_shapes()
        total = 0
        for name, shape in shapes.items():
            nbytes = math.prod(shape) * size
            if nbytes > MAX_TENSOR_BYTES:
                raise SpecError(
                    "sizes",
                    f"tensor {name} would be {' × '.join(map(str, shape))} {self.p.get('dtype', 'int64')} = "
                    f"{_bytes(nbytes)}; the limit is {_bytes(MAX_TENSOR_BYTES)} per tensor, make the sizes smaller",
                )
            total += nbytes
        # Unfused graphs keep a few output-sized intermediates alive at once.
        out_bytes = math.prod(shapes["out"]) * size
        total += 6 * out_bytes
        if total > MAX_MODEL_BYTES:
            raise SpecError(
                "sizes",
                f"the model needs about {_bytes(total)}; the limit is {_bytes(MAX_MODEL_BYTES)}, make the sizes smaller",
            )


def _kind_shapes(c: Chain, p: dict) -> dict[str, tuple[int, ...]]:
    if c.kind == "hash_bucket":
        return {"x": (p["m"], p["n"]), "out": (p["m"], p["n"])}
    if c.kind in ("batchnorm_fold", "batchnorm_grad", "instance_norm"):
        nhwc = p.get("data_format", "NHWC") == "NHWC"
        x = (p["batch"], p["height"], p["width"], p["channels"]) if nhwc else (p["batch"], p["channels"], p["height"], p["width"])
        shapes: dict[str, tuple[int, ...]] = {"x": x}
        if c.kind == "batchnorm_grad":
            shapes.update(scale=(p["channels"],), offset=(p["channels"],))
        return dict(shapes, out=x)
    if c.kind == "batch_matmul_scale_add":
        return {"x": (p["batch"], p["channels"], p["m"], p["k"]), "w": (p["batch"], p["channels"], p["k"], p["n"]),
                "side": (p["batch"], 1, p["m"], p["n"]), "out": (p["batch"], p["channels"], p["m"], p["n"])}
    if c.kind == "layer_norm":
        return {"x": (p["m"], p["n"]), "out": (p["m"], p["n"])}
    raise SpecError("chain.kind", f"unknown kind {c.kind!r}")


def resolve(data):
    """Spec data of any model source (see ``sources``) as that source's checked spec; a checked spec as it is."""
    if is_spec(data):
        return data
    source = source_for_data(data)
    return hook(source.parse)(data) if source is not None else parse_model(data)


def parse_model(data, presets: dict | None = None) -> ModelSpec:
    """A preset's or an op chain's spec data (preset + params, chain + params) as a checked ``ModelSpec``: checked
    once per JSON text (a page's run asks for the same few; a ModelSpec is frozen, so one serves every caller)."""
    if presets is None:
        try:
            text = json.dumps(data, sort_keys=True)
        except (TypeError, ValueError):  # not JSON (a caller's numpy value): checked as it is
            text = None
        if text is not None and json.loads(text) == data:  # a tuple would come back a list: checked as it is
            return _parsed(text)
    return _parse_model(data, presets)


@lru_cache(maxsize=512)
def _parsed(text: str) -> ModelSpec:
    return _parse_model(json.loads(text), None)


def _parse_model(data, presets: dict | None) -> ModelSpec:
    json_text.validate(data, SPEC, root="spec")
    params_in = data.get("params") or {}
    preset_id = data.get("preset")
    defaults = dict(DEFAULT_PARAMS)
    if preset_id is not None:
        presets = PRESETS if presets is None else presets
        preset = presets.get(preset_id) if isinstance(preset_id, str) else None
        if preset is None:
            raise SpecError("preset", f"unknown preset {shown(repr(preset_id), 80)}; `python -m explorer presets` lists them")
        chain = preset.chain
        if "chain" in data and Chain.from_dict(data["chain"]) != chain:
            raise SpecError("chain", f"preset {preset_id} has a fixed chain; leave 'chain' out or drop 'preset'")
        defaults.update(preset.defaults)
    elif "chain" in data:
        chain = Chain.from_dict(data["chain"])
    else:
        raise SpecError("spec", "give a 'preset' id or a 'chain'")
    names = chain.param_names()
    for name in params_in:
        if name not in names:
            where = f"params.{name}"
            if name in PARAMS:
                raise SpecError(where, f"does not apply to {chain.describe()}; it takes {', '.join(names)}")
            raise SpecError(where, f"unknown parameter; this model takes {', '.join(names)}")
    values = {name: PARAMS[name].check(params_in.get(name, defaults[name])) for name in names}
    spec = ModelSpec(chain, tuple(values.items()), preset_id)
    _check_combination(spec)
    spec.check_size()
    return spec


def _check_combination(spec: ModelSpec) -> None:
    c, p = spec.chain, spec.p
    if c.kind != "chain":
        return
    if c.squeeze and p["width"] != 1:
        raise SpecError("params.width", "Squeeze removes the width dimension, so width must be 1")
    if c.norm != "none" and p["dtype"] == "float64":
        raise SpecError("params.dtype", "FusedBatchNorm takes float32, float16 or bfloat16, not float64")
    ret = p["return_intermediate"]
    if ret == "bias" and c.bias == "none":
        raise SpecError("params.return_intermediate", "there is no bias output to return in this chain")
    if ret == "norm" and c.norm == "none":
        raise SpecError("params.return_intermediate", "there is no normalisation output to return in this chain")
    if ret == "contraction" and c.contraction == "none":
        raise SpecError("params.return_intermediate", "there is no contraction output to return in this chain")
    if p["second_consumer"] and c.contraction == "none":
        raise SpecError("params.second_consumer", "there is no contraction output to give a second consumer")
