"""Model specs: plain data that says which small model to build, checked before TensorFlow runs.

A spec is either a preset id with parameter values, or an op chain
(contraction -> [squeeze] -> bias -> normalisation -> [side add] -> activation) with parameter
values. ``resolve`` turns either into a ``ModelSpec`` whose every parameter is filled and valid,
or raises ``SpecError`` naming the field that is wrong.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np

from .errors import SpecError

CONTRACTIONS = ("MatMul", "BatchMatMulV2", "Conv2D", "DepthwiseConv2dNative", "Conv3D", "none")
BIASES = ("none", "BiasAdd", "Add")
NORMS = ("none", "FusedBatchNorm")
ACTIVATIONS = (
    "none", "Relu", "Relu6", "Elu", "LeakyRelu", "Tanh", "Sigmoid",
    "GeluApproximate", "GeluExact", "Swish", "HardSwish", "Mish", "LeakyReluMax",
)
# Models that are not a contraction chain: one builder each, for the remapper patterns that match
# other op shapes (see catalog.py).
KINDS = ("chain", "hash_bucket", "batchnorm_fold", "batch_matmul_scale_add", "layer_norm", "instance_norm",
         "batchnorm_grad")
DTYPES = ("float32", "float16", "bfloat16", "float64")
DATA_FORMATS = ("NHWC", "NCHW")
# Intermediates a knob may also return from the function (adds a consumer to that tensor).
RETURNABLE = ("none", "contraction", "bias", "norm")

# Limits a request must stay under; the page and the CLI state them.
MAX_DIM = 1 << 20
MAX_TENSOR_BYTES = 512 << 20
MAX_MODEL_BYTES = 2 << 30


@dataclass(frozen=True)
class Param:
    name: str
    kind: str  # "int", "choice" or "bool"
    help: str
    low: int = 1
    high: int = MAX_DIM
    choices: tuple[str, ...] = ()

    def check(self, value):
        where = f"params.{self.name}"
        if self.kind == "int":
            if isinstance(value, bool) or not isinstance(value, (int, np.integer, str, float)):
                raise SpecError(where, f"expected a whole number, got {value!r}")
            try:
                number = int(value) if not isinstance(value, float) else value
            except ValueError:
                raise SpecError(where, f"expected a whole number, got {value!r}") from None
            if isinstance(number, float):
                if not number.is_integer():
                    raise SpecError(where, f"expected a whole number, got {value!r}")
                number = int(number)
            if not self.low <= number <= self.high:
                raise SpecError(where, f"{number} is out of range; allowed {self.low}..{self.high}")
            return number
        if self.kind == "bool":
            if isinstance(value, bool):
                return value
            if isinstance(value, str) and value.lower() in ("1", "true", "yes", "on"):
                return True
            if isinstance(value, str) and value.lower() in ("0", "false", "no", "off"):
                return False
            raise SpecError(where, f"expected true or false, got {value!r}")
        if not isinstance(value, str) or value not in self.choices:
            raise SpecError(where, f"{value!r} is not one of {list(self.choices)}")
        return value


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


@dataclass(frozen=True)
class Chain:
    contraction: str = "MatMul"
    squeeze: bool = False
    bias: str = "BiasAdd"
    norm: str = "none"
    side_add: bool = False
    activation: str = "none"
    pad: bool = False  # an explicit Pad before a Conv3D (the Pad+Conv3D pattern)
    kind: str = "chain"

    def __post_init__(self):
        if self.kind != "chain":  # the special models use only kind (and activation)
            for name, value in (("contraction", "none"), ("bias", "none"), ("norm", "none"), ("squeeze", False),
                                ("side_add", False), ("pad", False)):
                object.__setattr__(self, name, value)

    @staticmethod
    def from_dict(data) -> "Chain":
        if not isinstance(data, dict):
            raise SpecError("chain", "expected an object with contraction, bias, norm, activation")
        unknown = set(data) - set(Chain.__dataclass_fields__)
        if unknown:
            raise SpecError("chain", f"unknown field(s) {sorted(unknown)}")
        values = {}
        kind = data.get("kind", "chain")
        if kind not in KINDS:
            raise SpecError("chain.kind", f"{kind!r} is not one of {list(KINDS)}")
        values["kind"] = kind
        for name, allowed in (("contraction", CONTRACTIONS), ("bias", BIASES), ("norm", NORMS), ("activation", ACTIVATIONS)):
            value = data.get(name, getattr(Chain, name))
            if value not in allowed:
                raise SpecError(f"chain.{name}", f"{value!r} is not one of {list(allowed)}")
            values[name] = value
        for name in ("squeeze", "side_add", "pad"):
            value = data.get(name, False)
            if not isinstance(value, bool):
                raise SpecError(f"chain.{name}", f"expected true or false, got {value!r}")
            values[name] = value
        chain = Chain(**values)
        chain.check()
        return chain

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    @property
    def is_4d(self) -> bool:
        return self.contraction in ("Conv2D", "DepthwiseConv2dNative", "none")

    def check(self) -> None:
        """Combinations the builder cannot make, explained before anything runs."""
        if self.kind != "chain":
            if self.kind == "instance_norm" and self.activation not in ("none", "Relu", "LeakyRelu"):
                raise SpecError("chain.activation", "instance norm fuses with Relu or LeakyRelu only; choose one or none")
            return
        if self.contraction == "none" and self.norm == "none" and self.activation == "none":
            raise SpecError("chain.contraction", "a chain needs a contraction, a FusedBatchNorm or an activation")
        if self.pad and self.contraction != "Conv3D":
            raise SpecError("chain.pad", "the explicit Pad is the Pad+Conv3D pattern; it needs Conv3D")
        if self.contraction == "Conv3D" and self.norm != "none":
            raise SpecError("chain.norm", "FusedBatchNorm after Conv3D is not supported here; choose no normalisation")
        if self.contraction == "none" and self.bias != "none":
            raise SpecError("chain.bias", "a bias follows a contraction; choose a contraction or no bias")
        if self.squeeze and self.contraction != "Conv2D":
            raise SpecError("chain.squeeze", "Squeeze between contraction and bias is the Conv2D+Squeeze+BiasAdd pattern; it needs Conv2D")
        if self.squeeze and self.norm != "none":
            raise SpecError("chain.norm", "after a Squeeze the tensor is 3-D; FusedBatchNorm needs 4-D")
        if self.norm != "none" and not self.is_4d:
            raise SpecError("chain.norm", f"FusedBatchNorm needs a 4-D tensor; {self.contraction} makes a 2-D or 3-D one")

    def param_names(self) -> list[str]:
        if self.kind != "chain":
            return list(KIND_PARAMS[self.kind])
        if self.contraction == "MatMul":
            names = ["m", "k", "n"]
        elif self.contraction == "BatchMatMulV2":
            names = ["batch", "m", "k", "n"]
        elif self.contraction == "Conv2D":
            names = ["batch", "height", "width", "in_channels", "out_channels", "filter_size", "data_format"]
        elif self.contraction == "DepthwiseConv2dNative":
            names = ["batch", "height", "width", "in_channels", "multiplier", "filter_size", "data_format"]
        elif self.contraction == "Conv3D":
            names = ["batch", "depth", "height", "width", "in_channels", "out_channels", "filter_size", "data_format"]
        else:
            names = ["batch", "height", "width", "channels", "data_format"]
        names.append("dtype")
        if self.norm != "none":
            names.append("training")
        names += ["return_intermediate", "second_consumer"]
        return names

    def describe(self) -> str:
        if self.kind != "chain":
            text = KIND_LABELS[self.kind]
            return text + (f" + {ACTIVATION_LABELS[self.activation]}" if self.activation != "none" else "")
        parts = []
        if self.pad:
            parts.append("Pad")
        if self.contraction != "none":
            parts.append(self.contraction)
        if self.squeeze:
            parts.append("Squeeze")
        if self.bias != "none":
            parts.append(self.bias)
        if self.norm != "none":
            parts.append(self.norm)
        if self.side_add:
            parts.append("Add")
        if self.activation != "none":
            parts.append(ACTIVATION_LABELS[self.activation])
        return " + ".join(parts)


ACTIVATION_LABELS = {
    "none": "none", "Relu": "Relu", "Relu6": "Relu6", "Elu": "Elu", "LeakyRelu": "LeakyRelu",
    "Tanh": "Tanh", "Sigmoid": "Sigmoid", "GeluApproximate": "GELU (approximate)",
    "GeluExact": "GELU (exact)", "Swish": "Swish", "HardSwish": "HardSwish", "Mish": "Mish",
    "LeakyReluMax": "LeakyRelu as Maximum(x*0.2, x)",
}

KIND_PARAMS = {
    "hash_bucket": ("m", "n", "buckets"),
    "batchnorm_fold": ("batch", "height", "width", "channels", "data_format", "dtype"),
    "batch_matmul_scale_add": ("batch", "channels", "m", "k", "n", "dtype"),
    "layer_norm": ("m", "n", "dtype"),
    "instance_norm": ("batch", "height", "width", "channels", "dtype"),
    "batchnorm_grad": ("batch", "height", "width", "channels", "dtype"),
}
KIND_LABELS = {
    "hash_bucket": "AsString + StringToHashBucketFast",
    "batchnorm_fold": "FusedBatchNorm (inference, constant statistics)",
    "batch_matmul_scale_add": "BatchMatMulV2 + Mul + AddV2",
    "layer_norm": "Mean + SquaredDifference + Mean + Rsqrt + Mul + AddV2 (layer norm)",
    "instance_norm": "Mean + SquaredDifference + Mean + Rsqrt + Mul + AddV2 (instance norm)",
    "batchnorm_grad": "FusedBatchNorm + Relu, and their gradients (training)",
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
    def p(self) -> dict:
        return dict(self.params)

    def to_dict(self) -> dict:
        data = {"chain": self.chain.to_dict(), "params": dict(self.params)}
        if self.preset:
            data["preset"] = self.preset
        return data

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
        shapes = {"x": x}
        if c.kind == "batchnorm_grad":
            shapes.update(scale=(p["channels"],), offset=(p["channels"],))
        return dict(shapes, out=x)
    if c.kind == "batch_matmul_scale_add":
        return {"x": (p["batch"], p["channels"], p["m"], p["k"]), "w": (p["batch"], p["channels"], p["k"], p["n"]),
                "side": (p["batch"], 1, p["m"], p["n"]), "out": (p["batch"], p["channels"], p["m"], p["n"])}
    if c.kind == "layer_norm":
        return {"x": (p["m"], p["n"]), "out": (p["m"], p["n"])}
    raise SpecError("chain.kind", f"unknown kind {c.kind!r}")


def resolve(data, presets: dict | None = None) -> ModelSpec:
    """Turn spec data (preset + params, or chain + params) into a checked ModelSpec."""
    if isinstance(data, ModelSpec):
        return data
    if not isinstance(data, dict):
        raise SpecError("spec", "expected an object with 'preset' or 'chain', and 'params'")
    unknown = set(data) - {"preset", "chain", "params"}
    if unknown:
        raise SpecError("spec", f"unknown field(s) {sorted(unknown)}")
    params_in = data.get("params")
    params_in = {} if params_in is None else params_in
    if not isinstance(params_in, dict):
        raise SpecError("params", "expected an object of name: value")
    preset_id = data.get("preset")
    defaults = dict(DEFAULT_PARAMS)
    if preset_id is not None:
        if presets is None:
            from .catalog import PRESETS as presets
        preset = presets.get(preset_id) if isinstance(preset_id, str) else None
        if preset is None:
            raise SpecError("preset", f"unknown preset {preset_id!r}; `python -m explorer presets` lists them")
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
