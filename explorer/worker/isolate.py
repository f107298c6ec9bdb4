"""One fused node's ops cut out of the traced graph: plain data a standalone script is written from.

``isolate(tf, traced, fusion)`` takes the traced GraphDef and one fusion (``analysis.fusion.Fusion``:
the traced ops the fused node absorbed) and returns the smallest model that holds those ops alone:
its ops in order with their ``tf.raw_ops`` arguments (input names from TensorFlow's own op
registry, attributes as Python literals), the constants they read (small ones by value, large ones
as seeded draws matching the original's mean and spread), and the tensors that fed them as
arguments (shape and dtype; drawn from a seeded generator in the script). A FusedBatchNorm's
variance is drawn positive, as a variance is. ``present.fault_repro`` writes the script.
"""

from __future__ import annotations

from ..analysis.fusion import fused_label
from ..model.graph import parse_input

SMALL_CONST = 16  # constants of at most this many elements are written by value
# Inputs a real model never feeds a negative number (drawn from uniform(0.5, 1.5) instead).
POSITIVE_ARGS = {("FusedBatchNorm", "variance"), ("FusedBatchNormV2", "variance"),
                 ("FusedBatchNormV3", "variance")}


class NotIsolated(Exception):
    """The fused node's ops could not be cut out (an op without a raw_ops entry, an unknown shape)."""


def _attr_value(tf, value):
    """An AttrValue as a Python literal's text (what raw_ops takes)."""
    kind = value.WhichOneof("value")
    if kind == "s":
        return repr(value.s.decode(errors="replace"))
    if kind in ("i", "f", "b"):
        return repr(getattr(value, kind))
    if kind == "type":
        return f"tf.{tf.dtypes.as_dtype(value.type).name}"
    if kind == "shape":
        return "None" if value.shape.unknown_rank else repr([d.size for d in value.shape.dim])
    if kind == "list":
        items = value.list
        for field in ("s", "i", "f", "b"):
            values = list(getattr(items, field))
            if values:
                return repr([v.decode() if isinstance(v, bytes) else v for v in values])
        if items.type:
            return "[" + ", ".join(f"tf.{tf.dtypes.as_dtype(t).name}" for t in items.type) + "]"
        return "[]"
    raise NotIsolated(f"an attribute of kind {kind!r} has no literal form here")


def _inferred(op_def) -> set[str]:
    """Attributes raw_ops infers from the inputs (it refuses them as arguments)."""
    names = set()
    for arg in op_def.input_arg:
        names.update(n for n in (arg.type_attr, arg.number_attr, arg.type_list_attr) if n)
    return names


def _output_count(op_def, node) -> int:
    count = 0
    for arg in op_def.output_arg:
        if arg.number_attr:
            count += node.attr[arg.number_attr].i
        elif arg.type_list_attr:
            count += len(node.attr[arg.type_list_attr].list.type)
        else:
            count += 1
    return count


def _shape(node) -> list[int] | None:
    if "_output_shapes" in node.attr and node.attr["_output_shapes"].list.shape:
        dims = node.attr["_output_shapes"].list.shape[0]
        if not dims.unknown_rank and all(d.size >= 0 for d in dims.dim):
            return [d.size for d in dims.dim]
    return None


def isolate(tf, traced, fusion, shapes: dict[str, list[int]]) -> dict:
    """The fused node's ops as a model of their own (see the module's doc). ``shapes``: static output
    shapes of the traced graph's ops (the model's trace knows them; the GraphDef may not)."""
    from tensorflow.python.framework import op_def_registry

    nodes = {n.name: n for n in traced.node}
    members = [name for name in fusion["absorbed"] if name in nodes]
    member_set = set(members)
    ops, consts, args, names = [], [], [], {}

    def source(edge_text: str, consumer_op: str, arg_name: str) -> str:
        edge = parse_input(edge_text)
        key = f"{edge.src}:{edge.port}"
        if key in names:
            return names[key]
        node = nodes.get(edge.src)
        if node is None:
            raise NotIsolated(f"input {edge_text!r} names no node of the traced graph")
        dtype = tf.dtypes.as_dtype(node.attr["dtype"].type if node.op == "Const" else _out_type(tf, node, edge.port))
        if node.op == "Const":
            value = tf.make_ndarray(node.attr["value"].tensor)
            entry = {"var": f"c{len(consts)}", "name": edge.src, "dtype": dtype.name, "shape": list(value.shape)}
            if value.size <= SMALL_CONST:
                entry["value"] = value.astype(float).tolist() if dtype.is_floating else value.tolist()
            else:
                as_float = value.astype("float64")
                entry.update(mean=float(as_float.mean()), std=float(as_float.std()) or 1.0)
            consts.append(entry)
            names[key] = entry["var"]
        else:
            shape = shapes.get(edge.src) if edge.port == 0 else None
            if shape is None or any(d is None or d < 0 for d in shape):
                raise NotIsolated(f"the shape of {edge.src}:{edge.port} is not known")
            positive = (consumer_op, arg_name) in POSITIVE_ARGS
            entry = {"var": f"x{len(args)}", "name": key, "dtype": dtype.name, "shape": list(shape),
                     "positive": positive}
            args.append(entry)
            names[key] = entry["var"]
        return names[key]

    for name in members:
        node = nodes[name]
        if node.op == "Const":
            continue
        op_def = op_def_registry.get(node.op)
        if op_def is None or not hasattr(tf.raw_ops, node.op):
            raise NotIsolated(f"{node.op} has no tf.raw_ops entry")
        data_inputs = [i for i in node.input if not i.startswith("^")]
        arg_names = []
        for arg in op_def.input_arg:
            if arg.number_attr or arg.type_list_attr:
                raise NotIsolated(f"{node.op} takes a list input")
            arg_names.append(arg.name)
        inputs = {}
        for arg_name, text in zip(arg_names, data_inputs):
            edge = parse_input(text)
            if edge.src in member_set and nodes[edge.src].op != "Const":
                inputs[arg_name] = names[f"{edge.src}:{edge.port}"]
            else:
                inputs[arg_name] = source(text, node.op, arg_name)
        skip = _inferred(op_def)
        defaults = {a.name: a.default_value for a in op_def.attr if a.HasField("default_value")}
        attrs = {key: _attr_value(tf, value) for key, value in sorted(node.attr.items())
                 if not key.startswith("_") and key not in skip and defaults.get(key) != value}
        var = f"t{len(ops)}"
        count = _output_count(op_def, node)
        for port in range(max(count, 1)):
            names[f"{name}:{port}"] = var if count == 1 else f"{var}[{port}]"
        ops.append({"var": var, "name": name, "op": node.op, "inputs": inputs, "attrs": attrs})
    if not ops:
        raise NotIsolated("the fusion absorbed no op of the traced graph")
    root = fusion.get("root") or ops[-1]["name"]
    output = names.get(f"{root}:0") or ops[-1]["var"]
    return {"node": fusion["node"], "target": fused_label(fusion["op"], fusion.get("fused_ops")), "ops": ops, "consts": consts, "args": args,
            "output": output, "absorbed_ops": [o["op"] for o in ops]}


def _out_type(tf, node, port: int):
    for key in ("T", "dtype", "out_type", "Tout"):
        if key in node.attr and node.attr[key].WhichOneof("value") == "type":
            return node.attr[key].type
    if "Toutput" in node.attr:
        return node.attr["Toutput"].type
    raise NotIsolated(f"the dtype of {node.name}:{port} is not known")

