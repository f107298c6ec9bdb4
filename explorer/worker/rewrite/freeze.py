"""freeze: the model's variables as constants, as a serving or converted graph has them.

Each ReadVariableOp of a variable becomes a Const holding the variable's value (same name, same
dtype): the graph computes the same values, and Grappler's constant folding and oneDNN can then fold
weights (a frozen batch norm's scale and shift become constants; a Mul by a constant after a
convolution folds into its filter). A variable read any other way (an embedding's ResourceGather)
stays a variable.
"""

from __future__ import annotations

from .model import Model

NAME = "freeze"


def find(model: Model) -> list[dict]:
    placeholders = set(model.handles) | set(model.new_variables)
    nodes = model.nodes()
    sites = []
    for node in model.graph_def.node:
        if node.op == "ReadVariableOp" and model.source(node.input[0], nodes) in placeholders:
            sites.append({"nodes": [node.name], "handle": model.source(node.input[0], nodes), "why": None})
    readers = {}
    for node in model.graph_def.node:
        for text in node.input:
            if text.startswith("^") or node.op == "Identity":
                continue
            source = model.source(text, nodes)
            if source in placeholders:
                readers.setdefault(source, set()).add(node.op)
    for site in sites:
        other = readers.get(site["handle"], set()) - {"ReadVariableOp"}
        if other:
            site["why"] = f"the variable is also read by {', '.join(sorted(other))}"
    return sites


def apply(model: Model, targets: set[str] | None = None) -> tuple[list[dict], list[dict]]:
    sites = find(model)
    ready = [s for s in sites if s["why"] is None]
    values = dict(model.variables())
    done, left = [], [{"nodes": s["nodes"], "why": s["why"]} for s in sites if s["why"]]
    nodes = model.nodes()
    for site in ready:
        node = nodes[site["nodes"][0]]
        dtype = model.tf.dtypes.as_dtype(node.attr["dtype"].type)
        value = values[site["handle"]]
        controls = [i for i in node.input if i.startswith("^")]
        node.op = "Const"
        node.attr.clear()
        node.attr["dtype"].type = dtype.as_datatype_enum
        node.attr["value"].tensor.CopyFrom(model.tf.make_tensor_proto(value.astype(dtype.as_numpy_dtype)))
        del node.input[:]
        node.input.extend(controls)
        done.append({"nodes": site["nodes"], "why": None})
    return done, left
