"""Builders: model spec -> the Python body of a tf.function and its seeded inputs.

One module per model source; ``chain`` builds the op chains and the special kinds of the presets.
Each builder module imports only numpy and takes the ``tf`` module as an argument, so that
``present.repro`` can embed its source in a standalone script.
"""

from __future__ import annotations

from .chain import build, input_dtype, make_inputs

__all__ = ["build", "input_dtype", "make_inputs"]
