"""What a graph asks to allocate, read before it runs, where the graph itself states the size.

A 116-byte Const can claim 10¹² elements (one value, broadcast), and a RandomUniform or Fill is told
its shape by a constant: TensorFlow would try to make the tensor and the worker would be killed at its
memory cap ("Try smaller sizes"), or TensorFlow's own error would name nothing ("InvalidArgumentError: }").
Here each such tensor's size is computed from the graph (the node's shape attribute, or the constant
that feeds its shape operand, through Identity nodes) and refused over the per-tensor limit, and all of
them together over the per-model limit, naming the op, the node and the size. Sizes a constant does not
state (computed shapes) are left to the worker's memory cap.
"""

from __future__ import annotations

from ..errors import quoted, shown
from ..model.limits import MAX_MODEL_BYTES, MAX_TENSOR_BYTES, bytes_text
from .library import count_text

# op -> (index of the operand that holds the output's shape, the attribute naming the output's dtype)
SHAPED_BY = {
    "Fill": (0, "T"), "Empty": (0, "dtype"), "BroadcastTo": (1, "T"),
    "RandomUniform": (0, "dtype"), "RandomStandardNormal": (0, "dtype"), "TruncatedNormal": (0, "dtype"),
    "RandomUniformInt": (0, "Tout"), "StatelessRandomUniform": (0, "dtype"), "StatelessRandomNormal": (0, "dtype"),
    "StatelessTruncatedNormal": (0, "dtype"), "StatelessRandomUniformV2": (0, "dtype"),
    "StatelessRandomNormalV2": (0, "dtype"), "StatelessTruncatedNormalV2": (0, "dtype"),
    "StatelessRandomUniformIntV2": (0, "dtype"),
}
# A list of N slots (op -> the operand holding N) makes N tensor objects before anything is put in them; an empty
# slot holds no data, but each is at least SLOT_BYTES (tensorflow::Tensor's size).
LIST_SIZED_BY = {"TensorListReserve": 1, "TensorListResize": 1, "TensorArrayV3": 0}
SLOT_BYTES = 24
MAX_SHAPE_VALUES = 64  # a shape operand is a short vector; a longer constant is not read here


def check(graph_def) -> list[str]:
    """Refusal lines (empty when none) for every tensor the graph and its functions state past the limits."""
    problems, total = [], 0
    scopes = [("graph", graph_def.node)] + [(f"function {shown(f.signature.name)}", f.node_def)
                                            for f in graph_def.library.function]
    for where, nodes in scopes:
        by_name = {n.name: n for n in nodes}
        for node in nodes:
            stated = _stated(node, by_name)
            if stated is None:
                continue
            elements, nbytes, lower = stated
            total += nbytes
            if nbytes > MAX_TENSOR_BYTES:
                what = "a list of" if node.op in LIST_SIZED_BY else "a tensor of"
                unit = "slots" if node.op in LIST_SIZED_BY else "elements"
                problems.append(f"op {shown(node.op)} (node {quoted(node.name)} in {where}) asks for {what} "
                                f"{'at least ' if lower else ''}{count_text(elements)} {unit} ({bytes_text(nbytes)}), "
                                f"over the {bytes_text(MAX_TENSOR_BYTES)} per-tensor limit")
    if not problems and total > MAX_MODEL_BYTES:
        problems.append(f"its tensors of stated size hold {bytes_text(total)} together, over the "
                        f"{bytes_text(MAX_MODEL_BYTES)} per-model limit")
    return problems


def _stated(node, by_name: dict):
    """(elements, bytes, whether that is a lower bound) of the node's first output where the graph states it."""
    if node.op in ("Const", "HostConst"):
        tensor = node.attr["value"].tensor
        dims = [d.size for d in tensor.tensor_shape.dim]
        return _size(dims, tensor.dtype, False)
    if node.op == "Tile":
        multiples = _constant_values(node, 1, by_name)
        if multiples is None:
            return None
        base = _static_shape(node, 0, by_name)
        known = base is not None and len(base) == len(multiples) and min(base, default=0) >= 0
        return _size([m * b for m, b in zip(multiples, base)] if known else multiples, node.attr["T"].type, not known)
    if node.op in LIST_SIZED_BY:
        slots = _constant_values(node, LIST_SIZED_BY[node.op], by_name)
        if not slots or len(slots) != 1 or slots[0] < 0:
            return None
        return slots[0], slots[0] * SLOT_BYTES, True
    if node.op in SHAPED_BY:
        operand, dtype_attr = SHAPED_BY[node.op]
        dims = _constant_values(node, operand, by_name)
        return None if dims is None else _size(dims, node.attr[dtype_attr].type, False)
    return None


def _itemsize(dtype_enum: int) -> int:
    from tensorflow.python.framework import dtypes

    try:
        return max(dtypes.as_dtype(dtype_enum).size, 1)
    except (TypeError, ValueError):
        return 1


def _size(dims, dtype_enum: int, lower: bool):
    if any(d < 0 for d in dims):
        return None  # a dimension left open: sized at run time
    elements = 1
    for d in dims:
        elements *= d
    return elements, elements * _itemsize(dtype_enum), lower


def _constant_node(node, operand: int, by_name: dict):
    """The Const feeding the node's ``operand`` input, through Identity nodes; None if it is not a constant."""
    inputs = [i for i in node.input if not i.startswith("^")]
    if operand >= len(inputs):
        return None
    source = by_name.get(inputs[operand].split(":")[0])
    for _ in range(16):
        if source is None or source.op not in ("Identity", "Snapshot") or not source.input:
            break
        source = by_name.get(source.input[0].split(":")[0])
    return source if source is not None and source.op in ("Const", "HostConst") else None


def _static_shape(node, operand: int, by_name: dict) -> list[int] | None:
    """The shape of the node's ``operand`` where a Const or a Placeholder states it (-1: open)."""
    inputs = [i for i in node.input if not i.startswith("^")]
    source = by_name.get(inputs[operand].split(":")[0]) if operand < len(inputs) else None
    if source is not None and source.op in ("Const", "HostConst"):
        return [d.size for d in source.attr["value"].tensor.tensor_shape.dim]
    if source is not None and source.op == "Placeholder" and "shape" in source.attr:
        shape = source.attr["shape"].shape
        return None if shape.unknown_rank else [d.size for d in shape.dim]
    return None


def _constant_values(node, operand: int, by_name: dict) -> list[int] | None:
    """The integer values of a short constant operand (a shape, the multiples of a Tile)."""
    source = _constant_node(node, operand, by_name)
    if source is None:
        return None
    tensor = source.attr["value"].tensor
    count = 1
    for d in tensor.tensor_shape.dim:
        count *= d.size
    if count > MAX_SHAPE_VALUES or count < 0:
        return None
    if tensor.tensor_content:
        width = _itemsize(tensor.dtype)
        raw = tensor.tensor_content
        values = [int.from_bytes(raw[i:i + width], "little", signed=True) for i in range(0, len(raw), width)]
    else:
        values = list(tensor.int64_val) or list(tensor.int_val)
    if not values:
        return [0] * count
    if len(values) < count:  # the last value repeats, as TensorFlow fills a constant
        values += [values[-1]] * (count - len(values))
    return values[:count]
