"""A model's function library as the runtime will see it: one function per name, who calls whom, how deep, how big.

Read before anything of the model runs (``safety`` calls it). TensorFlow keeps one function per name,
so a library holding two of one name would have one checked and the other run; a function that calls
itself (directly, through others, or as its own While body or If branch) is instantiated without end
(the worker died of it); a chain of calls can nest past TensorFlow's own recursion, and a chain whose
functions each call the next twice inlines to 2^n nodes. A call is a node whose op names a library
function or an attribute that names one (``f``, ``body``, ``then_branch`` ...).
"""

from __future__ import annotations

from ..errors import SpecError, quoted
from ..model.imported import MAX_NODES

MAX_CALL_DEPTH = 64  # a Keras SavedModel nests its calls 3-6 deep


def function_refs(node) -> list[str]:
    """Functions a NodeDef names in its attributes (func or list(func)), nested attributes included."""
    return [func.name for func in function_attrs(node)]


def function_attrs(node):
    """Every NameAttrList a NodeDef's attributes hold (func or list(func)), nested ones included, as protos
    a caller may rename in place."""
    pending = list(node.attr.values())
    while pending:
        value = pending.pop()
        kind = value.WhichOneof("value")
        funcs = [value.func] if kind == "func" else list(value.list.func) if kind == "list" else []
        for func in funcs:
            yield func
            pending.extend(func.attr.values())


def functions_of(library, what: str) -> dict:
    """The library's functions by name; two of one name (or a nameless one) are refused."""
    functions: dict = {}
    for function in library.function:
        name = function.signature.name
        if not name:
            raise SpecError("model", f"{what}: the library holds a function with no name")
        if name in functions:
            raise SpecError("model", f"{what} refused before anything ran: the library defines function {quoted(name)} "
                                     "twice (TensorFlow keeps one function per name, so one copy would be checked "
                                     "and the other run)")
        functions[name] = function
    for gradient in library.gradient:
        for name in (gradient.function_name, gradient.gradient_func):
            if name not in functions:
                raise SpecError("model", f"{what}: the library's gradient entry names function {quoted(name)}, "
                                         "which it does not define")
    return functions


def calls(nodes, functions: dict, refs=None) -> list[str]:
    """Library functions that ``nodes`` call, once per call (a function called twice is named twice)."""
    out = []
    for node, node_refs in zip(nodes, refs if refs is not None else map(function_refs, nodes)):
        if node.op in functions:
            out.append(node.op)
        out.extend(r for r in node_refs if r in functions)
    return out


def check_calls(graph_nodes, functions: dict, what: str, refs: dict | None = None) -> int:
    """Refuse recursion, calls nested past MAX_CALL_DEPTH and a graph over MAX_NODES once inlined; return that
    inlined size. ``refs``: ``{function: [function_refs(node) per node]}`` when already made."""
    callees = {name: calls(f.node_def, functions, refs[name] if refs else None) for name, f in functions.items()}
    order = _callees_first(callees, what)
    depth, size, deepest = {}, {}, {}
    for name in order:
        below = max(callees[name], key=lambda c: depth[c], default=None)
        depth[name] = 1 + (depth[below] if below else 0)
        deepest[name] = below
        size[name] = len(functions[name].node_def) + sum(size[c] for c in callees[name])
    top = max(functions, key=lambda n: depth[n], default=None)
    if top is not None and depth[top] > MAX_CALL_DEPTH:
        chain = [top]
        while deepest[chain[-1]] and len(chain) < 4:
            chain.append(deepest[chain[-1]])
        shown_chain = " → ".join(map(quoted, chain)) + " → …"
        raise SpecError("model", f"{what} refused before anything ran: its function calls nest {depth[top]} deep "
                                 f"({shown_chain}); the limit is {MAX_CALL_DEPTH}")
    graph_nodes = list(graph_nodes)
    total = len(graph_nodes) + sum(size[c] for c in calls(graph_nodes, functions))
    if total > MAX_NODES:
        raise SpecError("model", f"{what} refused before anything ran: once its function calls are inlined the graph "
                                 f"would have {count_text(total)} nodes, over the {MAX_NODES:,} limit")
    return total


def _callees_first(callees: dict, what: str) -> list[str]:
    """Every function, each after all it calls (an iterative depth-first walk: no Python recursion);
    a cycle is refused, naming it."""
    state: dict[str, int] = {}  # 1: on the walk's path, 2: done
    order: list[str] = []
    for root in callees:
        if root in state:
            continue
        path, stack = [], [(root, iter(callees[root]))]
        state[root] = 1
        path.append(root)
        while stack:
            name, pending = stack[-1]
            callee = next(pending, None)
            if callee is None:
                stack.pop()
                path.pop()
                state[name] = 2
                order.append(name)
            elif state.get(callee) == 1:
                cycle = path[path.index(callee):] + [callee]
                if len(cycle) == 2:
                    raise SpecError("model", f"{what} refused before anything ran: function {quoted(callee)} calls "
                                             "itself (recursion: TensorFlow would instantiate it without end)")
                raise SpecError("model", f"{what} refused before anything ran: functions call each other in a cycle: "
                                         + " → ".join(map(quoted, cycle[:6])) + (" → …" if len(cycle) > 6 else "")
                                         + " (recursion: TensorFlow would instantiate them without end)")
            elif callee not in state:
                state[callee] = 1
                path.append(callee)
                stack.append((callee, iter(callees[callee])))
    return order


_SUPERSCRIPT = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def count_text(n: int) -> str:
    """A count as a person reads it: 48,000; 10¹²; 2.5 × 10¹⁰."""
    if n < 10**6:
        return f"{n:,}"
    exponent = len(str(n)) - 1
    mantissa = n / 10**exponent
    power = "10" + str(exponent).translate(_SUPERSCRIPT)
    return power if round(mantissa, 1) == 1.0 else f"{round(mantissa, 1):g} × {power}"
