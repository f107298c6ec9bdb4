"""Hooks named "module:attribute": how a table in one layer names code in a higher one without importing it.

The model sources (``sources``) and the compilers (``compilers``) name their worker builders, readers,
writers and page panels this way; the layer that calls a hook imports it, on first use.
"""

from __future__ import annotations

import functools
import importlib


@functools.cache
def hook(path: str):
    """The object a "module:attribute" names (the module itself for "module"), imported on first use."""
    module, _, attribute = path.partition(":")
    return getattr(importlib.import_module(module), attribute) if attribute else importlib.import_module(module)
