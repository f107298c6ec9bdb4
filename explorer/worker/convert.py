"""GraphDef -> the neutral graph's plain dicts: the one place a TF graph is read node by node.

Each TF input string is parsed once here (``model.graph.parse_input``); attributes worth showing
are stringified; a ``_Recv`` is joined to its ``_Send`` so a graph split across devices reads as one.
"""

from __future__ import annotations

from ..model.graph import parse_input, short_device

# Attributes worth showing on a node; everything else stays in the pbtxt download.
DISPLAY_ATTRS = (
    "data_format", "padding", "strides", "dilations", "transpose_a", "transpose_b", "adj_x", "adj_y",
    "epsilon", "is_training", "alpha", "leakyrelu_alpha", "num_args", "squeeze_dims", "activation_mode",
    "num_side_inputs", "explicit_paddings", "approximate",
)


def graph_to_dict(graph_def, stage: str, tf) -> dict:
    """A GraphDef as the neutral graph's plain dict (``model.graph.Graph.from_dict`` reads it back)."""
    nodes = []
    for node in graph_def.node:
        attrs = {}
        dtype = ""
        for key in ("T", "dtype", "Tout", "U", "DstT"):  # a Cast: the dtype it makes
            if key in node.attr and node.attr[key].WhichOneof("value") == "type":
                dtype = tf.dtypes.as_dtype(node.attr[key].type).name
                break
        for key in DISPLAY_ATTRS:
            if key in node.attr:
                attrs[key] = _attr_text(node.attr[key])
        fused = [s.decode() for s in node.attr["fused_ops"].list.s] if "fused_ops" in node.attr else []
        shape = ""
        if "_output_shapes" in node.attr and node.attr["_output_shapes"].list.shape:
            dims = node.attr["_output_shapes"].list.shape[0]
            if not dims.unknown_rank:
                shape = _shape_text(dims)
        if node.op == "Const" and "value" in node.attr:
            tensor = node.attr["value"].tensor
            if tensor.tensor_shape.dim:
                shape = _shape_text(tensor.tensor_shape)
                if tensor.dtype in (tf.int32.as_datatype_enum, tf.int64.as_datatype_enum) and tensor.ByteSize() < 128:
                    try:  # a small integer vector: a reduction's axes, a reshape's shape (what rules read)
                        attrs["value"] = "[" + ",".join(str(v) for v in tf.make_ndarray(tensor).ravel()[:8]) + "]"
                    except Exception:  # noqa: BLE001 - a value shown as a label only: none rather than a failed graph
                        pass
            else:
                try:
                    attrs["value"] = str(tf.make_ndarray(tensor).item())[:24]
                except Exception:  # noqa: BLE001 - a value shown as a label only: none rather than a failed graph
                    pass
        nodes.append({
            "name": node.name, "op": node.op, "device": short_device(node.device),
            "dtype": dtype, "inputs": [parse_input(i).to_dict() for i in node.input],
            "fused_ops": fused, "attrs": attrs, "shape": shape,
        })
    _link_transfers(graph_def, nodes)
    return {"stage": stage, "nodes": nodes}


def merge_partitions(partitions, tf):
    """The partition graphs of one call as one GraphDef (a graph split across devices reads as one)."""
    merged = tf.compat.v1.GraphDef()
    for part in partitions:
        merged.node.extend(part.node)
    return merged


def _link_transfers(graph_def, nodes: list[dict]) -> None:
    """Join each _Recv to the _Send feeding it, so that a graph split across devices reads as one.

    TF gives a _Recv no inputs: the pair only shares its tensor_name and devices.
    """
    def key(node):
        attr = node.attr
        return tuple(attr[k].s for k in ("tensor_name", "send_device", "recv_device") if k in attr)

    sends = {key(n): n.name for n in graph_def.node if n.op in ("_Send", "_HostSend")}
    for node, data in zip(graph_def.node, nodes):
        if node.op in ("_Recv", "_HostRecv") and key(node) in sends:
            data["inputs"].append({"src": sends[key(node)], "port": 0, "control": False})


def _shape_text(shape) -> str:
    """A TensorShapeProto as '[64,256]' (-1 for an unknown dimension)."""
    return "[" + ",".join(str(d.size) for d in shape.dim) + "]"


def _attr_text(value) -> str:
    kind = value.WhichOneof("value")
    if kind == "s":
        return value.s.decode("utf-8", "replace")
    if kind == "list":
        items = list(value.list.i) or [s.decode() for s in value.list.s] or list(value.list.f)
        return "[" + ",".join(str(i) for i in items) + "]"
    if kind in ("i", "f", "b"):
        return str(getattr(value, kind))
    if kind == "type":
        return str(value.type)
    return ""
