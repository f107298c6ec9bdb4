"""An imported model's functions under names of its own, so that one user's model never meets another's.

A warm worker serves many uploads, and the eager context holds one function per name: two models that
each define a different ``f`` could not both run (the second was refused), and a name registered by one
model must never be callable as another's. So every function of an imported graph's library is renamed
``NAME_<tag>``, the tag a digest of the whole library (the same library gets the same names, and they
stay the same across workers and runs), with every call and reference renamed to match. A model's
functions leave the context once no model kept warm uses them.
"""

from __future__ import annotations

import hashlib

from ..library import function_attrs

TAG_CHARS = 16  # hex digits of the library's sha256


def own_names(graph_def) -> list[str]:
    """Rename ``graph_def``'s library functions in place (calls, attributes and gradients alike); return the
    new names. A graph without a library is left as it is."""
    library = graph_def.library
    if not library.function:
        return []
    tag = hashlib.sha256(library.SerializeToString(deterministic=True)).hexdigest()[:TAG_CHARS]
    renamed = {f.signature.name: f"{f.signature.name}_{tag}" for f in library.function}
    for function in library.function:
        function.signature.name = renamed[function.signature.name]
        _rename_nodes(function.node_def, renamed)
    _rename_nodes(graph_def.node, renamed)
    for gradient in library.gradient:
        gradient.function_name = renamed.get(gradient.function_name, gradient.function_name)
        gradient.gradient_func = renamed.get(gradient.gradient_func, gradient.gradient_func)
    for registered in library.registered_gradients:
        registered.gradient_func = renamed.get(registered.gradient_func, registered.gradient_func)
    return list(renamed.values())


def _rename_nodes(nodes, renamed: dict) -> None:
    for node in nodes:
        if node.op in renamed:
            node.op = renamed[node.op]
        for func in function_attrs(node):
            func.name = renamed.get(func.name, func.name)


def release(names, keep) -> None:
    """Remove ``names`` from the eager context, but those in ``keep`` (functions a model still loaded uses)."""
    from tensorflow.python.eager import context

    ctx = context.context()
    for name in set(names) - set(keep):
        if ctx.has_function(name):
            try:
                ctx.remove_function(name)
            except Exception:  # noqa: BLE001 - a function another registered one still calls stays
                pass
