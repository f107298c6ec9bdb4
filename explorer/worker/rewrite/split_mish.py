"""split-mish: Mish's softplus written as log1p(exp(x)), so that the remapper no longer sees Mish there.

Mish is ``x · tanh(softplus(x))``; the remapper (with oneDNN on) fuses that Mul, Tanh and Softplus into the
contraction before them, and TensorFlow 2.21 has no kernel for some of the fusions it makes (Conv2D + BiasAdd
+ Add + Mish, Conv2D + FusedBatchNorm + Mish: docs/diagnose.md). ``softplus(x) = log(1 + eᵡ)``: the
Softplus node becomes a Log1p of a new Exp of its input, the same maths (for x above ~88 in float32 eᵡ is
infinite, log1p of it too, and tanh of that 1, as tanh(softplus(x)) is there), and the pattern the remapper
matches is gone; the contraction before it still fuses with what it fused before Mish. This fix prevents a
fusion instead of making one: the diagnosis offers it as a way around a Mish fusion that breaks the model.

A site is the Mul (named by it: the fused node takes its name). Left alone: a Softplus read by anything but
the Tanh, or with control edges.
"""

from __future__ import annotations

from .fold_batchnorm import _only
from .model import Model, _tensor, each_site

NAME = "split-mish"


def find(model: Model) -> list[dict]:
    nodes, users, controlled = model.nodes(), model.consumers(), model.controlled()
    sites = []
    for node in list(model.graph_def.node):
        if node.op != "Softplus" or not node.input:
            continue
        tanh = _only(users, node.name)
        if tanh is None or tanh.op != "Tanh":
            continue
        mul = _only(users, tanh.name)
        x = node.input[0]
        if mul is None or mul.op != "Mul" or sorted(map(_tensor, mul.input)) != sorted(map(_tensor, [x, tanh.name])):
            continue
        why = None
        if any(model.has_control_edges(n.name, nodes, controlled) for n in (node, tanh)):
            why = f"{node.name} or {tanh.name} has control edges"
        sites.append({"nodes": [node.name, tanh.name, mul.name], "contraction": mul.name, "softplus": node.name,
                      "why": why})
    return sites


def apply(model: Model, targets: set[str] | None = None) -> tuple[list[dict], list[dict]]:
    return each_site(find(model), targets, "contraction", lambda site: _split(model, site["softplus"]))


def _split(model: Model, name: str) -> None:
    softplus = model.nodes()[name]
    exp = model.graph_def.node.add(name=model.unique(name + "/exp"), op="Exp", input=[softplus.input[0]])
    exp.attr["T"].CopyFrom(softplus.attr["T"])
    softplus.op = "Log1p"
    softplus.input[:] = [exp.name]
