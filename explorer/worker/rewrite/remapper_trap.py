"""A pattern TensorFlow 2.21's remapper fails on with oneDNN, which a rewrite must not make.

A contraction + BiasAdd + residual Add whose sum is read by a Relu, Relu6, Elu or LeakyRelu and by something else
(a pre-activation residual block: Xception's middle flow). oneDNN's remapper fuses contraction, bias, add and
activation, deletes the Add the other reader still needs, and fails ('Mutation::Apply error: fanout ... exist for
missing node ...'); TensorFlow then drops every fusion the remapper made in the whole graph. Measured 2026-11-29
(Intel Xeon with AMX): a sum read only by activations, or by no activation, fuses. fold-batchnorm leaves a site
whose folded bias would make the pattern as it is: the rest of the model then fuses. (bias-add makes no new one:
oneDNN's remapper already takes an Add of a 1-D bias as the bias, and without oneDNN there is no such failure.)
"""

from __future__ import annotations

from ..host import onednn_enabled
from .model import Model

ACTIVATIONS = ("Relu", "Relu6", "Elu", "LeakyRelu")
ADDS = ("AddV2", "Add")


def trap(model: Model, users: dict, last: str) -> str | None:
    """Why a bias made at ``last`` (what the rewritten chain ends with) would lead the remapper into its failure, or
    None."""
    following = [node for node, _ in users.get(last) or []]  # Model.consumers: (node, input index), None an output
    if len(following) != 1 or following[0] is None or following[0].op not in ADDS or not onednn_enabled():
        return None
    add = following[0]
    other = [i for i in add.input if not i.startswith("^") and i.split(":")[0] != last]
    if not other or model.constant_valued(other[0]):
        return None  # not a residual: a bias, which the remapper takes as one
    readers = [node.op if node is not None else "the model's output" for node, _ in users.get(add.name) or []]
    if len(readers) > 1 and any(op in ACTIVATIONS for op in readers) and any(op not in ACTIVATIONS for op in readers):
        act = next(op for op in readers if op in ACTIVATIONS)
        return (f"with oneDNN, the bias would make {add.name} (a residual add read by a {act} and by more) part of a "
                f"contraction + BiasAdd + Add + {act} fusion, which TensorFlow's remapper fails on (it deletes the add "
                "the other reader needs) and then drops every fusion of the model")
    return None
