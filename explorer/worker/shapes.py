"""The tensors each executed op reads and writes: shapes, dtypes and bytes, from TensorFlow's own shape inference.

The executed (partition) graph records the shapes of its arguments only, and Grappler renames or adds
nodes (``Gelu/ArithmeticOptimizer/ConvertPow__inner_Pow``), so shapes looked up by traced name would
miss some. Importing the executed GraphDef into a fresh graph runs every op's shape function (the
``_Arg`` nodes carry their ``_output_shapes``), which knows all of them, fused ops included. Byte
counts use TensorFlow's dtype sizes, here, so that nothing downstream needs a table of its own.
"""

from __future__ import annotations

from ..model.graph import BOILERPLATE_OPS, short_device


def executed_tensors(tf, graph_def, fed=None) -> list[dict] | None:
    """Per executed compute op: name, op, fused_ops, and its inputs' and outputs' [dtype, shape, bytes].

    ``fed``: the shapes of the values the call was given, in argument order. A model served with an
    unknown dimension (an import's batch) runs a graph whose ``_Arg`` shapes leave it open; these are
    the shapes that ran, so every tensor downstream gets its real size.
    A shape TF cannot infer is ``None`` (bytes ``None``): the traffic model counts it as unknown.
    None when the graph cannot be imported (an op this build does not register, a oneDNN op's shape function that
    fails): not known, which no account may read as nothing written.
    """
    graph = tf.Graph()
    try:
        with graph.as_default():
            tf.graph_util.import_graph_def(unplaced(with_fed_shapes(tf, graph_def, fed or [])), name="")
    except Exception:  # noqa: BLE001 - the account is an extra; the benchmark stands without it
        return None
    ops = []
    for op in graph.get_operations():
        if op.type in BOILERPLATE_OPS:
            continue
        fused = [s.decode() for s in op.node_def.attr["fused_ops"].list.s] if "fused_ops" in op.node_def.attr else []
        ops.append({"name": op.name, "op": op.type, "fused_ops": fused,
                    "inputs": [_tensor(t) for t in op.inputs], "outputs": [_tensor(t) for t in op.outputs]})
    return ops


def unplaced(graph_def):
    """``graph_def`` (a copy) without devices or colocation: shapes do not depend on them, and the importer's
    per-op device scopes were ~40 % of an import (ResNet50's 812 executed ops: 0.36 s placed, 0.20 s unplaced)."""
    for node in graph_def.node:
        node.device = ""
        if "_class" in node.attr:
            del node.attr["_class"]
    return graph_def


def with_fed_shapes(tf, graph_def, fed):
    """A copy of ``graph_def`` whose argument nodes record the shapes of the values fed (index i: ``fed[i]``);
    a resource handle (a variable passed after the inputs) keeps its own."""
    copy = tf.compat.v1.GraphDef()
    copy.CopyFrom(graph_def)
    for node in copy.node:
        if node.op != "_Arg" or node.attr["T"].type == tf.resource.as_datatype_enum:
            continue
        index = node.attr["index"].i
        if index < len(fed) and fed[index] is not None:
            shapes = node.attr["_output_shapes"].list
            del shapes.shape[:]
            shapes.shape.add().CopyFrom(tf.TensorShape(fed[index]).as_proto())
    return copy


def fed_shapes(args) -> list:
    """The shapes of a call's argument values (None for one that is not a tensor)."""
    return [list(a.shape) if hasattr(a, "shape") else None for a in args]


def _tensor(t) -> list:
    dtype = t.dtype.base_dtype
    if t.shape.rank is None or None in t.shape.as_list():
        return [dtype.name, None, None]
    dims = t.shape.as_list()
    count = 1
    for d in dims:
        count *= d
    try:
        size = dtype.size  # a string or resource tensor has no fixed size
    except Exception:  # noqa: BLE001
        size = 0
    return [dtype.name, dims, count * size if size else None]


def placed_tensors(tf, graph_def) -> list[dict]:
    """executed_tensors of a simulated graph, each op with the device it was placed on ("GPU" or "CPU")."""
    devices = {node.name: short_device(node.device) for node in graph_def.node}
    return [dict(op, device="CPU" if "CPU" in (devices.get(op["name"]) or "").upper() else "GPU")
            for op in executed_tensors(tf, graph_def) or ()]
