"""The layer types a layer stack may use: one table of each type's fields, ranges, defaults and help.

``stack.parse`` checks a stack's layers with the schemas made from it (``LAYER_SCHEMAS``); the page's reference
table and ``stacks --layers`` print it (``field_help``); ``worker/models/stack.py`` builds each type with its
Keras 3 layer.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import shown
from .limits import MAX_DIM
from .schemas import record

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

    def schema(self, spatial: int = 2) -> dict:
        """The JSON Schema of this field's value (``json_text.refusal``), with the message a stack gives."""
        k, low, high = self.kind, self.low, self.high
        if k == "int":
            return whole_schema(low, high)
        if k == "float":
            return {"type": "number", "minimum": low, "maximum": high,
                    "message": f"expected a number {low:g}..{high:g}, got {{said}}"}
        if k == "bool":
            return {"type": "boolean", "message": "expected true or false, got {said}"}
        if k == "choice":
            return {"enum": list(self.choices), "message": f"expected one of {', '.join(self.choices)}; got {{said}}"}
        if k == "int_or_tuple":  # kernel_size, strides, pool_size: n or [n, n(, n)]
            whole, listed = whole_schema(low, high), f"expected a whole number or a list of {spatial}, got {{said}}"
            return {"type": ["integer", "array"], "minimum": low, "maximum": high, "minItems": spatial,
                    "maxItems": spatial, "items": whole, "messages": {
                        "type": whole["message"], "minimum": whole["message"], "maximum": whole["message"],
                        "minItems": listed, "maxItems": listed}}
        if k == "names":
            return {"type": "array", "minItems": int(low), "maxItems": int(high),
                    "not": {"type": "array", "contains": {"not": {"type": "string", "minLength": 1}}},
                    "message": f"expected a list of {int(low)}..{int(high)} layer names, got {{said}}"}
        # shape: a Reshape target without the batch; one -1 allowed (counted by ``value``)
        return {"type": "array", "minItems": 1, "maxItems": 4, "items": {"anyOf": [
                    {"const": -1, "message": whole_schema(1, MAX_DIM)["message"]}, whole_schema(1, MAX_DIM)]},
                "message": "expected a list of 1..4 sizes (batch excluded), got {said}"}

    def value(self, value, spatial: int = 2):
        """A value that keeps to ``schema`` as the builder takes it: whole numbers as int, lists as tuples."""
        if value is None:
            return None
        if self.kind == "int_or_tuple":
            return tuple(map(int, value)) if isinstance(value, list) else (int(value),) * spatial
        if self.kind == "shape":
            if value.count(-1) > 1:
                raise ValueError(f"at most one -1, got {shown(repr(value), 60)}")
            return tuple(map(int, value))
        if self.kind == "names":
            return tuple(value)
        return int(value) if self.kind == "int" else float(value) if self.kind == "float" else value


def whole_schema(low, high) -> dict:
    return {"type": "integer", "minimum": low, "maximum": high,
            "message": f"expected a whole number {int(low)}..{int(high)}, got {{said}}"}


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
    "Conv1D": (3, 1, (F("filters", "int", "output channels", required=True), _kernel("width (steps)"),
                      _strides("along the steps"), _PAD, _act(), _BIAS)),
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
    # Explicit zero padding (ResNet's stems, strided blocks): oneDNN folds it into the next VALID Conv2D, the
    # remapper into a Conv3D (FindPadWithConv3D)
    "ZeroPadding2D": (4, 2, (F("padding", "int_or_tuple", "zeros added on each side: height, width", 1, low=0,
                               high=16),)),
    "ZeroPadding3D": (5, 3, (F("padding", "int_or_tuple", "zeros added on each side: depth, height, width", 1,
                               low=0, high=16),)),
}
WINDOWED = ("Conv1D", "Conv2D", "DepthwiseConv2D", "Conv3D", "MaxPooling2D", "AveragePooling2D")


def field_help() -> dict:
    """The layer table as plain data: what the page and ``stacks --layers`` show."""
    return {t: [{"name": f.name, "kind": f.kind, "default": f.default, "low": f.low, "high": f.high,
                 "choices": list(f.choices), "required": f.required, "help": f.help} for f in fields]
            for t, (_, _, fields) in LAYER_TYPES.items()}


def _schema(spatial: int, fields: tuple) -> dict:
    """A layer of one type: its fields (each type requires at most its first), none other."""
    allowed = ("type", "name") + tuple(f.name for f in fields)
    required = [{"required": [f.name], "message": f"required ({f.help})"} for f in fields
                if f.required or (f.default is None and f.kind != "int_or_tuple")]
    return record({"type": {}, "name": {}, **{f.name: f.schema(spatial) for f in fields}},
                  message=f"unknown field; expected one of {', '.join(allowed)}", allOf=required)


LAYER_SCHEMAS = {kind: _schema(spatial, fields) for kind, (_, spatial, fields) in LAYER_TYPES.items()}
