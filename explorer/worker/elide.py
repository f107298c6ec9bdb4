"""Constants' contents left out of what the worker returns: their dtype and shape stay, their bytes go.

A frozen model carries its weights as Const nodes: MobileNetV2's 14 MB of weights become ~40 MB of
escaped text per stage as pbtxt, and again in every Grappler pass's dump. Nothing the explorer shows
or checks reads a weight's value (the analysis reads op types, shapes and edges; a scalar's value is
kept), so a tensor over ``MIN_BYTES`` keeps its dtype and shape and loses its content, and its node
gets an ``_explorer_elided`` attribute saying so ("value elided, 1.2 MiB"). The graph stays a valid
GraphDef: TensorFlow reads a tensor without content as zeros.
"""

from __future__ import annotations

import re

MIN_BYTES = 1024  # smaller tensors (shapes, paddings, axes, scalars) keep their values
# Above this much constant data in the traced graph, Grappler's per-pass dumps are not written:
# TensorFlow writes every constant as text after every pass (MobileNetV2 frozen: 2.4 GB, ~2 min).
MAX_DUMPED_CONSTANT_BYTES = 256 << 10
NOTE_ATTR = "_explorer_elided"
# In a text dump: a line holding a large tensor's bytes (TF writes them on one line), and a run of a
# repeated value field (after constant folding TF writes each element on a line of its own).
_DUMP_CONTENT = re.compile(r'^([ ]*)tensor_content: "[^\n]{%d,}$' % MIN_BYTES, re.M)
_DUMP_VALUES = re.compile(r'^([ ]*)(\w+_val): ([^\n]*)\n(?:[ ]*\2: [^\n]*\n)+', re.M)


def size_text(nbytes: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes} B"


def constant_bytes(graph) -> int:
    """Bytes of a traced graph's constants over ``MIN_BYTES``, from their shapes (nothing serialised)."""
    total = 0
    for op in graph.get_operations():
        if op.type == "Const" and op.outputs[0].shape.is_fully_defined():
            size = op.outputs[0].shape.num_elements() * op.outputs[0].dtype.size
            total += size if size > MIN_BYTES else 0
    return total


def graph_def_constant_bytes(graph_def, min_bytes: int = MIN_BYTES) -> int:
    """``constant_bytes`` for a GraphDef at hand (an imported one): its constants' encoded sizes."""
    return sum(size for _, size in _large_constants(graph_def, min_bytes))


def _large_constants(graph_def, min_bytes: int = MIN_BYTES):
    nodes = list(graph_def.node)
    for function in graph_def.library.function:
        nodes += function.node_def
    for node in nodes:
        if node.op == "Const" and "value" in node.attr:
            size = node.attr["value"].tensor.ByteSize()
            if size > min_bytes:
                yield node, size


def graph_text(graph_def) -> str:
    """A GraphDef as text format. The C implementation's (upb) text is the same format, ~5x faster than
    text_format's pure-Python printer (its map entries in another, fixed, order)."""
    from google.protobuf import text_format
    from google.protobuf.internal import api_implementation

    return str(graph_def) if api_implementation.Type() == "upb" else text_format.MessageToString(graph_def)


def elide_constants(graph_def, min_bytes: int = MIN_BYTES) -> int:
    """Drop the content of every Const tensor over ``min_bytes`` (in place); return the bytes dropped.

    Function libraries are walked too (a GraphDef's functions hold constants of their own)."""
    dropped = 0
    for node, size in list(_large_constants(graph_def, min_bytes)):
        tensor = node.attr["value"].tensor
        shape, dtype = tensor.tensor_shape.SerializeToString(), tensor.dtype
        tensor.Clear()
        tensor.dtype = dtype
        tensor.tensor_shape.ParseFromString(shape)
        node.attr[NOTE_ATTR].s = f"value elided, {size_text(size)}".encode()
        dropped += size
    return dropped


def parse_dump(path: str, data: bytes, tf):
    """One of TF's graph dumps (``data``, read from ``path``) as a GraphDef: binary for .pb (what the
    runtime asks for: parsed in C, ~50x faster), else text, its large tensors' bytes stripped first.
    Raises protobuf's DecodeError or text_format's ParseError for a truncated or foreign file."""
    from google.protobuf import text_format

    graph_def = tf.compat.v1.GraphDef()
    if path.endswith(".pb"):
        graph_def.ParseFromString(data)
    else:
        text_format.Parse(strip_dump_text(data.decode("utf-8", "replace")), graph_def)
    return graph_def


def strip_dump_text(text: str) -> str:
    """A Grappler dump's text without the large tensors' bytes, so that parsing it is quick."""
    text = _DUMP_CONTENT.sub(r'\1tensor_content: ""', text)
    return _DUMP_VALUES.sub(r'\1\2: \3\n', text)
