"""Patterns TensorFlow 2.21's remapper fails on with oneDNN, which a rewrite must not make.

A contraction + BiasAdd + residual Add + activation, measured 2026-11-29 (Intel Xeon with AMX, TensorFlow alone):

- a Conv2D's, whose sum is read by a Relu, Relu6, Elu or LeakyRelu and by something else (a pre-activation residual
  block: Xception's middle flow): the remapper fuses all four, deletes the Add the other reader still needs, and
  fails ('Mutation::Apply error: fanout ... exist for missing node ...'); TensorFlow drops every fusion it made. A
  sum read only by activations, or by none, fuses;
- a MatMul's, whose sum is read by a Relu, Relu6 or Elu: the remapper writes a node with no op, and TensorFlow runs
  the function with no Grappler at all. LeakyRelu, Tanh, Sigmoid or no activation fuse [BiasAdd, Add].

fold-batchnorm and bias-add leave a site whose bias would make one of them as it is: the rest of the model then
fuses. (A convolution's bias written with + is no bias to the remapper, oneDNN or not: measured, nothing fuses, so
rewriting it as a BiasAdd can make the first pattern.)
"""

from __future__ import annotations

from ..host import onednn_enabled
from .model import Model

CONV_ACTIVATIONS = ("Relu", "Relu6", "Elu", "LeakyRelu")
MATMUL_ACTIVATIONS = ("Relu", "Relu6", "Elu")
ADDS = ("AddV2", "Add")


def trap(model: Model, users: dict, last: str, contraction: str) -> str | None:
    """Why a bias made at ``last`` (what the rewritten chain ends with) after a ``contraction`` op would lead the
    remapper into one of its failures, or None."""
    following = [node for node, _ in users.get(last) or []]  # Model.consumers: (node, input index), None an output
    if len(following) != 1 or following[0] is None or following[0].op not in ADDS or not onednn_enabled():
        return None
    add = following[0]
    other = [i for i in add.input if not i.startswith("^") and i.split(":")[0] != last]
    if not other or model.constant_valued(other[0]):
        return None  # not a residual: a bias, which the remapper takes as one
    readers = [node.op if node is not None else "the model's output" for node, _ in users.get(add.name) or []]
    if contraction == "MatMul":
        act = next((op for op in readers if op in MATMUL_ACTIVATIONS), None)
        if act:
            return (f"with oneDNN, the bias would make a MatMul + BiasAdd + Add + {act} fusion at {add.name}, for "
                    "which TensorFlow's remapper writes a node with no op: TensorFlow then runs the model with no "
                    "Grappler at all")
        return None
    act = next((op for op in readers if op in CONV_ACTIVATIONS), None)
    if act and len(readers) > 1 and any(op not in CONV_ACTIVATIONS for op in readers):
        return (f"with oneDNN, the bias would make {add.name} (a residual add read by a {act} and by more) part of a "
                f"contraction + BiasAdd + Add + {act} fusion, which TensorFlow's remapper fails on (it deletes the add "
                "the other reader needs) and then drops every fusion of the model")
    return None
