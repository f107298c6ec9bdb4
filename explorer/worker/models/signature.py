"""A SavedModel signature read straight from its files: one flat GraphDef and its variables' values.

``tf.saved_model.load`` rebuilds every function of the model as a Python graph and restores the
checkpoint through the object graph: 2.7 s for MobileNetV2, where the explorer needs one signature.
Here the signature's function is inlined by Grappler's function pass from ``saved_model.pb``'s own
library (what ``load`` + inlining gives, without the Python graphs), and each variable it captures
is read from the checkpoint under the key its object path gives. A model this reader does not know
(a captured constant or lookup table, a key missing) raises ``Unsupported``; ``load`` is then the
long way, through ``tf.saved_model.load``, giving the same record.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass

from ..safety import reachable_functions

READ = "the signature read from saved_model.pb and the checkpoint"
LOADED = "tf.saved_model.load"
CALL_OPS = ("StatefulPartitionedCall", "PartitionedCall")


class Unsupported(Exception):
    """This SavedModel needs tf.saved_model.load (the message says why, for the record)."""


@dataclass
class Signature:
    graph_def: object  # flat GraphDef: signature inputs, captures as resource Placeholders, body inlined
    feeds: list  # tensor names of the signature's inputs, in the order of ``inputs``
    inputs: list  # [(key, shape with None for unknown dims or None for unknown rank, tf dtype)], by key
    outputs: list  # tensor names of the signature's outputs, by key
    handles: list  # [(placeholder tensor name, the resource handle it stands for)]
    keepalive: object  # what owns those resources: they live as long as it does
    loader: dict  # {"by": READ or LOADED, "why": the reader's reason for leaving it to TensorFlow}
    # () -> the same graph with its loops and conditionals left functional, as XLA compiles them (None: it has none)
    unlowered: Callable[[], object] | None = None


LOWERED_OPS = frozenset(("Switch", "Merge", "Enter", "Exit", "NextIteration", "LoopCond"))
CONTROL_FLOW_OPS = frozenset(("If", "StatelessIf", "While", "StatelessWhile", "Case", "StatelessCase"))
LOWER = "_lower_using_switch_merge"


def unlowered_if_needed(graph_def, make: Callable[[], object]) -> Callable[[], object] | None:
    """``make`` when the inlining lowered something in ``graph_def``, else None."""
    return make if any(n.op in LOWERED_OPS for n in graph_def.node) else None


def _control_flow(graph_def):
    yield from (n for n in graph_def.node if n.op in CONTROL_FLOW_OPS)
    for function in graph_def.library.function:
        yield from (n for n in function.node_def if n.op in CONTROL_FLOW_OPS)


def inlined_unlowered(graph_def, inline):
    """``inline(graph_def with lowering switched off)``, then each loop's and conditional's own ``LOWER`` put back (an
    inlined node is found by the name it had, which its new name ends with): the graph runs and is written as the
    model asked, and XLA compiles it as it is."""
    from tensorflow.python.framework import convert_to_constants

    asked = {n.name: n.attr[LOWER].b for n in _control_flow(graph_def) if LOWER in n.attr}
    out = inline(convert_to_constants.disable_lower_using_switch_merge(graph_def))
    for node in _control_flow(out):
        value = asked.get(node.name)
        if value is None:
            value = next((v for name, v in asked.items() if node.name.endswith("/" + name)), None)
        if value is None:
            del node.attr[LOWER]
        else:
            node.attr[LOWER].b = value
    return out


def load(root: str, signature: str, tf, why: str) -> Signature:
    """The long way: tf.saved_model.load, then the signature's calls inlined (Grappler's function
    pass, what freezing does first) with its variables kept live: freezing would let constant folding
    and oneDNN fold the weights, which a live SavedModel never sees (MobileNetV2's Conv2D+BN+Relu6
    fuse when frozen, not when live)."""

    loaded = tf.saved_model.load(root)
    function = loaded.signatures[signature]
    _, kwargs = function.structured_input_signature
    graph_def, unlowered = _inlined(function)
    captures = function.graph.captures
    inputs = [(kw, None if kwargs[kw].shape.rank is None else kwargs[kw].shape.as_list(), kwargs[kw].dtype)
              for kw in sorted(kwargs)]
    return Signature(graph_def, [t.name for t in function.inputs[:len(function.inputs) - len(captures)]], inputs,
                     [t.name for t in function.outputs], [(inner.name, outer) for outer, inner in captures],
                     (loaded, function), {"by": LOADED, "why": why}, unlowered)


def traced(call, inputs: list, tf):
    """``call`` (a Keras model's call) traced once for ``inputs`` ([(name, shape, dtype)], unknown dimensions left
    unknown) into the flat form a SavedModel's signature gets: (GraphDef with its calls inlined and its loops
    lowered as the runtime lowers them, feeds, outputs, [(placeholder tensor name, captured tensor)], the concrete
    function that owns the captures, ``Signature.unlowered``)."""

    specs = [tf.TensorSpec(shape, dtype, name=name) for name, shape, dtype in inputs]
    concrete = tf.function(call).get_concrete_function(*specs)
    graph_def, unlowered = _inlined(concrete)
    captures = concrete.graph.captures
    feeds = [t.name for t in concrete.inputs[:len(concrete.inputs) - len(captures)]]
    return (graph_def, feeds, [t.name for t in concrete.outputs], [(inner.name, outer) for outer, inner in captures],
            concrete, unlowered)


def _inlined(function):
    """A concrete function's graph with its calls inlined by TensorFlow's own freezing pass, loops lowered where the
    model asks for it (as ``_inline_calls``), and its ``Signature.unlowered`` (the pass switches lowering off itself)."""
    from tensorflow.python.framework import convert_to_constants

    def inline(lower: bool):
        return convert_to_constants._run_inline_graph_optimization(function, lower, False)  # noqa: SLF001

    graph_def = inline(True)
    return graph_def, unlowered_if_needed(
        graph_def, lambda: inlined_unlowered(function.graph.as_graph_def(), lambda _: inline(False)))


def read(proto, root: str, signature: str, tf) -> Signature:
    """The signature from the files (see above); ``Unsupported`` when it needs tf.saved_model.load."""
    from tensorflow.core.framework import tensor_shape_pb2

    meta = proto.meta_graphs[0]
    sig = meta.signature_def[signature]
    nodes = {n.name: n for n in meta.graph_def.node}
    calls = {t.name.split(":")[0] for t in sig.outputs.values()}
    if len(calls) != 1:
        raise Unsupported(f"the signature's outputs come from {len(calls)} nodes")
    call = nodes.get(calls.pop())
    if call is None or call.op not in CALL_OPS:
        raise Unsupported("the signature's outputs are not one function call")
    name = call.attr["f"].func.name
    functions = {f.signature.name: f for f in meta.graph_def.library.function}
    if name not in functions or name not in meta.object_graph_def.concrete_functions:
        raise Unsupported(f"no function {name} in the library and the object graph")
    args = [i for i in call.input if not i.startswith("^")]
    arg_defs = functions[name].signature.input_arg
    if len(args) != len(arg_defs):
        raise Unsupported("the call's inputs do not match its function's arguments")
    feeds = {t.name.split(":")[0]: key for key, t in sig.inputs.items()}
    resource = tf.dtypes.resource.as_datatype_enum
    captured = [i for i, a in enumerate(arg_defs) if a.type == resource]
    for i, a in enumerate(args):
        if i not in captured and a.split(":")[0] not in feeds:
            raise Unsupported(f"argument {i} of the signature's function is a captured "
                              f"{tf.dtypes.as_dtype(arg_defs[i].type).name} tensor, not an input or a variable")
    bound = list(meta.object_graph_def.concrete_functions[name].bound_inputs)
    if len(bound) != len(captured):
        raise Unsupported("the function's captures and its bound objects differ in number")
    values = _variable_values(meta.object_graph_def, bound, root, tf)

    # The signature's own function as the outer graph (its arguments become Placeholders named after
    # them), so that inlining takes the calls inside it, as inlining the loaded function's graph does.
    wrapper = functions[name]
    by_feed = {args[i].split(":")[0]: i for i in range(len(args)) if i not in captured}
    shapes = [tensor_shape_pb2.TensorShapeProto() for _ in args]  # a handle is a scalar
    for placeholder, key in feeds.items():
        if placeholder not in by_feed:
            raise Unsupported(f"input {key!r} of the signature is not an argument of its function")
        shapes[by_feed[placeholder]] = sig.inputs[key].tensor_shape
    graph_def, flat = _as_graph_def(wrapper, shapes, functions, tf)
    # Only what the signature calls: the save and restore functions, which read and write files, stay out.
    for function in sorted(reachable_functions(functions, [name])):
        graph_def.library.function.add().CopyFrom(functions[function])
    arg_names = [a.name for a in wrapper.signature.input_arg]
    out_args = wrapper.signature.output_arg
    if any(a.number_attr or a.type_list_attr for a in out_args):
        raise Unsupported("the signature's function returns lists of tensors")
    outputs = []
    for key in sorted(sig.outputs):
        index = int(sig.outputs[key].name.split(":")[1]) if ":" in sig.outputs[key].name else 0
        returned = wrapper.ret[out_args[index].name]
        outputs.append(flat.get(returned, returned))
    inputs = [(key, _shape(sig.inputs[key].tensor_shape), tf.dtypes.as_dtype(sig.inputs[key].dtype))
              for key in sorted(sig.inputs)]
    feed_names = [arg_names[by_feed[sig.inputs[key].name.split(":")[0]]] + ":0" for key in sorted(sig.inputs)]
    placeholders = [arg_names[i] + ":0" for i in captured]
    fetch = feed_names + placeholders + outputs
    flat = _inline_calls(graph_def, fetch, tf)
    handles, owners = _variables(values, tf)  # ours, holding the checkpoint's values
    return Signature(flat, feed_names, inputs, outputs, list(zip(placeholders, handles)), owners,
                     {"by": READ, "why": ""}, unlowered_if_needed(flat, lambda: inlined_unlowered(graph_def, lambda g: _inline_calls(g, fetch, tf))))


def _as_graph_def(fdef, shapes: list, functions: dict, tf):
    """A FunctionDef as a GraphDef: its arguments as Placeholders of the given shapes, its nodes with
    their inputs renamed from the function's "node:output_arg:i" to the graph's "node:k"; and the map
    of those names (TF's own converter needs every called function built in a Python graph first)."""
    from tensorflow.python.framework import op_def_registry

    graph_def = tf.compat.v1.GraphDef()
    flat = {}
    for arg, shape in zip(fdef.signature.input_arg, shapes):
        node = graph_def.node.add(name=arg.name, op="Placeholder")
        node.attr["dtype"].type = arg.type
        node.attr["shape"].shape.CopyFrom(shape)
        flat[arg.name] = arg.name + ":0"
    for node in fdef.node_def:
        op_def = functions[node.op].signature if node.op in functions else op_def_registry.get(node.op)
        if op_def is None:
            raise Unsupported(f"op {node.op} of the signature's function is not known")
        offset = 0
        for out in op_def.output_arg:
            count = (node.attr[out.number_attr].i if out.number_attr else
                     len(node.attr[out.type_list_attr].list.type) if out.type_list_attr else 1)
            for i in range(count):
                flat[f"{node.name}:{out.name}:{i}"] = f"{node.name}:{offset + i}"
            offset += count
    for source in fdef.node_def:
        node = graph_def.node.add()
        node.CopyFrom(source)
        del node.input[:]
        for name in source.input:
            if name.startswith("^"):
                node.input.append(name)
            elif name in flat:
                node.input.append(flat[name])
            else:
                raise Unsupported(f"input {name!r} of node {source.name!r} is not found")
    return graph_def, flat


def _shape(proto):
    return None if proto.unknown_rank else [d.size if d.size >= 0 else None for d in proto.dim]


def _object_paths(graph) -> dict:
    """Node id -> the first path of child names that reaches it from the root (breadth first)."""
    paths, queue = {0: ()}, deque([0])
    while queue:
        node_id = queue.popleft()
        for child in graph.nodes[node_id].children:
            if child.node_id not in paths:
                paths[child.node_id] = paths[node_id] + (child.local_name,)
                queue.append(child.node_id)
    return paths


def _variables(values, tf) -> tuple[list, list]:
    """A resource variable per value, made by the two ops a tf.Variable runs (a handle carrying its
    dtype and shape, an assignment) without its Python bookkeeping: MobileNetV2's 262 in ~0.06 s
    instead of ~0.13 s. Returns the handles and their deleters (a handle lives as long as its deleter)."""
    from tensorflow.python.ops import gen_resource_variable_ops, resource_variable_ops

    handles, deleters = [], []
    for value in values:
        tensor = tf.constant(value)
        handle = resource_variable_ops.eager_safe_variable_handle(
            initial_value=tensor, shape=tensor.shape, shared_name=None, name="Variable", graph_mode=False)
        gen_resource_variable_ops.assign_variable_op(handle, tensor)
        handles.append(handle)
        deleters.append(resource_variable_ops.EagerResourceDeleter(handle, handle.device))
    return handles, deleters


def _variable_values(object_graph, bound: list, root: str, tf) -> list:
    """Each bound object's value from the checkpoint: it must be a variable, found in the checkpoint's
    own object graph by the same path of child names the SavedModel's object graph gives it."""
    from tensorflow.core.protobuf import trackable_object_graph_pb2

    prefix = os.path.join(root, "variables", "variables")
    if bound and not os.path.exists(prefix + ".index"):
        raise Unsupported("no variables checkpoint")
    reader = tf.train.load_checkpoint(prefix) if bound else None
    checkpoint = trackable_object_graph_pb2.TrackableObjectGraph()
    if bound:
        checkpoint.ParseFromString(reader.get_tensor("_CHECKPOINTABLE_OBJECT_GRAPH"))
    paths = _object_paths(object_graph)
    values = []
    for node_id in bound:
        saved = object_graph.nodes[node_id]
        if saved.WhichOneof("kind") != "variable" or node_id not in paths:
            raise Unsupported(f"object {node_id} captured by the signature is a {saved.WhichOneof('kind')}, not a variable")
        where = 0
        for part in paths[node_id]:
            where = next((c.node_id for c in checkpoint.nodes[where].children if c.local_name == part), None)
            if where is None:
                raise Unsupported(f"variable {'/'.join(paths[node_id])} is not in the checkpoint")
        keys = [a.checkpoint_key for a in checkpoint.nodes[where].attributes if a.name == "VARIABLE_VALUE"]
        if len(keys) != 1:
            raise Unsupported(f"variable {'/'.join(paths[node_id])} has no single value in the checkpoint")
        value = reader.get_tensor(keys[0])
        variable = saved.variable
        if (tf.dtypes.as_dtype(variable.dtype) != tf.dtypes.as_dtype(value.dtype)
                or [d.size for d in variable.shape.dim] != list(value.shape)):
            raise Unsupported(f"variable {'/'.join(paths[node_id])}: the checkpoint's value has another dtype or shape")
        values.append(value)
    return values


def _inline_calls(graph_def, fetch: list, tf):
    """Grappler's function pass alone over the graph (every call inlined), fetching ``fetch``. Loops and
    conditionals are lowered to Switch/Merge where the model asks for it (``_lower_using_switch_merge``), as the
    runtime lowers them before Grappler when TensorFlow serves the signature: the remapper fuses inside a loop's
    body then, and so must the explorer's run (``inlined_unlowered``: not lowered)."""
    from tensorflow.core.protobuf import config_pb2, meta_graph_pb2
    from tensorflow.python.grappler import tf_optimizer

    for function in graph_def.library.function:
        if "api_implements" in function.attr:  # a secondary implementation would stop the inlining
            del function.attr["api_implements"]
    meta = meta_graph_pb2.MetaGraphDef()
    meta.graph_def.CopyFrom(graph_def)
    meta.collection_def["train_op"].node_list.value.extend(fetch)
    config = config_pb2.ConfigProto()
    rewrite = config.graph_options.rewrite_options
    rewrite.min_graph_nodes = -1
    rewrite.optimizers.append("function")
    # The MLIR (tfg) passes TF runs around every pipeline changed nothing here and cost ~60 ms of a
    # MobileNetV2's first graphs; the runtime's own Grappler run still has them.
    rewrite.disable_tfg_optimizer = True
    return tf_optimizer.OptimizeGraph(config, meta)
