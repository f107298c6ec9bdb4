"""The layer types a layer stack may use: one table of each type's fields, ranges, defaults and help.

``stack.parse`` checks a stack against it; the page's reference table and ``stacks --layers`` print it
(``field_help``); ``worker/models/stack.py`` builds each type with its Keras 3 layer.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..errors import shown
from .limits import MAX_DIM

# The activations of the presets, by the names the page shows (worker/models/stack.py maps them to Keras).
ACTIVATIONS = ("none", "relu", "relu6", "elu", "leaky_relu", "tanh", "sigmoid",
               "gelu_approximate", "gelu_exact", "swish", "hard_swish", "mish")


@dataclass(frozen=True)
class F:
    """One field of a layer type: its kind, range or choices, default, and a line of help."""

    name: str
    kind: str  # int | float | bool | choice | int_or_tuple | names | shape
    help: str
    default: object = None
    low: float = 1
    high: float = 4096
    choices: tuple = ()
    required: bool = False

    def check(self, value, spatial: int = 2):
        k = self.kind
        if k == "int":
            return whole(value, self.low, self.high)
        if k == "float":
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
                    or not self.low <= value <= self.high:
                raise ValueError(f"expected a number {self.low:g}..{self.high:g}, got {shown(repr(value), 60)}")
            return float(value)
        if k == "bool":
            if not isinstance(value, bool):
                raise ValueError(f"expected true or false, got {shown(repr(value), 60)}")
            return value
        if k == "choice":
            if not isinstance(value, str) or value not in self.choices:
                raise ValueError(f"expected one of {', '.join(self.choices)}; got {shown(repr(value), 60)}")
            return value
        if k == "int_or_tuple":  # kernel_size, strides, pool_size: n or [n, n(, n)]
            if isinstance(value, list):
                if len(value) != spatial:
                    raise ValueError(f"expected a whole number or a list of {spatial}, got {shown(repr(value), 60)}")
                return tuple(whole(v, self.low, self.high) for v in value)
            return (whole(value, self.low, self.high),) * spatial
        if k == "names":
            if not isinstance(value, list) or not self.low <= len(value) <= self.high \
                    or not all(isinstance(v, str) and v for v in value):
                raise ValueError(f"expected a list of {int(self.low)}..{int(self.high)} layer names, got {shown(repr(value), 60)}")
            return tuple(value)
        if k == "shape":  # a Reshape target without the batch; one -1 allowed
            if not isinstance(value, list) or not 1 <= len(value) <= 4:
                raise ValueError(f"expected a list of 1..4 sizes (batch excluded), got {shown(repr(value), 60)}")
            dims = tuple(-1 if v == -1 and not isinstance(v, bool) else whole(v, 1, MAX_DIM) for v in value)
            if dims.count(-1) > 1:
                raise ValueError(f"at most one -1, got {shown(repr(value), 60)}")
            return dims
        raise AssertionError(k)


def whole(value, low, high) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (
            isinstance(value, float) and not value.is_integer()) or not low <= value <= high:
        raise ValueError(f"expected a whole number {int(low)}..{int(high)}, got {shown(repr(value), 60)}")
    return int(value)


def _act(default="none"):
    return F("activation", "choice", "activation applied after the layer", default, choices=ACTIVATIONS)


_BIAS = F("use_bias", "bool", "add a bias vector", True)
_PAD = F("padding", "choice", "'same' keeps the spatial size at stride 1", "same", choices=("same", "valid"))
_EPS = F("epsilon", "float", "added to the variance", 1e-3, low=1e-12, high=1.0)
_CENTER = F("center", "bool", "learned offset (beta)", True)
_SCALE = F("scale", "bool", "learned scale (gamma)", True)


def _kernel(what):
    return F("kernel_size", "int_or_tuple", f"filter {what}", 3, high=15)


def _strides(what, default=1):
    return F("strides", "int_or_tuple", f"step {what}", default, high=8)


def _pool():
    return (F("pool_size", "int_or_tuple", "window height, width", 2, high=15),
            F("strides", "int_or_tuple", "step (default: the pool size)", None, high=15), _PAD)


# The one table of layer types: type -> (input rank needed or None, spatial rank of tuples, fields).
LAYER_TYPES: dict[str, tuple] = {
    "Dense": (None, 0, (F("units", "int", "output features", required=True, high=65536), _act(), _BIAS)),
    "Conv2D": (4, 2, (F("filters", "int", "output channels", required=True), _kernel("height, width"),
                      _strides("height, width"), _PAD, _act(), _BIAS)),
    "DepthwiseConv2D": (4, 2, (_kernel("height, width"), _strides("height, width"),
                               F("depth_multiplier", "int", "outputs per input channel", 1, high=64),
                               _PAD, _act(), _BIAS)),
    "Conv3D": (5, 3, (F("filters", "int", "output channels", required=True), _kernel("depth, height, width"),
                      _strides("depth, height, width"), _PAD, _act(), _BIAS)),
    "BatchNormalization": (None, 0, (_EPS, _CENTER, _SCALE)),
    "LayerNormalization": (None, 0, (_EPS, _CENTER, _SCALE)),
    "Activation": (None, 0, (_act(None),)),
    "Add": (None, 0, (F("inputs", "names", "two layers to add (names, 'prev', 'input', 'block_in')",
                        ["block_in", "prev"], low=2, high=2),)),
    "Multiply": (None, 0, (F("inputs", "names", "two layers to multiply", ["prev", "prev"], low=2, high=2),)),
    "AddN": (None, 0, (F("inputs", "names", "2..8 layers summed by one Keras Add layer", required=True,
                         low=2, high=8),)),
    "Power": (None, 0, (F("exponent", "float", "x ** exponent", required=True, low=-16, high=16),)),
    "Reshape": (None, 0, (F("target_shape", "shape", "new shape without the batch; one -1 allowed",
                            required=True),)),
    "Flatten": (None, 0, ()),
    "MaxPooling2D": (4, 2, _pool()),
    "AveragePooling2D": (4, 2, _pool()),
    "GlobalAveragePooling2D": (4, 0, ()),
}
WINDOWED = ("Conv2D", "DepthwiseConv2D", "Conv3D", "MaxPooling2D", "AveragePooling2D")


def field_help() -> dict:
    """The layer table as plain data: what the page and ``stacks --layers`` show."""
    return {t: [{"name": f.name, "kind": f.kind, "default": f.default, "low": f.low, "high": f.high,
                 "choices": list(f.choices), "required": f.required, "help": f.help} for f in fields]
            for t, (_, _, fields) in LAYER_TYPES.items()}
