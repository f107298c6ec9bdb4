"""Builders: model spec -> the Python body of a tf.function and its seeded inputs.

One module per model source: ``chain`` builds the op chains and the special kinds of the presets
(it imports only numpy and takes the ``tf`` module as an argument, so that ``present.repro`` can embed
its source in a standalone script); ``stack`` builds layer stacks as Keras 3 models; ``imported`` a
user's GraphDef, SavedModel or .keras file. ``function`` makes the callable every request runs: a
``tf.function`` of the body, or for an imported graph a ``graph_function.GraphFunction`` (the graph
registered as a FunctionDef, no Python trace).
"""

from __future__ import annotations

from ...model.imported import ImportSpec
from ...model.stack import StackSpec
from . import chain, imported, stack
from .graph_function import GraphFunction, Unsupported, register_library
from .imported import DECLARED, FUNCTION_ATTRIBUTES, GRAPH


def _source(spec):
    if isinstance(spec, StackSpec):
        return stack
    return imported if isinstance(spec, ImportSpec) else chain


def build(spec, tf):
    body, names = _source(spec).build(spec, tf)
    if _source(spec) is chain:
        # The chain builders branch on the spec only, never on a tensor: AutoGraph would rewrite them to
        # the same graph, and its first conversion costs ~1.5 s of every cold worker's first answer.
        body = tf.autograph.experimental.do_not_convert(body)
    return body, names


def function(body, tf, *, trace: bool = False, served: bool = False, **options):
    """The body as a function to call: an imported graph as a GraphFunction (no Python trace) unless
    ``trace`` (the caller needs the Python graph) or tf.function options are asked for; otherwise a
    ``tf.function``, with what its source asks of the trace (``FUNCTION_ATTRIBUTES``).

    ``served``: an imported model is traced with its inputs' shapes as declared (``DECLARED``: the batch
    left unknown, as TensorFlow serves the signature), the values only fed. Fixing them lets constant
    folding specialise the graph, which changes what fuses (MobileNetV3Small: one Conv2D+BiasAdd)."""
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
    return _source(spec).input_dtype(spec, name, tf)


def make_inputs(spec, tf) -> dict:
    return _source(spec).make_inputs(spec, tf)


def unknown_dims(spec, tf) -> bool:
    """Whether the model leaves an input dimension unknown (only an imported model can)."""
    return isinstance(spec, ImportSpec) and imported.unknown_dims(spec, tf)


def describe(spec, tf) -> dict | None:
    """An imported model's inputs and signatures (what the user may choose); None for other sources."""
    return imported.describe(spec, tf) if isinstance(spec, ImportSpec) else None


__all__ = ["GraphFunction", "build", "describe", "function", "input_dtype", "make_inputs", "unknown_dims"]
