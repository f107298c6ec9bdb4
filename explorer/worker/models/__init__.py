"""Builders: model spec -> the Python body of a tf.function and its seeded inputs.

One module per model source; ``chain`` builds the op chains and the special kinds of the presets,
``imported`` a user's GraphDef, SavedModel or .keras file. ``chain`` imports only numpy and takes
the ``tf`` module as an argument, so that ``present.repro`` can embed its source.
"""

from __future__ import annotations

from ...model.imported import ImportSpec
from . import chain, imported
from .chain import input_dtype

__all__ = ["build", "input_dtype", "make_inputs"]


def _source(spec):
    return imported if isinstance(spec, ImportSpec) else chain


def build(spec, tf):
    return _source(spec).build(spec, tf)


def make_inputs(spec, tf) -> dict:
    return _source(spec).make_inputs(spec, tf)
