"""An imported graph called as a function of the eager runtime, with no Python trace.

``tf.function`` of an imported body rebuilds the GraphDef as a Python graph (an object per op), adds
a placeholder per captured variable and converts it all back to a FunctionDef: ~0.4 s of a
MobileNetV2's first graphs. Here the GraphDef becomes that FunctionDef directly (its placeholders the
arguments, its inputs renamed to a function's "node:output_arg:i"), registered with the eager context
and called by name, which is how a ``tf.function`` call ends too: the runtime instantiates it the same
way (Grappler, partitioning, the graphs of run metadata). Static shapes, which a trace would have
given, come from Grappler's shape inference over a copy whose inputs are given their shapes.
"""

from __future__ import annotations

import itertools

import numpy as np

from ...errors import SpecError, shown
from ...model.graph import parse_input

# A traced body named "model" (models.imported._named) gets this prefix from tf.function; Grappler's log
# and per-pass dumps tell the model's function by it (worker.grappler.MAIN_PREFIX).
NAME_PREFIX = "__inference_model_"
_NAMES = itertools.count()
CONSTANT_BYTES = 4096  # larger constants are weights, never a shape or an axis that inference reads


class Unsupported(Exception):
    """A graph this path does not take (the caller traces it with tf.function instead)."""


class GraphFunction:
    """Callable like a tf.function of the imported body: ``fn(*inputs)`` -> list of output tensors.

    ``feeds``: the placeholders the inputs feed ("name:0"), in argument order; ``handles``: [(placeholder
    tensor name, captured tensor)] passed after the inputs (a SavedModel's variables as resource handles,
    or a tensor tf.saved_model.load captured); ``outputs``: the tensors returned ("node:k")."""

    def __init__(self, graph_def, feeds: list[str], outputs: list[str], handles, tf, declared=None):
        from tensorflow.python.framework import op_def_registry

        self.tf, self.graph_def, self.outputs = tf, graph_def, list(outputs)
        # The inputs' shapes as the model declares them (None: unknown), one per feed: the function is
        # then registered as served, its unknown dimensions left unknown whatever the values fed.
        # None: registered with the shapes of the values of each call (the dimensions fixed).
        self.declared = None if declared is None else [None if s is None else list(s) for s in declared]
        self.feeds = [_tensor(f) for f in feeds]
        self.handles = [(_tensor(p), h) for p, h in handles]
        library = {f.signature.name: f.signature for f in graph_def.library.function}
        arg_nodes = {name.split(":")[0] for name in self.feeds + [p for p, _ in self.handles]}
        self._outputs_of: dict[str, list[tuple[str, int]]] = {}  # node -> [(output arg, dtype)] per output
        for node in graph_def.node:
            if node.name in arg_nodes:
                continue
            op_def = library.get(node.op) or op_def_registry.get(node.op)
            if op_def is None:
                raise Unsupported(f"op {node.op} is not registered")
            self._outputs_of[node.name] = _output_layout(node, op_def)
        self._body = self._function_body(graph_def)  # every name resolved now: what is unsupported shows here
        self._registered: dict[tuple, str] = {}

    # ---- calling ---------------------------------------------------------------------------------

    def __call__(self, *args):
        from tensorflow.python.eager import context

        name = self._register(args)
        inputs = list(args) + [h for _, h in self.handles]
        return context.context().call_function(name.encode(), inputs, len(self.outputs)) or []

    def _register(self, args) -> str:
        key = tuple((tuple(a.shape) if self.declared is None else (), a.dtype.as_datatype_enum) for a in args)
        if key not in self._registered:
            from tensorflow.python.eager import context

            register_library(self.graph_def)
            name = f"{NAME_PREFIX}{next(_NAMES)}_graph"
            context.context().add_function_def(self.function_def(name, args))
            self._registered[key] = name
        return self._registered[key]

    def __del__(self):
        try:
            from tensorflow.python.eager import context

            for name in self._registered.values():
                context.context().remove_function(name)
        except Exception:  # noqa: BLE001 - at interpreter exit the context may be gone already
            pass

    # ---- the FunctionDef -------------------------------------------------------------------------

    def function_def(self, name: str, args):
        """The graph as a FunctionDef named ``name``, its feed arguments shaped as declared (as served) or,
        with no declared shapes, as ``args``."""
        from tensorflow.core.framework import function_pb2

        fdef = function_pb2.FunctionDef()
        fdef.CopyFrom(self._body)
        fdef.signature.name = name
        feeds = [list(a.shape) for a in args] if self.declared is None else self.declared
        shapes = feeds + [None if h.dtype == self.tf.resource else list(h.shape) for _, h in self.handles]
        for index, shape in enumerate(shapes):
            if shape is not None:
                fdef.arg_attr[index].attr["_output_shapes"].list.shape.add().CopyFrom(
                    self.tf.TensorShape(shape).as_proto())
        return fdef

    def _function_body(self, graph_def):
        """The FunctionDef but for its name and its arguments' shapes: one argument per feed, then one
        per captured tensor; the nodes' inputs renamed to "node:output_arg:i" or the argument's name."""
        from tensorflow.core.framework import function_pb2

        fdef = function_pb2.FunctionDef()
        fdef.attr["_construction_context"].s = b"kEagerRuntime"  # as tf.function marks its own
        nodes = {n.name: n for n in graph_def.node}
        taken = set(self._outputs_of)
        renamed: dict[str, str] = {}  # "placeholder:0" -> argument name
        if any(t.split(":")[0] not in nodes for t in self.feeds):
            raise Unsupported("an input is not a placeholder of the graph")
        arguments = [(t, nodes[t.split(":")[0]].attr["dtype"].type) for t in self.feeds]
        arguments += [(t, h.dtype.as_datatype_enum) for t, h in self.handles]
        for index, (tensor, dtype) in enumerate(arguments):
            arg = fdef.signature.input_arg.add(name=_free(f"args_{index}", taken), type=dtype)
            renamed[tensor] = arg.name
            fdef.arg_attr[index].attr["_user_specified_name"].s = tensor.split(":")[0].encode()
        for node in graph_def.node:
            if node.name not in self._outputs_of:
                continue
            copy = fdef.node_def.add()
            copy.CopyFrom(node)
            del copy.input[:]
            if "_output_shapes" in copy.attr:  # the exporter's shapes (batch unknown): a trace drops them too
                del copy.attr["_output_shapes"]
            for text in node.input:
                edge = parse_input(text)
                source = f"{edge.src}:{edge.port}"
                if edge.control:
                    if edge.src in self._outputs_of:  # a control edge from an argument orders nothing
                        copy.input.append("^" + edge.src)
                elif source in renamed:
                    copy.input.append(renamed[source])
                else:
                    copy.input.append(self._function_tensor(edge.src, edge.port, node.name))
        for index, tensor in enumerate(self.outputs):
            src, _, k = tensor.partition(":")
            out = fdef.signature.output_arg.add(name=f"output_{index}")
            if tensor in renamed:
                raise Unsupported(f"output {tensor} is an input of the graph")
            layout = self._outputs_of.get(src)
            if layout is None or int(k or 0) >= len(layout):
                raise Unsupported(f"output {tensor} is not a tensor of the graph")
            out.type = layout[int(k or 0)][1]
            fdef.ret[out.name] = self._function_tensor(src, int(k or 0), "the outputs")
        return fdef

    def _function_tensor(self, src: str, index: int, user: str) -> str:
        layout = self._outputs_of.get(src)
        if layout is None or index >= len(layout):
            raise Unsupported(f"{user} reads {src}:{index}, which the graph does not make")
        arg, _ = layout[index]
        position = sum(1 for a, _ in layout[:index] if a == arg)
        return f"{src}:{arg}:{position}"

    # ---- what a trace would have told ------------------------------------------------------------

    def static_shapes(self, *args) -> dict[str, list[int] | None]:
        """Shape of every node's first output (-1: unknown dimension; None: unknown rank), by node name,
        inferred over a copy where each input and each variable read is an ``Empty`` of its shape.

        Grappler's inference first (~0.05 s on MobileNetV2); where it leaves a shape open, the shape
        refiner of a Python graph, which is what a trace uses (it evaluates shape arithmetic such as
        Shape->Gather->Prod that Grappler's does not) and costs ~0.2 s more."""
        graph_def = self._shape_graph(args)
        shapes = self._grappler_shapes(graph_def)
        resource = self.tf.resource.as_datatype_enum
        if any(shapes.get(name) is None or -1 in shapes[name]
               for name, layout in self._outputs_of.items() if layout and layout[0][1] != resource):
            shapes = self._refined_shapes(graph_def)
        for name, layout in self._outputs_of.items():
            if layout and layout[0][1] == resource:
                shapes[name] = []  # a resource handle is a scalar (inference cannot see through the feeds)
        return {name: shapes.get(name) for name, layout in self._outputs_of.items() if layout}

    def _grappler_shapes(self, graph_def) -> dict:
        from tensorflow.core.protobuf import meta_graph_pb2
        from tensorflow.python.grappler import item as grappler_item

        meta = meta_graph_pb2.MetaGraphDef()
        meta.graph_def.CopyFrom(graph_def)
        meta.collection_def["train_op"].node_list.value.extend(self.outputs)
        try:
            properties = grappler_item.Item(meta, ignore_colocation=True).GetOpProperties()
        except (RuntimeError, ValueError):  # a graph Grappler's inference fails on: the refiner below
            return {}
        shapes = {}
        for name, outputs in properties.items():
            if outputs:
                shape = outputs[0].shape
                shapes[name] = None if shape.unknown_rank else [d.size if d.size >= 0 else -1 for d in shape.dim]
        return shapes

    def _refined_shapes(self, graph_def) -> dict:
        tf = self.tf
        with tf.Graph().as_default() as graph:
            try:
                tf.graph_util.import_graph_def(graph_def, name="")
            except (ValueError, tf.errors.OpError):  # shapes are for display: a graph without them still shows
                return {}
        return {op.name: static_dims(op.outputs[0].shape) for op in graph.get_operations() if op.outputs}

    def _shape_graph(self, args):
        """The graph with its inputs, variable reads and large constants as ``Empty`` of their shapes."""
        graph_def = self.tf.compat.v1.GraphDef()
        graph_def.CopyFrom(self.graph_def)
        nodes = {n.name: n for n in graph_def.node}
        handle_shapes = {p.split(":")[0]: h._handle_data.shape_and_type[0] for p, h in self.handles  # noqa: SLF001
                         if h.dtype == self.tf.resource and h._handle_data is not None  # noqa: SLF001
                         and h._handle_data.shape_and_type}  # noqa: SLF001

        def handle_of(name: str):
            for _ in range(64):  # through the Identity nodes inlining puts between a call and its arguments
                if name in handle_shapes:
                    return handle_shapes[name]
                node = nodes.get(name)
                if node is None or node.op != "Identity" or not node.input:
                    return None
                name = parse_input(node.input[0]).src
            return None

        fed = {t.split(":")[0]: list(a.shape) for t, a in zip(self.feeds, args)}
        fed.update({t.split(":")[0]: list(h.shape) for t, h in self.handles if h.dtype != self.tf.resource})
        for node in list(graph_def.node):
            if node.name in fed:
                _as_empty(graph_def, node, fed[node.name], self.tf)
            elif node.op == "Const" and node.attr["value"].tensor.ByteSize() > CONSTANT_BYTES:
                # A frozen model's weights: only their shapes matter here, and copying them is what costs.
                tensor = node.attr["value"].tensor
                dims = [d.size for d in tensor.tensor_shape.dim]
                node.attr["dtype"].type = tensor.dtype
                _as_empty(graph_def, node, dims, self.tf)
            elif node.op == "ReadVariableOp" and node.input:
                handle = handle_of(parse_input(node.input[0]).src)
                if handle is not None and not handle.shape.unknown_rank and all(d.size >= 0 for d in handle.shape.dim):
                    _as_empty(graph_def, node, [d.size for d in handle.shape.dim], self.tf)
        return graph_def


def register_library(graph_def) -> None:
    """The functions of a GraphDef's library, registered with the eager context by name (what its nodes
    call). A traced import needs this too: import_graph_def leaves them out of the context, so a graph
    calling one fails to instantiate under XLA. An imported model's functions have names of its own
    (``naming``); a name held by a different function is still refused, never replaced."""
    from tensorflow.python.eager import context

    ctx = context.context()
    for function in graph_def.library.function:
        name = function.signature.name
        if not ctx.has_function(name):
            ctx.add_function_def(function)
        elif not _same_function(ctx.get_function_def(name), function):
            raise SpecError("import", f"the graph's library function {shown(name)} has the name of a different "
                                      "function already registered in this worker; it is refused")


def _same_function(registered, function) -> bool:
    """Whether two FunctionDefs are one function (the context marks what it registers with its construction context)."""
    if registered == function:
        return True
    copy = type(registered)()
    copy.CopyFrom(registered)
    if "_construction_context" not in function.attr:
        copy.attr.pop("_construction_context", None)
    return copy == function


def static_dims(shape) -> list[int] | None:
    """A tf.TensorShape as a list, -1 for an unknown dimension; None for an unknown rank."""
    return None if shape.rank is None else [-1 if d is None else d for d in shape.as_list()]


def _tensor(name: str) -> str:
    return name if ":" in name else name + ":0"


def _free(name: str, taken: set) -> str:
    candidate = name
    while candidate in taken:
        candidate += "_"
    taken.add(candidate)
    return candidate


def _attr(node, op_def, name: str):
    if name in node.attr:
        return node.attr[name]
    for attr in op_def.attr:
        if attr.name == name and attr.HasField("default_value"):
            return attr.default_value
    raise Unsupported(f"node {node.name!r} ({node.op}) has no attribute {name!r}")


def _output_layout(node, op_def) -> list[tuple[str, int]]:
    """(output arg name, dtype enum) of each of the node's outputs, in order."""
    layout = []
    for out in op_def.output_arg:
        if out.type_list_attr:
            types = list(_attr(node, op_def, out.type_list_attr).list.type)
        else:
            dtype = out.type or _attr(node, op_def, out.type_attr).type
            count = _attr(node, op_def, out.number_attr).i if out.number_attr else 1
            types = [dtype] * count
        layout.extend((out.name, t) for t in types)
    return layout


def _as_empty(graph_def, node, dims: list, tf) -> None:
    """Turn ``node`` into Empty(shape=dims) of its dtype: same name, same first output's shape."""
    dtype = node.attr["dtype"].type
    shape = graph_def.node.add(name=node.name + "/explorer_shape", op="Const")
    shape.attr["dtype"].type = tf.int32.as_datatype_enum
    shape.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(np.array(dims, np.int32)))
    node.op = "Empty"
    del node.input[:]
    node.input.append(shape.name)
    node.attr.clear()
    node.attr["dtype"].type = dtype
