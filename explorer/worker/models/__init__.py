"""Builders: model spec -> the Python body of a tf.function and its seeded inputs.

One module per model source, named by the source's ``builder`` in ``model.sources.SOURCES``: ``chain``
builds the op chains and the special kinds of the presets (it imports only numpy and takes the ``tf``
module as an argument, so that ``present.repro`` can embed its source in a standalone script); ``stack``
builds layer stacks as Keras 3 models; ``imported`` a user's GraphDef, SavedModel or .keras file.
``function`` makes the callable every request runs: a ``tf.function`` of the body, or for an imported
graph a ``graph_function.GraphFunction`` (the graph registered as a FunctionDef, no Python trace).
"""

from __future__ import annotations

from ...model.hooks import hook
from ...model.sources import source_of
from .graph_function import GraphFunction, Unsupported, register_library
from .imported import DECLARED, FUNCTION_ATTRIBUTES, GRAPH, UNLOWERED


def builder(spec):
    """The worker module that builds ``spec``'s source."""
    return hook(source_of(spec).builder)


def build(spec, tf):
    return builder(spec).build(spec, tf)


def function(body, tf, *, trace: bool = False, served: bool = False, **options):
    """The body as a function to call: an imported graph as a GraphFunction (no Python trace) unless
    ``trace`` (the caller needs the Python graph) or tf.function options are asked for; otherwise a
    ``tf.function``, with what its source asks of the trace (``FUNCTION_ATTRIBUTES``).

    ``served``: an imported model is traced with its inputs' shapes as declared (``DECLARED``: the batch
    left unknown, as TensorFlow serves the signature), the values only fed. Fixing them lets constant
    folding specialise the graph, which changes what fuses (MobileNetV3Small: one Conv2D+BiasAdd)."""
    if options.get("jit_compile") and hasattr(body, UNLOWERED):
        declared_inputs = getattr(body, DECLARED, None)
        body = getattr(body, UNLOWERED)()  # XLA compiles the loops as functional ops, as TensorFlow's jit does
        if declared_inputs is not None:
            setattr(body, DECLARED, declared_inputs)
    graph = getattr(body, GRAPH, None)
    declared = getattr(body, DECLARED, None) if served else None
    if graph is not None and not trace and not options:
        try:
            return GraphFunction(*graph, tf, declared=None if declared is None else [s for s, _ in declared])
        except Unsupported:
            pass  # traced the usual way
    if declared is not None and "input_signature" not in options:
        options["input_signature"] = [tf.TensorSpec(shape, dtype) for shape, dtype in declared]
    if graph is not None:
        register_library(graph[0])  # what its nodes call: the trace's import leaves it out of the context
    attributes = getattr(body, FUNCTION_ATTRIBUTES, None)
    if attributes:
        options["experimental_attributes"] = dict(attributes)
    return tf.function(body, **options)


def input_dtype(spec, name: str, tf):
    return builder(spec).input_dtype(spec, name, tf)


def inputs_made(spec) -> dict:
    """{"seed", "how"}: how the source's builder makes its seeded inputs, in words."""
    made = getattr(builder(spec), "inputs_made", None)
    return made(spec) if made is not None else {"seed": None, "how": "the source's own seeded inputs"}


def make_inputs(spec, tf) -> dict:
    return builder(spec).make_inputs(spec, tf)


def unknown_dims(spec, tf) -> bool:
    """Whether the model leaves an input dimension unknown (a source whose builder can tell: an imported model)."""
    check = getattr(builder(spec), "unknown_dims", None)
    return bool(check is not None and check(spec, tf))


def describe(spec, tf) -> dict | None:
    """What the user may choose of the model (an imported model's inputs and signatures); None for a
    source whose builder has nothing to say."""
    describe_it = getattr(builder(spec), "describe", None)
    return describe_it(spec, tf) if describe_it is not None else None


__all__ = ["DECLARED", "GraphFunction", "build", "describe", "function", "input_dtype", "inputs_made", "make_inputs",
           "unknown_dims"]
