"""split-add: a residual sum that oneDNN's remapper would fuse and then fail on, computed twice.

With oneDNN, TensorFlow 2.21's remapper fuses a convolution + BiasAdd + residual Add + Relu (Relu6, Elu, LeakyRelu)
even where the sum is read by another op too (a pre-activation block's skip), deletes the Add that op needs, and
fails: TensorFlow drops every fusion the remapper made (``remapper_trap``). Here the readers that are no such
activation read a copy of the Add instead, written with the other add op (Add for AddV2) so that Grappler does not
merge the two back into one. The sum is the same, computed twice (one more element-wise add); the
BiasAdd then has two readers, so the remapper fuses the convolution with its bias only, and fails on nothing: the
rest of the model keeps its fusions. This fix prevents a fusion instead of making one: the diagnosis offers it as a
way around a remapper that failed.

A site is the Add (named by it). Left alone: an Add with control edges.
"""

from __future__ import annotations

from .model import Model, each_site
from .remapper_trap import CONV_ACTIVATIONS, trap

NAME = "split-add"
CONTRACTIONS = ("Conv2D", "DepthwiseConv2dNative", "Conv3D")


def find(model: Model) -> list[dict]:
    nodes, users, controlled = model.nodes(), model.consumers(), model.controlled()
    sites = []
    for bias in list(model.graph_def.node):
        conv = nodes.get(bias.input[0].split(":")[0]) if bias.op == "BiasAdd" and bias.input else None
        if conv is None or conv.op not in CONTRACTIONS or not trap(model, users, bias.name, conv.op):
            continue
        (add, _), = users[bias.name]
        why = f"{add.name} has control edges" if model.has_control_edges(add.name, nodes, controlled) else None
        sites.append({"nodes": [conv.name, bias.name, add.name], "contraction": add.name, "add": add.name, "why": why})
    return sites


def apply(model: Model, targets: set[str] | None = None) -> tuple[list[dict], list[dict]]:
    return each_site(find(model), targets, "contraction", lambda site: _split(model, site["add"]))


def _split(model: Model, name: str) -> None:
    add = model.nodes()[name]
    copy = model.graph_def.node.add()
    copy.CopyFrom(add)
    copy.name = model.unique(name + "/split")
    # the other add op (AddV2 and Add compute the same sum): Grappler's common-subgraph elimination merges two
    # identical nodes back into one, and the remapper would fail as before
    copy.op = "Add" if add.op == "AddV2" else "AddV2"
    for reader, index in model.consumers()[name]:
        if reader is not None and reader.op not in CONV_ACTIVATIONS:
            reader.input[index] = copy.name + reader.input[index][len(name):]  # "add" or "add:0"
    # the model's output reads the copy too
    model.outputs = [copy.name + t[len(name):] if t.split(":")[0] == name else t for t in model.outputs]
