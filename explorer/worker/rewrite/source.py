"""A loaded model as a rewritable copy (``source``), and a rewritten one written out (``write``).

Every imported model is one flat GraphDef in the worker (``models.imported``): its inputs, outputs and
the variables its resource placeholders stand for. The result is written as the model
keeps its weights: a GraphDef (``model.pb``) when nothing is a variable any more (a frozen graph, or
after ``freeze``), else a SavedModel (``savedmodel/``) whose one signature, ``serving_default``,
runs the rewritten graph on variables holding the weights; outputs are named ``output_0``, ``output_1`` ...
"""

from __future__ import annotations

import os

from ..models import imported
from ..models.imported import GRAPH, UNLOWERED
from .model import Model


def source(spec, tf, shapes: dict[str, list[int]]) -> Model:
    loaded = imported.load(spec, tf)
    body = loaded.body
    if hasattr(body, UNLOWERED):  # the rewrites work on a loop as one op: lowered, a weight frozen inside its body
        body = getattr(body, UNLOWERED)()  # would be a constant outside the loop's frame
    graph_def, feeds, outputs, handles = getattr(body, GRAPH)
    copied = tf.compat.v1.GraphDef()
    copied.CopyFrom(graph_def)
    variables = {}
    for name, captured in handles:
        if captured.dtype == tf.resource:
            variables[name.split(":")[0]] = captured
        else:  # a captured constant (tf.saved_model.load's way): a Const in the copy
            _as_constant(copied, name.split(":")[0], captured.numpy(), tf)
    return Model(copied, list(feeds), list(loaded.inputs), list(outputs), variables, tf, shapes=dict(shapes))


def _as_constant(graph_def, name: str, value, tf) -> None:
    node = next(n for n in graph_def.node if n.name == name)
    node.op = "Const"
    node.attr.clear()
    node.attr["dtype"].type = tf.as_dtype(value.dtype).as_datatype_enum
    node.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(value))


def write(model: Model, directory: str) -> dict:
    """The model written under ``directory``: {"format", "path"}."""
    os.makedirs(directory, exist_ok=True)
    variables = model.variables()
    if not variables:
        path = os.path.join(directory, "model.pb")
        with open(path, "wb") as handle:
            handle.write(model.graph_def.SerializeToString())
        return {"format": "graphdef", "path": path, "outputs": [t.split(":")[0] for t in model.outputs]}
    path = os.path.join(directory, "savedmodel")
    _saved_model(model, variables, path)
    return {"format": "savedmodel", "path": path, "outputs": []}


def _saved_model(model: Model, variables: list, path: str) -> None:
    tf = model.tf
    module = tf.Module()
    module.weights_ = [tf.Variable(value, name="w") for _, value in variables]
    placeholders = [name for name, _ in variables]
    graph_def = tf.compat.v1.GraphDef()
    graph_def.CopyFrom(model.graph_def)
    fed = {f.split(":")[0] for f in model.feeds} | set(placeholders)
    kept = [n for n in graph_def.node if not (n.op == "Placeholder" and n.name in fed)]
    del graph_def.node[:]
    graph_def.node.extend(kept)
    for node in graph_def.node:  # colocation with a placeholder the import feeds instead would name no node
        if "_class" in node.attr:
            del node.attr["_class"]
    specs = [tf.TensorSpec(shape, dtype, name=name) for name, shape, dtype in model.inputs]
    feeds, outputs = list(model.feeds), list(model.outputs)

    def serve(*args):
        input_map = dict(zip([f if ":" in f else f + ":0" for f in feeds], args))
        graph = tf.compat.v1.get_default_graph()
        input_map.update({f"{name}:0": graph.capture(variable.handle)
                          for name, variable in zip(placeholders, module.weights_)})
        results = tf.graph_util.import_graph_def(graph_def, input_map=input_map, return_elements=outputs, name="")
        return {f"output_{i}": tensor for i, tensor in enumerate(results)}

    module.serve = tf.function(serve, input_signature=specs)
    # The imported nodes keep their custom-gradient marks (Keras' swish), which a serving model has no use for.
    tf.saved_model.save(module, path, signatures={"serving_default": module.serve},
                        options=tf.saved_model.SaveOptions(experimental_custom_gradients=False))
