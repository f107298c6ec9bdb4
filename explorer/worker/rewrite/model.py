"""The imported model as the rewrites see it: a flat GraphDef, its inputs and outputs, and its variables.

A ``Model`` is a copy: rewriting it never touches the loaded model the other requests use. It offers
what every rewrite needs: the nodes by name and their consumers, which tensors are constant-valued (no
model input among their ancestors: constants and variables only), their values (computed once by
TensorFlow), the static shapes of the model as fed, new weights in the form the model keeps its own
(a variable where the layer read one, a Const in a frozen graph), and rerouting a tensor's uses,
the model's outputs included. ``prune`` drops what nothing needed any more.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np

CONTROL_FREE = ("Identity",)  # passes a tensor on unchanged


@dataclass
class Model:
    graph_def: object  # the GraphDef being rewritten (a copy)
    feeds: list  # tensor names of the model's inputs ("image:0"), in input order
    inputs: list  # [(name, shape with None for unknown dims, tf dtype)], as the loader gives them
    outputs: list  # tensor names of the model's outputs, in output order
    handles: dict  # resource placeholder node -> the eager handle it stands for (a variable)
    tf: object
    shapes: dict = field(default_factory=dict)  # node -> static output shape (list of ints) as fed
    new_variables: dict = field(default_factory=dict)  # resource placeholder node -> value (made by a rewrite)
    _values: dict = field(default_factory=dict)

    # ---- reading -----------------------------------------------------------------------------------

    def nodes(self) -> dict:
        return {n.name: n for n in self.graph_def.node}

    def consumers(self) -> dict:
        """{node: [(consumer node, input index)]} over data inputs; the outputs count as a consumer (None)."""
        out = defaultdict(list)
        for node in self.graph_def.node:
            for i, text in enumerate(node.input):
                if not text.startswith("^"):
                    out[_node(text)].append((node, i))
        for tensor in self.outputs:
            out[_node(tensor)].append((None, -1))
        return out

    def controlled(self) -> set[str]:
        """Every node another node waits on (a control input)."""
        return {i[1:] for n in self.graph_def.node for i in n.input if i.startswith("^")}

    def has_control_edges(self, name: str, nodes: dict | None = None, controlled: set | None = None) -> bool:
        """Whether a node waits on another or another waits on it (a rewrite then leaves it alone);
        ``nodes`` and ``controlled``: ``self.nodes()`` and ``self.controlled()``, when at hand."""
        nodes = nodes if nodes is not None else self.nodes()
        controlled = controlled if controlled is not None else self.controlled()
        return any(i.startswith("^") for i in nodes[name].input) or name in controlled

    def source(self, tensor: str, nodes: dict | None = None) -> str:
        """The node a tensor comes from, through Identity nodes (``nodes``: ``self.nodes()``, when at hand)."""
        nodes = nodes if nodes is not None else self.nodes()
        name = _node(tensor)
        while name in nodes and nodes[name].op in CONTROL_FREE and nodes[name].input:
            name = _node(nodes[name].input[0])
        return name

    def constant_valued(self, tensor: str, nodes: dict | None = None) -> bool:
        """No model input among the tensor's ancestors: only constants and variables (and pure ops on them)."""
        nodes, feeds = nodes if nodes is not None else self.nodes(), {_node(f) for f in self.feeds}
        stack, seen = [_node(tensor)], set()
        while stack:
            name = stack.pop()
            if name in seen:
                continue
            seen.add(name)
            node = nodes.get(name)
            if node is None or name in feeds:
                return False
            if node.op == "Placeholder" and name not in self.handles:
                return False
            stack.extend(_node(i) for i in node.input if not i.startswith("^"))
        return True

    def weight_of(self, tensor: str) -> str | None:
        """How a constant-valued weight is held: "variable" (read from a handle), "const", or None."""
        nodes = self.nodes()
        node = nodes.get(self.source(tensor, nodes))
        # a mixed-precision layer's weight, cast; a Conv1D's kernel, expanded to the 4-D filter of its Conv2D
        while node is not None and node.op in ("Cast", "ExpandDims") and node.input:
            node = nodes.get(self.source(node.input[0], nodes))
        if node is None:
            return None
        if node.op == "ReadVariableOp":
            return "variable"
        return "const" if node.op == "Const" else None

    def values(self, tensors: list[str]) -> dict[str, np.ndarray]:
        """The values of constant-valued tensors, computed by TensorFlow in one call (and kept)."""
        wanted = [t if ":" in t else t + ":0" for t in tensors]
        missing = [t for t in dict.fromkeys(wanted) if t not in self._values]
        if missing:
            self._values.update(zip(missing, evaluate(self, missing)))
        return {t: self._values[t if ":" in t else t + ":0"] for t in tensors}

    def shape(self, tensor: str) -> list[int] | None:
        return self.shapes.get(_node(tensor))

    # ---- writing -----------------------------------------------------------------------------------

    def unique(self, name: str) -> str:
        taken = self.nodes()
        candidate, i = name, 1
        while candidate in taken or candidate in self.handles or candidate in self.new_variables:
            candidate, i = f"{name}_{i}", i + 1
        return candidate

    def weight(self, name: str, value: np.ndarray, dtype, like: str) -> str:
        """A new weight named after ``name``, held as the weight ``like`` is (a variable, or a Const)."""
        tf = self.tf
        if self.weight_of(like) == "variable":
            handle = self.unique(name + "/handle")
            node = self.graph_def.node.add(name=handle, op="Placeholder")
            node.attr["dtype"].type = tf.resource.as_datatype_enum
            self.new_variables[handle] = np.asarray(value, dtype=dtype.as_numpy_dtype)
            read = self.graph_def.node.add(name=self.unique(name), op="ReadVariableOp", input=[handle])
            read.attr["dtype"].type = dtype.as_datatype_enum
            return read.name
        node = self.graph_def.node.add(name=self.unique(name), op="Const")
        node.attr["dtype"].type = dtype.as_datatype_enum
        node.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(np.asarray(value, dtype=dtype.as_numpy_dtype)))
        return node.name

    def reroute(self, old: str, new: str) -> None:
        """Every use of tensor ``old`` (its consumers, the model's outputs) reads ``new`` instead."""
        old, new = _tensor(old), _tensor(new)
        for node in self.graph_def.node:
            for i, text in enumerate(node.input):
                if not text.startswith("^") and _tensor(text) == old:
                    node.input[i] = new
        self.outputs = [new if _tensor(t) == old else t for t in self.outputs]

    def forget_shapes(self, names) -> None:
        """Drop the shapes recorded on these nodes: the rewrite changed what they compute on, and TensorFlow infers
        the new ones when it imports the graph."""
        nodes = self.nodes()
        for name in names:
            if name in nodes and "_output_shapes" in nodes[name].attr:
                del nodes[name].attr["_output_shapes"]

    def remove(self, names) -> None:
        names = set(names)
        keep = [n for n in self.graph_def.node if n.name not in names]
        del self.graph_def.node[:]
        self.graph_def.node.extend(keep)
        for node in self.graph_def.node:  # a control edge from a removed node: nothing to wait for
            kept = [i for i in node.input if not (i.startswith("^") and i[1:] in names)]
            if len(kept) != len(node.input):
                del node.input[:]
                node.input.extend(kept)

    def prune(self) -> None:
        """Drop every node the outputs no longer need (through data and control inputs), the model's own
        inputs kept; variables nothing reads any more are dropped with their placeholders."""
        nodes = self.nodes()
        needed, stack = set(), [_node(t) for t in self.outputs]
        while stack:
            name = stack.pop()
            if name in needed or name not in nodes:
                continue
            needed.add(name)
            stack.extend(_node(i.lstrip("^")) for i in nodes[name].input)
        needed |= {_node(f) for f in self.feeds}
        self.remove([n for n in nodes if n not in needed])
        self.handles = {k: v for k, v in self.handles.items() if k in needed}
        self.new_variables = {k: v for k, v in self.new_variables.items() if k in needed}

    def variables(self) -> list:
        """[(placeholder node, value)] of every variable the model reads, in graph order."""
        dtypes, nodes = {}, self.nodes()  # placeholder -> the dtype its ReadVariableOps read
        for node in self.graph_def.node:
            if node.op == "ReadVariableOp":
                dtypes.setdefault(self.source(node.input[0], nodes), node.attr["dtype"].type)
        out = []
        for node in self.graph_def.node:
            if node.name in self.new_variables:
                out.append((node.name, self.new_variables[node.name]))
            elif node.name in self.handles:
                dtype = self.tf.dtypes.as_dtype(dtypes.get(node.name, self.tf.float32.as_datatype_enum))
                value = self.tf.raw_ops.ReadVariableOp(resource=self.handles[node.name], dtype=dtype)
                out.append((node.name, np.asarray(value.numpy())))
        return out


def each_site(sites: list[dict], targets: set[str] | None, key: str, rewrite) -> tuple[list[dict], list[dict]]:
    """(sites rewritten, sites left with why) of the ``sites`` whose ``key`` names one of ``targets`` (None: every
    site): a site with a ``why`` is left, each other one given to ``rewrite(site)``, which returns the names of any
    other nodes it touched."""
    done, left = [], []
    for site in sites:
        if targets is not None and site[key] not in targets:
            continue
        if site["why"]:
            left.append({"nodes": site["nodes"], "why": site["why"]})
            continue
        done.append({"nodes": site["nodes"] + list(rewrite(site) or ()), "why": None})
    return done, left


def attr(node, name: str):
    """A node's attribute, or its op's default when the node leaves it out, never written into the node.

    ``node.attr[name]`` on a protobuf map inserts an empty value when the key is missing: a GraphDef MatMul
    without ``transpose_a``/``transpose_b`` (TF's own GraphDefs leave defaults out) came out of a rewrite with an
    attribute holding no value, and failed to import ("Failed to bind all placeholders")."""
    if name in node.attr:
        return node.attr[name]
    from tensorflow.core.framework import attr_value_pb2
    from tensorflow.python.framework import op_def_registry

    op_def = op_def_registry.get(node.op)
    for a in op_def.attr if op_def is not None else ():
        if a.name == name and a.HasField("default_value"):
            return a.default_value
    return attr_value_pb2.AttrValue()


def as_bias_add(node, value: str, bias: str, layout: str = "NHWC") -> None:
    """Make ``node`` (in place, its name kept) the BiasAdd of ``value`` and ``bias``, of its own dtype, adding along
    ``layout``'s channels (NHWC: the last axis; NCHW: the second)."""
    node.op = "BiasAdd"
    for key in list(node.attr):
        if key != "T":
            del node.attr[key]
    node.attr["data_format"].s = layout.encode()
    del node.input[:]
    node.input.extend([value, bias])


def evaluate(model: Model, tensors: list[str]) -> list[np.ndarray]:
    """Constant-valued tensors of the model computed by TensorFlow: the graph imported into a function
    with its variables captured, pruned to what the tensors need (no model input is fed)."""
    tf = model.tf
    graph_def = tf.compat.v1.GraphDef()
    graph_def.CopyFrom(model.graph_def)

    def body():
        graph = tf.compat.v1.get_default_graph()
        handles = {**model.handles, **_new_handles(model)}
        tf.graph_util.import_graph_def(graph_def, input_map={f"{k}:0": graph.capture(h) for k, h in handles.items()},
                                       name="")

    wrapped = tf.compat.v1.wrap_function(body, [])
    fetch = [wrapped.graph.get_tensor_by_name(t) for t in tensors]
    return [np.asarray(t.numpy()) for t in wrapped.prune([], fetch)()]


def _new_handles(model: Model) -> dict:
    """Handles for the variables rewrites made, so a value can be read through them too."""
    from ..models.signature import _variables

    names = list(model.new_variables)
    handles, owners = _variables([model.new_variables[n] for n in names], model.tf)
    model._owners = owners  # noqa: SLF001 - they live as long as the model
    return dict(zip(names, handles))


def _node(tensor: str) -> str:
    return tensor.lstrip("^").split(":")[0]


def _tensor(text: str) -> str:
    return text if ":" in text else text + ":0"
