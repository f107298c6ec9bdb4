"""Layer stacks: a model written as a list of Keras layers, as plain JSON data, checked before TensorFlow runs.

Format (one JSON object; the page and ``--spec FILE.json`` take the same)::

    {"name": "resnet_basic_block",                              # optional
     "input": {"shape": [1, 16, 16, 16], "dtype": "float32"},   # shape includes the batch
     "seed": 0,                                                 # optional: weights and input
     "layers": [
        {"type": "Conv2D", "name": "c1", "filters": 16, "kernel_size": 3, "use_bias": false},
        {"type": "BatchNormalization"},
        {"type": "Activation", "activation": "relu"},
        {"type": "Add", "inputs": ["block_in", "prev"]},
        {"type": "Block", "repeat": 2, "layers": [ ... ]}
     ]}

Every layer takes the previous layer's output, except the merge layers (Add, Multiply, AddN), which
name their inputs: an earlier layer's ``name``, or ``prev`` (the previous output), ``input`` (the
model's input) or ``block_in`` (what entered the current repetition of the innermost Block). Inside a
Block a name means the layer of the same repetition first, then an earlier one outside the block.

``parse(data)`` returns a ``StackSpec`` with every default filled, every shape inferred and every size
checked, or raises ``StackSpecError`` (a ``SpecError``) naming the layer and the field:
``layers[3] (conv2): filters: expected a whole number 1..4096, got -2``.
"""

from __future__ import annotations

import copy
import json
import math
import shlex
from dataclasses import dataclass

from ..errors import SpecError, shown
from . import json_text
from .layers import LAYER_SCHEMAS, LAYER_TYPES, WINDOWED, whole_schema
from .limits import MAX_DIM, MAX_MODEL_BYTES, MAX_TENSOR_BYTES
from .schemas import record

MAX_LAYERS = 256  # after repeats are expanded
MAX_REPEAT = 64
MAX_STACK_BYTES = 1 << 20  # a layer stack's JSON (the command line's --spec, a link, the editor)
ITEMSIZE = {"float32": 4, "float16": 2, "bfloat16": 2}
SPECIAL_NAMES = ("prev", "input", "block_in")
MERGE_TYPES = ("Add", "Multiply", "AddN")
_INPUT = 'expected {"shape": [batch, ...], "dtype": "float32"}'
_SIZES = "expected a list of 2..5 sizes (batch first), got {said}"
STACK = record({  # its name names the Keras model (a TF name scope) and the stack's file: letters, digits, _ . -
    "name": {"type": "string", "pattern": r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z", "message": "expected letters, digits, "
             "_ . - (at most 64, starting with a letter or digit), got {said}"},
    "description": {"type": "string", "message": "expected text"}, "seed": whole_schema(0, 2**31 - 1),
    "input": record({"shape": {"type": "array", "minItems": 2, "maxItems": 5, "items": whole_schema(1, MAX_DIM),
                               "message": _SIZES},
                     "dtype": {"enum": list(ITEMSIZE), "message": f"expected one of {', '.join(ITEMSIZE)}; got {{said}}"}},
                    message="unknown field; expected one of shape, dtype", type_message=_INPUT,
                    allOf=[{"required": ["shape"], "message": _SIZES.replace("{said}", "None")}]),
    "layers": {}},  # read layer by layer
    message="unknown field; expected one of name, description, input, seed, layers",
    allOf=[{"required": ["input"], "message": _INPUT}])
BLOCK = record({"type": {}, "name": {}, "repeat": whole_schema(1, MAX_REPEAT),
                "layers": {"type": "array", "minItems": 1, "message": "expected a non-empty list of layers"}},
               message="unknown field; expected one of type, name, repeat, layers",
               allOf=[{"required": ["layers"], "message": "expected a non-empty list of layers"}])


class StackSpecError(SpecError):
    """An invalid stack: ``where`` is e.g. 'layers[3] (conv2)', ``field_name`` e.g. 'filters'."""

    def __init__(self, where: str, field: str, message: str):
        where = where if where.isprintable() else where.encode("unicode_escape").decode("ascii")
        field = str(field) if str(field).isprintable() else str(field).encode("unicode_escape").decode("ascii")
        full = f"{where}: {field[:40]}" if field else where
        # Not SpecError's 80-character cut: a nested layer's path is the point of the message.
        message = shown(message, 1000)
        Exception.__init__(self, f"{full}: {message}")
        self.field, self.message = full, message
        self.where, self.field_name = where, field


@dataclass(frozen=True)
class Layer:
    """One layer after Blocks are expanded: unique name, type, every parameter, its inputs and output shape."""

    name: str
    type: str
    params: dict
    inputs: tuple  # names of earlier layers' outputs, or "input"
    shape: tuple  # output shape, batch included
    where: str  # 'layers[2].layers[0] (c1)', for messages


@dataclass(frozen=True)
class StackSpec:
    """A checked layer stack: what the worker builds as a Keras functional model."""

    name: str
    input_shape: tuple
    dtype: str
    seed: int
    layers: tuple  # of Layer, in order
    source_json: str  # the stack as given, for to_dict (a frozen spec keeps no mutable dict)

    preset = None  # a stack is no preset: the rest of the system asks
    source_id = "stack"  # sources.SOURCES

    @property
    def source(self) -> dict:
        return json.loads(self.source_json)

    @property
    def output_shape(self) -> tuple:
        return self.layers[-1].shape

    @property
    def p(self) -> dict:
        """The one model-wide parameter a stack has, in ModelSpec's shape (benchmarks read the dtype)."""
        return {"dtype": self.dtype}

    @property
    def params(self) -> tuple:
        return tuple(self.p.items())

    def to_dict(self) -> dict:
        return {"stack": self.source}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    def identity(self) -> dict:
        return self.to_dict()

    def public_dict(self) -> dict:
        return self.to_dict()

    def label(self) -> str:
        return f"layer stack {self.name}"

    def cli_args(self) -> list[str]:
        """The stack travels as a file: `stacks NAME` or the page writes it, ``--spec`` reads it."""
        return ["--spec", shlex.quote(f"{self.name}.json")]

    def sizes(self) -> list[str]:
        return []  # its sizes are in its layers

    def model_key(self) -> str:
        return self.to_json()  # its whole JSON: two edits of one ready stack share its name

    def with_params(self, **changes):
        raise SpecError("params", "a layer stack has no size parameters to change; edit its layers instead")

    def tensor_shapes(self) -> dict[str, tuple]:
        return {"x": self.input_shape, "out": self.output_shape}

    def summary(self) -> str:
        rows = [f"input {list(self.input_shape)} {self.dtype}"]
        for layer in self.layers:
            p = ", ".join(f"{k}={v}" for k, v in layer.params.items())
            rows.append(f"{layer.name:<24} {layer.type:<22} <- {', '.join(layer.inputs):<20} {list(layer.shape)}  {p}")
        return "\n".join(rows)


def parse_stack(data: dict) -> StackSpec:
    """The spec form the engine carries: {"stack": {...}}."""
    extra = sorted(set(data) - {"stack"})
    if extra:
        raise SpecError("spec", f"a layer stack spec has only 'stack'; unknown field(s) {extra}")
    return parse(data["stack"])


def parse(data) -> StackSpec:
    """Check ``data`` (a dict, or JSON text read by the one reader, ``json_text``) and return the expanded
    StackSpec."""
    if isinstance(data, (str, bytes)):
        try:
            data = json_text.load(data, "stack", "a layer stack", MAX_STACK_BYTES)
        except SpecError as exc:
            raise StackSpecError("stack", "", exc.message) from None
    if not isinstance(data, dict):
        raise StackSpecError("stack", "", f"expected a JSON object, got {type(data).__name__}")
    _check(data, STACK, "stack")
    name, seed, inp = data.get("name", "stack"), int(data.get("seed", 0)), data["input"]
    shape, dtype = tuple(map(int, inp["shape"])), inp.get("dtype", "float32")
    state = _State(dtype, [], {"input": shape}, set(), _size("input", "shape", shape, dtype))
    layers = data.get("layers")
    if not isinstance(layers, list) or not layers:
        raise StackSpecError("stack", "layers", "expected a non-empty list of layers")
    _expand(layers, "layers", state, scope={}, prefix="", block_in="input", prev="input")
    if state.total > MAX_MODEL_BYTES:
        raise StackSpecError("stack", "layers", f"activations and weights add up to {_mib(state.total)}; "
                             f"the limit is {_mib(MAX_MODEL_BYTES)}, make the sizes smaller")
    source = json.dumps(copy.deepcopy(data), sort_keys=True)
    return StackSpec(name, shape, dtype, seed, tuple(state.out), source)


@dataclass
class _State:
    dtype: str
    out: list
    shapes: dict  # unique name -> output shape
    taken: set
    total: int  # bytes of activations and weights so far


def _expand(items, path, st: _State, scope: dict, prefix: str, block_in: str, prev: str) -> str:
    """Append the layers of ``items`` to st.out; return the unique name of the last output."""
    for i, item in enumerate(items):
        where = f"{path}[{i}]"
        if not isinstance(item, dict):
            raise StackSpecError(where, "", f"expected a layer object, got {_said(item)}")
        user_name = item.get("name")
        if user_name is not None:
            if not isinstance(user_name, str) or not user_name or len(user_name) > 40 \
                    or not user_name.replace("_", "").isalnum() or not user_name.isascii():
                raise StackSpecError(where, "name", f"expected letters, digits and _ (at most 40), got {_said(user_name)}")
            if user_name in SPECIAL_NAMES:
                raise StackSpecError(where, "name", f"{user_name!r} is reserved (prev, input and block_in are)")
            if user_name in scope:
                raise StackSpecError(where, "name", f"{user_name!r} is already used in this block")
            where += f" ({user_name})"
        kind = item.get("type")
        if kind is not None and not isinstance(kind, str):
            raise StackSpecError(where, "type", f"expected a layer type's name, got {_said(kind)}")
        if kind == "Block":
            _check(item, BLOCK, where)
            repeat, inner = int(item.get("repeat", 1)), item["layers"]
            bname = user_name or f"block{i}"
            for r in range(repeat):
                rprefix = f"{prefix}{bname}_{r}." if repeat > 1 else f"{prefix}{bname}."
                prev = _expand(inner, f"{where}.layers", st, dict(scope), rprefix, block_in=prev, prev=prev)
            if user_name:  # the block's name means its last output
                scope[user_name] = prev
            continue
        if kind not in LAYER_TYPES:
            raise StackSpecError(where, "type", f"expected one of {', '.join([*LAYER_TYPES, 'Block'])}; got {_said(kind)}")
        rank, spatial, fields = LAYER_TYPES[kind]
        _check(item, LAYER_SCHEMAS[kind], where)
        params = {f.name: _field(where, f.name, f.value, item.get(f.name, f.default), spatial) for f in fields}
        if kind in MERGE_TYPES:
            inputs = tuple(_resolve(r, where, scope, prev, block_in) for r in params.pop("inputs"))
        else:
            inputs = (prev,)
        in_shapes = [st.shapes[n] for n in inputs]
        if rank is not None and len(in_shapes[0]) != rank:
            raise StackSpecError(where, "type", f"{kind} needs a {rank}-D input (batch included), got shape "
                                 f"{list(in_shapes[0])}")
        field = {"Reshape": "target_shape", "MaxPooling2D": "pool_size", "AveragePooling2D": "pool_size",
                 "ZeroPadding2D": "padding", "ZeroPadding3D": "padding"}.get(
            kind, "inputs" if kind in MERGE_TYPES else "kernel_size" if kind in WINDOWED else "type")
        shape = _field(where, field, _infer, kind, params, in_shapes)
        st.total += _size(where, "output", shape, st.dtype) + _weights(where, kind, params, in_shapes[0], st.dtype)
        uname = prefix + (user_name or f"{kind.lower()}_{len(st.out)}")
        while uname in st.taken:
            uname += "_"
        st.taken.add(uname)
        st.shapes[uname] = shape
        st.out.append(Layer(uname, kind, params, inputs, shape, where))
        if len(st.out) > MAX_LAYERS:
            raise StackSpecError(where, "", f"more than {MAX_LAYERS} layers once the blocks are repeated")
        if user_name:
            scope[user_name] = uname
        prev = uname
    return prev


def _resolve(ref, where, scope, prev, block_in) -> str:
    if ref == "prev":
        return prev
    if ref == "input":
        return "input"
    if ref == "block_in":
        return block_in
    if ref in scope:
        return scope[ref]
    known = ", ".join([*scope, *SPECIAL_NAMES])
    raise StackSpecError(where, "inputs", f"no earlier layer named {_said(ref)} (known here: {known})")


def _infer(kind, p, shapes) -> tuple:
    s = shapes[0]
    if kind in MERGE_TYPES:
        if any(other != s for other in shapes[1:]):
            raise ValueError(f"the inputs' shapes differ: {' vs '.join(str(list(x)) for x in shapes)}")
        return s
    if kind == "Dense":
        return s[:-1] + (p["units"],)
    if kind in WINDOWED:
        window = p.get("kernel_size") or p.get("pool_size")
        p["strides"] = p.get("strides") or window
        spatial = []
        for n, k, step in zip(s[1:-1], window, p["strides"]):
            out = -(-n // step) if p["padding"] == "same" else (n - k) // step + 1
            if out < 1:
                raise ValueError(f"window {list(window)} does not fit the input {list(s)} with padding 'valid'")
            spatial.append(out)
        channels = p["filters"] if "filters" in p else s[-1] * p.get("depth_multiplier", 1)
        return (s[0], *spatial, channels)
    if kind == "GlobalAveragePooling2D":
        return (s[0], s[-1])
    if kind.startswith("ZeroPadding"):
        return (s[0], *(n + 2 * pad for n, pad in zip(s[1:-1], p["padding"])), s[-1])
    if kind == "Flatten":
        return (s[0], math.prod(s[1:]))
    if kind == "Reshape":
        total, target = math.prod(s[1:]), p["target_shape"]
        known = math.prod(d for d in target if d != -1)
        if -1 in target:
            if total % known:
                raise ValueError(f"{list(target)} does not divide the {total} elements of {list(s)}")
            target = tuple(total // known if d == -1 else d for d in target)
        if math.prod(target) != total:
            raise ValueError(f"{list(target)} holds {math.prod(target)} elements; the input {list(s)} has {total}")
        return (s[0], *target)
    return s  # normalisations, activations, Power: the input's shape


def _said(value) -> str:
    """A value from the user's JSON as a message quotes it: its repr, escaped and cut short."""
    return shown(repr(value), 60)


def _mib(n: int) -> str:
    return f"{n / 2**20:.0f} MiB" if n < 2**30 else f"{n / 2**30:.1f} GiB"


def _weights(where, kind, p, s, dtype) -> int:
    n = 0
    if kind == "Dense":
        n = s[-1] * p["units"]
    elif kind in ("Conv1D", "Conv2D", "Conv3D"):
        n = math.prod(p["kernel_size"]) * s[-1] * p["filters"]
    elif kind == "DepthwiseConv2D":
        n = math.prod(p["kernel_size"]) * s[-1] * p["depth_multiplier"]
    nbytes = n * ITEMSIZE[dtype]
    if nbytes > MAX_TENSOR_BYTES:
        raise StackSpecError(where, "kernel", f"the weights would be {_mib(nbytes)}; the limit is "
                             f"{_mib(MAX_TENSOR_BYTES)} per tensor")
    return nbytes


def _size(where, field, shape, dtype) -> int:
    nbytes = math.prod(shape) * ITEMSIZE[dtype]
    if nbytes > MAX_TENSOR_BYTES:
        raise StackSpecError(where, field, f"tensor {list(shape)} {dtype} would be {_mib(nbytes)}; the limit is "
                             f"{_mib(MAX_TENSOR_BYTES)} per tensor, make the sizes smaller")
    return nbytes


def _field(where, name, fn, *args):
    """fn(*args), its ValueError told as the layer's and field's error."""
    try:
        return fn(*args)
    except StackSpecError:
        raise
    except ValueError as exc:
        raise StackSpecError(where, name, str(exc)) from None


def _check(obj: dict, schema: dict, where: str) -> None:
    """StackSpecError for the first place ``obj`` breaks ``schema``: the layer's field (a list's, not its item),
    or the input's (its item too: 'shape[1]')."""
    found = json_text.refusal(obj, schema, in_order=True)
    if found is not None:
        path, message = found
        if where == "stack" and path[:1] == ["input"]:
            where, path = "input", path[1:]
            field = "".join(f"[{part}]" if isinstance(part, int) else str(part) for part in path)
        else:
            field = str(path[0]) if path else ""
        raise StackSpecError(where, field, message)


def to_text(data: dict) -> str:
    """A stack as JSON a person reads and edits: one layer a line, a Block's layers indented under it."""
    if not isinstance(data, dict):
        return json.dumps(data, indent=2)
    items = list(data.items())
    lines = ["{"]
    for i, (key, value) in enumerate(items):
        comma = "," if i < len(items) - 1 else ""
        if key == "layers" and isinstance(value, list):
            lines += ['  "layers": [', *_layer_lines(value, "    "), f"  ]{comma}"]
        else:
            lines.append(f"  {json.dumps(key)}: {json.dumps(value)}{comma}")
    return "\n".join(lines + ["}"])


def _layer_lines(layers: list, indent: str) -> list[str]:
    out = []
    for i, layer in enumerate(layers):
        comma = "," if i < len(layers) - 1 else ""
        if isinstance(layer, dict) and isinstance(layer.get("layers"), list) and layer["layers"]:
            head = json.dumps({k: v for k, v in layer.items() if k != "layers"})[:-1]
            out.append(f'{indent}{head}{", " if len(head) > 1 else ""}"layers": [')
            out += _layer_lines(layer["layers"], indent + "  ")
            out.append(f"{indent}]}}{comma}")
        else:
            out.append(f"{indent}{json.dumps(layer)}{comma}")
    return out
