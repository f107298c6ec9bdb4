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
    copy = unplaced(with_fed_shapes(tf, graph_def, fed or []))
    padded = padding_apart(tf, copy)
    try:
        with graph.as_default():
            tf.graph_util.import_graph_def(copy, name="")
    except Exception:  # noqa: BLE001 - the account is an extra; the benchmark stands without it
        return None
    ops = []
    for op in graph.get_operations():
        if op.type in BOILERPLATE_OPS or op.name.endswith(SHAPE_ONLY):
            continue
        fused = [s.decode() for s in op.node_def.attr["fused_ops"].list.s] if "fused_ops" in op.node_def.attr else []
        op_type, inputs = op.type, list(op.inputs)
        if op.name in padded:  # as it ran: its own op, reading the unpadded input (and the paddings, if an input)
            op_type, unpadded, paddings = padded[op.name]
            inputs = [graph.get_tensor_by_name(_tensor_name(unpadded)), *inputs[1:],
                      *([graph.get_tensor_by_name(_tensor_name(paddings))] if paddings else [])]
        ops.append({"name": op.name, "op": op_type, "fused_ops": fused,
                    "inputs": [_tensor(t) for t in inputs], "outputs": [_tensor(t) for t in op.outputs]})
    return ops


def returned_shapes(tf, graph_def, fed=None) -> list:
    """The shapes a function graph's outputs have by TensorFlow's shape inference at the shapes ``fed``, in output
    order (``_Retval``'s index); a dimension it cannot work out is None. Of the traced graph (stock ops, before
    any rewrite): the shapes the model says it returns, which no rewrite may change. [] when it cannot import."""
    graph = tf.Graph()
    try:
        with graph.as_default():
            tf.graph_util.import_graph_def(unplaced(with_fed_shapes(tf, graph_def, fed or [])), name="")
    except Exception:  # noqa: BLE001 - nothing declared, nothing held against the run
        return []
    returns = sorted((op.get_attr("index"), op.inputs[0].shape) for op in graph.get_operations()
                     if op.type == "_Retval" and op.inputs)
    return [shape.as_list() if shape.rank is not None else None for _, shape in returns]


SHAPE_ONLY = "/explorer_shape_pad"  # nodes added to a copy for shape inference only: never reported


def padding_apart(tf, graph_def) -> dict[str, tuple[str, str, str | None]]:
    """Each convolution that took a Pad into itself, given in ``graph_def`` (a copy) a Pad of its own before it:
    {node: (its op, its unpadded input, its paddings input or None)} of those changed.

    oneDNN's ``_MklNativePadWith(Fused)Conv2D`` (paddings an input) and the remapper's Pad + Conv3D (the
    ``padding_list`` attribute) run a VALID convolution on the padded input, but their shape functions ignore the
    padding: ResNet50's first convolution at 96 px came out 45×45 (it writes 48×48, every tensor after it as
    wrong), a Conv3D's FLOPs a third of the real ones, and ResNet50V2's import failed (a 2×2 input, a 3×3 filter)."""
    from tensorflow.python.framework import op_def_registry

    consts = {node.name: node for node in graph_def.node if node.op == "Const"}
    changed: dict[str, tuple[str, str, str | None]] = {}
    for node in list(graph_def.node):
        if "padding" not in node.attr or node.attr["padding"].s != b"VALID":
            continue  # a Pad is folded only into a VALID convolution (``attr[...]`` would add the key: ask first)
        if "PadWith" in node.op and node.op.endswith("Conv2D"):
            paddings = node.input[-1] if "Fused" in node.op else node.input[2]  # after the args, where there are
            target = op_def_registry.get(node.op.replace("PadWith", ""))
            if paddings.split(":")[0] not in consts or target is None:
                continue  # paddings known only when it runs: the shape function's answer stands
            values = paddings
        elif node.op.endswith("Conv3D") and "padding_list" in node.attr and node.attr["padding_list"].list.i:
            paddings, target = None, None
            values = _paddings_const(tf, graph_def, node.name, list(node.attr["padding_list"].list.i)).name
            del node.attr["padding_list"]
        else:
            continue
        changed[node.name] = (node.op, node.input[0], paddings)
        pad = graph_def.node.add(name=node.name + SHAPE_ONLY, op="Pad", input=[node.input[0], values])
        pad.attr["T"].CopyFrom(node.attr["T"])
        pad.attr["Tpaddings"].type = tf.int32.as_datatype_enum if paddings is None else consts[
            paddings.split(":")[0]].attr["dtype"].type
        node.input[0] = pad.name
        if target is not None:
            _as_op(node, target, dropped=paddings)
    return changed


def _paddings_const(tf, graph_def, name: str, flat: list[int]):
    const = graph_def.node.add(name=name + SHAPE_ONLY + "/paddings", op="Const")
    const.attr["dtype"].type = tf.int32.as_datatype_enum
    const.attr["value"].tensor.CopyFrom(tf.make_tensor_proto([flat[i:i + 2] for i in range(0, len(flat), 2)],
                                                             tf.int32))
    return const


def _as_op(node, target, dropped: str) -> None:
    """``node`` made an op of ``target`` (its OpDef) with the input ``dropped`` taken away: attributes the target does
    not know removed (Tpaddings), its list of argument types (TArgs) written."""
    inputs = [name for name in node.input if name != dropped]
    del node.input[:]
    node.input.extend(inputs)
    node.op = target.name
    known = {attr.name for attr in target.attr}
    for name in [name for name in node.attr if not name.startswith("_") and name not in known]:
        del node.attr[name]
    if "TArgs" in known:
        node.attr["TArgs"].list.type[:] = [node.attr["T"].type] * node.attr["num_args"].i


def _tensor_name(name: str) -> str:
    return name if ":" in name else name + ":0"


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
