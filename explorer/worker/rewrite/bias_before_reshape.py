"""bias-before-reshape: a bias added after a Reshape of a MatMul moved before the Reshape.

A Keras Dense on a 3-D input runs MatMul on [batch·tokens, features], reshapes to [batch, tokens,
units], then adds its bias. When the Reshape keeps the last dimension (units), adding the [units] bias
before it gives the same tensor element for element: MatMul → BiasAdd is then the remapper's pattern.
The bias node keeps its name and moves before the Reshape; what read it reads the Reshape. Left alone:
a Reshape that changes the last dimension, a MatMul or Reshape read by anything else, a bias that is
not one value per unit.
"""

from __future__ import annotations

import numpy as np

from .fold_batchnorm import ADDS, _only, _other
from .model import Model, as_bias_add, attr, each_site

NAME = "bias-before-reshape"


def find(model: Model) -> list[dict]:
    users = model.consumers()
    sites = []
    for node in list(model.graph_def.node):
        if node.op != "MatMul":
            continue
        reshape = _only(users, node.name)
        if reshape is None or reshape.op != "Reshape" or not reshape.input[0].startswith(node.name):
            continue
        add = _only(users, reshape.name)
        if add is None or not (add.op == "BiasAdd" or add.op in ADDS):
            continue
        bias = add.input[1] if add.op == "BiasAdd" and add.input[0].split(":")[0] == reshape.name else \
            _other(add, reshape) if add.op in ADDS else None
        if bias is None or not model.constant_valued(bias):
            continue
        before, after, shape = model.shape(node.name), model.shape(reshape.name), model.shape(bias)
        why = None
        if not before or not after or before[-1] != after[-1] or before[-1] < 0:
            why = f"the Reshape changes the last dimension ({before} → {after})"
        elif shape is None or len(shape) != 1 or shape[0] != before[-1]:
            why = f"the bias has shape {shape}, not [{before[-1]}]"
        elif add.op == "BiasAdd" and attr(add, "data_format").s not in (b"", b"NHWC"):
            why = "the BiasAdd is channels-first"
        elif any(model.has_control_edges(n) for n in (reshape.name, add.name)):
            why = "the Reshape or the bias has control edges"
        sites.append({"nodes": [node.name, reshape.name, add.name], "matmul": node.name, "reshape": reshape.name,
                      "add": add.name, "bias": bias, "why": why})
    return sites


def apply(model: Model, targets: set[str] | None = None) -> tuple[list[dict], list[dict]]:
    return each_site(find(model), targets, "matmul", lambda site: _rewrite(model, site))


def _rewrite(model: Model, site: dict) -> list[str]:
    nodes = model.nodes()
    add, reshape = nodes[site["add"]], nodes[site["reshape"]]
    model.reroute(f"{add.name}:0", f"{reshape.name}:0")  # what read the bias now reads the Reshape...
    as_bias_add(add, site["matmul"], site["bias"])  # ...which now reshapes MatMul + bias
    reshape.input[0] = add.name
    return _move_tail(model, reshape.name, add.name)


# Element-wise ops an activation is written with (a GELU as Keras 3 writes it: x·0.5·(1 + erf(x/√2)), or its Tanh
# form); each acts on every element alone, so it gives the same tensor before the Reshape as after it.
ELEMENTWISE = frozenset({"Relu", "Relu6", "Elu", "LeakyRelu", "Tanh", "Sigmoid", "Mul", "AddV2", "Add", "Sub",
                         "RealDiv", "Square", "Pow", "Neg", "Erf", "Erfc"})


def _move_tail(model: Model, reshape: str, bias: str) -> list[str]:
    """The activation after the Reshape moved before it, so that it follows the bias: MatMul → BiasAdd → Reshape →
    GELU becomes MatMul → BiasAdd → GELU → Reshape (which the remapper fuses as [BiasAdd, GeluExact]). The tail is
    the element-wise ops computed from the Reshape's output and single-value constants alone (what also reads a
    tensor of the model's own, such as a residual add after a GELU, follows it); moved only when every reader of
    the Reshape is in it and one node of it is read outside it. The names of the nodes moved ([] when none is)."""
    users = model.consumers()  # {node: [(reader or None for a model output, input index)]}
    tail, frontier = {}, [reshape]

    def computed_from_tail(node) -> bool:
        for text in node.input:
            name = text.split(":")[0]
            if name in tail or name == reshape or text.startswith("^"):
                continue
            shape = model.shape(text)
            if not model.constant_valued(text) or shape is None or int(np.prod(shape or [1])) != 1:
                return False  # a tensor of the model's own, or a constant of another shape: the maths may differ
        return True

    while frontier and len(tail) < 16:
        for user, _ in users.get(frontier.pop(), ()):
            if user is None or user.name in tail or user.op not in ELEMENTWISE or not computed_from_tail(user):
                continue  # one read again from its other input, once that is in the tail, is taken then
            if model.has_control_edges(user.name):
                return []
            tail[user.name] = user
            frontier.append(user.name)
    if not tail or any(u is None or u.name not in tail for u, _ in users.get(reshape, ())):
        return []
    exits = [name for name in tail if not users.get(name) or any(u is None or u.name not in tail
                                                                  for u, _ in users[name])]
    if len(exits) != 1:
        return []
    for node in tail.values():
        for i, text in enumerate(node.input):
            if text.split(":")[0] == reshape:
                node.input[i] = bias
    model.forget_shapes(tail)  # recorded for the shape after the Reshape
    model.reroute(f"{exits[0]}:0", f"{reshape}:0")  # what read the activation reads the Reshape...
    model.nodes()[reshape].input[0] = exits[0]  # ...which now reshapes the activation
    return list(tail)
