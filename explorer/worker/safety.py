"""The allow-list check of a user's model, before anything of it executes.

Every node of a graph, every function of its library (called or not), and every function an
attribute names (``f``, ``then_branch``, ``body`` ...) is checked against ``model.op_allowlist``;
a refusal names the op, the node and where it sits. The library is read as the runtime will see it
first (``library``: one function per name, no recursion, calls nested and inlined within limits).
For a SavedModel, ``saved_model.pb`` is parsed and checked before ``tf.saved_model.load`` runs
anything; for a ``.keras`` file, its config.json is read before Keras deserialises a layer, and its weights
file for links and storage that would make HDF5 read another file.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from ..errors import SpecError, quoted, shown
from ..model.imported import MAX_NODES
from ..model.op_allowlist import ALLOWED_OPS, DENY_REASONS, SAVER_OPS, TEXT_HINT, TEXT_REASON, text_op
from . import allocation
from .library import check_calls, function_refs, functions_of


@dataclass
class Problem:
    op: str
    node: str
    where: str  # "graph", "function NAME", "config.json" ...
    reason: str
    kind: str = "op"  # "layer" for a Keras class in config.json

    def __str__(self) -> str:
        return (f"{self.kind} {shown(self.op)} ({'node' if self.kind == 'op' else 'named'} {quoted(self.node)} "
                f"in {shown(self.where)}): {self.reason}")


@dataclass
class Report:
    problems: list[Problem] = field(default_factory=list)
    nodes: int = 0
    functions_checked: list[str] = field(default_factory=list)
    saver_functions: list[str] = field(default_factory=list)  # the saver's own: never run by the TF2 loader
    sizes: list[str] = field(default_factory=list)  # tensors the graph states past the limits (allocation)

    def refuse_if_unsafe(self, what: str) -> None:
        if self.nodes > MAX_NODES:
            raise SpecError("model", f"{what} has {self.nodes:,} nodes with its functions; the limit is {MAX_NODES:,}")
        if self.problems:
            hint = f". {TEXT_HINT}" if any(p.reason == TEXT_REASON for p in self.problems) else ""
            raise SpecError("model", f"{what} refused before anything ran: {_listed(self.problems)}. Only "
                                     "pure-compute ops and Keras' own layers are taken (models are programs: no file, "
                                     f"process, network or Python access){hint}")
        if self.sizes:
            more = f"; and {len(self.sizes) - 3} more" if len(self.sizes) > 3 else ""
            raise SpecError("model", f"{what} refused before anything ran: {'; '.join(self.sizes[:3])}{more}")


def _listed(problems: list[Problem], kinds: int = 5, ops: int = 6) -> str:
    """The problems, one entry per reason (its first op and node; the other ops of that reason by name), so that a
    model with fifteen text ops reads as one thing wrong, not fifteen."""
    groups: dict[tuple[str, str], list[Problem]] = {}
    for problem in problems:
        groups.setdefault((problem.kind, problem.reason), []).append(problem)
    parts = []
    for (kind, _), group in list(groups.items())[:kinds]:
        others = list(dict.fromkeys(shown(p.op) for p in group[1:] if p.op != group[0].op))
        also = (f"; the same for {kind}s {', '.join(others[:ops])}"
                + (f" and {len(others) - ops} more" if len(others) > ops else "")) if others else ""
        parts.append(f"{group[0]}{also}")
    rest = len(groups) - kinds
    return "; ".join(parts) + (f"; and {rest} more kind{'s' if rest != 1 else ''} of problem" if rest > 0 else "")


_REGISTERED: set[str] | None = None


def _registered() -> set[str]:
    global _REGISTERED
    if _REGISTERED is None:
        from tensorflow.core.framework import op_def_pb2
        from tensorflow.python.client import pywrap_tf_session as c_api

        ops = op_def_pb2.OpList()
        ops.ParseFromString(c_api.TF_GetBuffer(c_api.TF_GetAllOpList()))
        _REGISTERED = {o.name for o in ops.op}
    return _REGISTERED


def reason(op: str) -> str:
    if op in DENY_REASONS:
        return DENY_REASONS[op]
    if text_op(op):
        return TEXT_REASON
    if op not in _registered():
        return "an unknown op (not registered in this TensorFlow: a custom kernel?)"
    return "not on the explorer's allow-list of pure-compute ops"


def _check_nodes(nodes, where: str, functions: dict, report: Report, pending: list, refs=None) -> None:
    """``refs``: function_refs of each node, when already known (a library's nodes are read once)."""
    for node, node_refs in zip(nodes, refs or map(function_refs, nodes)):
        report.nodes += 1
        if node.op in functions:  # a library function called by name
            pending.append(node.op)
        elif node.op not in ALLOWED_OPS:
            report.problems.append(Problem(node.op, node.name, where, reason(node.op)))
        for ref in node_refs:
            if ref in functions:
                pending.append(ref)
            elif ref:
                report.problems.append(Problem(node.op, node.name, where, f"names function {quoted(ref)}, which is "
                                                                          "not in the library"))


def _check_functions(names, functions: dict, report: Report, seen: set, refs=None) -> None:
    pending = list(names)
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        report.functions_checked.append(name)
        _check_nodes(functions[name].node_def, f"function {name}", functions, report, pending,
                     refs[name] if refs else None)


def check_graphdef(graph_def, what: str) -> Report:
    """Every node of the graph and every function of its library, reachable or not; the library's calls
    (``library.check_calls``). ``what`` names the model in a refusal."""
    report = Report()
    functions = functions_of(graph_def.library, what)
    refs = library_refs(functions)
    check_calls(graph_def.node, functions, what, refs)
    pending: list[str] = []
    _check_nodes(graph_def.node, "graph", functions, report, pending)
    _check_functions(pending + sorted(functions), functions, report, set(), refs)
    report.sizes = allocation.check(graph_def)
    return report


def _strip(tensor: str) -> str:
    return tensor.lstrip("^").split(":")[0]


def _reachable(graph_def, tensors) -> dict:
    by_name = {n.name: n for n in graph_def.node}
    found, stack = {}, [_strip(t) for t in tensors]
    while stack:
        name = stack.pop()
        if name in found or name not in by_name:
            continue
        found[name] = by_name[name]
        stack.extend(_strip(i) for i in by_name[name].input)
    return found


def library_refs(functions: dict) -> dict[str, list[list[str]]]:
    """function_refs of every node of every function, in node order: read once, used by every walk."""
    return {name: [function_refs(node) for node in function.node_def] for name, function in functions.items()}


def reachable_functions(functions: dict, roots, refs=None) -> set[str]:
    """Names of the functions of ``functions`` that ``roots`` call, however nested (roots included).
    ``refs``: library_refs(functions), when already made."""
    seen, stack = set(), list(roots)
    while stack:
        name = stack.pop()
        if name in seen or name not in functions:
            continue
        seen.add(name)
        nodes = functions[name].node_def
        for node, node_refs in zip(nodes, refs[name] if refs else map(function_refs, nodes)):
            if node.op in functions:
                stack.append(node.op)
            stack.extend(node_refs)
    return seen


def check_saved_model(saved_model, signature: str, what: str) -> Report:
    """What ``tf.saved_model.load`` and the signature would run, from the parsed proto (nothing loaded).

    Checked strictly: graph nodes the signatures reach, every function the object graph names (methods,
    resource create/initialise functions, saveable save/restore functions, which the loader runs),
    and every library function nothing references. Tolerated: the saver's nodes and functions
    (SaveV2/RestoreV2), which the TF2 loader never runs: it restores from the model's ``variables/``
    with ops of its own, and that directory is the worker's own temporary copy.
    """
    report = Report()
    if not saved_model.meta_graphs:
        raise SpecError("model", f"{what}: saved_model.pb holds no graph (an empty or truncated file, or not a "
                                 "SavedModel's saved_model.pb)")
    if len(saved_model.meta_graphs) != 1:
        raise SpecError("model", f"{what}: saved_model.pb holds {len(saved_model.meta_graphs)} meta graphs; a TF2 "
                                 "SavedModel has one")
    meta = saved_model.meta_graphs[0]
    graph = meta.graph_def
    if not meta.HasField("object_graph_def") or not meta.object_graph_def.nodes:
        raise SpecError("model", f"{what} refused before anything ran: a TF1 SavedModel (no object graph): loading it "
                                 "would run its own restore and init ops; freeze it to a GraphDef")
    functions = functions_of(graph.library, what)
    signatures = dict(meta.signature_def)
    if signature not in signatures:
        names = sorted(s for s in signatures if not s.startswith("__"))
        raise SpecError("import.signature", f"the SavedModel has no signature {quoted(signature)}; it has: "
                                            f"{shown(', '.join(names) or 'none', 1000)}")
    tensors = [t.name for s in signatures.values() for t in list(s.inputs.values()) + list(s.outputs.values())]
    signature_nodes = _reachable(graph, tensors)
    named = set()
    for node in meta.object_graph_def.nodes:
        kind = node.WhichOneof("kind")
        if kind == "function":
            named.update(node.function.concrete_functions)
        elif kind == "bare_concrete_function":
            named.add(node.bare_concrete_function.concrete_function_name)
        elif kind == "asset":
            report.problems.append(Problem("Asset", "-", "object graph", "asset files are not taken"))
        for saveable in node.saveable_objects.values():
            named.update(x for x in (saveable.save_function, saveable.restore_function) if x)
    strict_roots = set(named)
    for node in signature_nodes.values():
        strict_roots.update(function_refs(node))
        if node.op in functions:
            strict_roots.add(node.op)
    refs = library_refs(functions)  # ~10,000 nodes in a MobileNetV2: walked three times below
    check_calls(signature_nodes.values(), functions, what, refs)
    strict = reachable_functions(functions, strict_roots, refs)
    rest = [n for n in graph.node if n.name not in signature_nodes]
    saver = reachable_functions(functions, {r for n in rest for r in function_refs(n)}, refs) - strict
    pending: list[str] = []
    _check_nodes(signature_nodes.values(), "graph (signature)", functions, report, pending)
    seen: set[str] = set()
    _check_functions(sorted(strict | (set(functions) - saver)) + pending, functions, report, seen, refs)
    for node in rest:
        report.nodes += 1
        if node.op not in SAVER_OPS and node.op not in ALLOWED_OPS:
            report.problems.append(Problem(node.op, node.name, "graph (not run by the loader)", reason(node.op)))
    for name in sorted(saver - seen):
        report.saver_functions.append(name)
        for node in functions[name].node_def:
            report.nodes += 1
            if node.op not in SAVER_OPS and node.op not in ALLOWED_OPS:
                report.problems.append(Problem(node.op, node.name, f"function {name} (saver)", reason(node.op)))
    return report


KERAS_REFUSED = {"Lambda": "runs Python code it carries", "TFSMLayer": "loads another SavedModel from a path"}


def check_keras_config(path: str, what: str) -> Report:
    """A .keras file's config.json (unpacked, within the archive policy's size), read statically: only Keras'
    own classes, no Lambda, no custom objects."""
    report = Report()
    try:
        with open(path, "rb") as handle:
            config = json.loads(handle.read())
    except (OSError, ValueError, RecursionError) as exc:
        raise SpecError("model", f"{what}: config.json is not JSON ({type(exc).__name__}: {shown(exc)})") from None
    if not isinstance(config, dict):
        raise SpecError("model", f"{what}: config.json holds {type(config).__name__}, not a model's configuration")
    def walk(obj, level: int = 0) -> None:
        if level > 200:  # json.loads took it, a walk this deep is no Keras model
            raise SpecError("model", f"{what}: config.json nests deeper than 200 levels; no Keras model does")
        if isinstance(obj, dict):
            if "class_name" in obj and "config" in obj:
                cls, module = str(obj.get("class_name")), str(obj.get("module") or "")
                registered = str(obj.get("registered_name") or "")
                inner = obj.get("config")
                name = str(inner.get("name", "?")) if isinstance(inner, dict) else "?"
                report.nodes += 1
                if cls in KERAS_REFUSED:
                    report.problems.append(Problem(cls, name, "config.json", f"a {cls} layer {KERAS_REFUSED[cls]}", "layer"))
                elif module and not (module == "builtins" or module == "keras" or module.startswith("keras.")):
                    report.problems.append(Problem(cls, name, "config.json", f"a custom object from module {module!r}", "layer"))
                elif ">" in registered:
                    report.problems.append(Problem(cls, name, "config.json", f"a registered custom object {registered!r}", "layer"))
                elif cls == "__lambda__":
                    report.problems.append(Problem(cls, name, "config.json", "a Python lambda", "object"))
            for value in obj.values():
                walk(value, level + 1)
        elif isinstance(obj, list):
            for value in obj:
                walk(value, level + 1)

    walk(config)
    return report


MAX_WEIGHT_LINKS = 100_000  # a model.weights.h5 has a few per layer


def check_keras_weights(path: str, what: str) -> None:
    """A .keras file's model.weights.h5, read for what HDF5 would fetch from outside it before Keras opens it: a
    link to another file, or a dataset whose bytes (raw or virtual) live in another file. h5py follows either
    while Keras reads the weights, so a weight could hold any file of the server's."""
    import h5py

    outside: list[str] = []
    seen = 0

    def visit(name: str, link) -> None:
        nonlocal seen
        seen += 1
        if seen > MAX_WEIGHT_LINKS:
            raise SpecError("model", f"{what}: model.weights.h5 holds more than {MAX_WEIGHT_LINKS:,} objects; no Keras "
                                     "model's weights do")
        if isinstance(link, h5py.ExternalLink):
            outside.append(f"{quoted(name)} is an external link to {quoted(link.filename)}")
        elif isinstance(link, h5py.HardLink):
            item = weights.get(name, getlink=False)
            if isinstance(item, h5py.Dataset) and item.external:
                outside.append(f"{quoted(name)} is stored in a file outside it ({quoted(item.external[0][0])})")
            elif isinstance(item, h5py.Dataset) and item.is_virtual:
                outside.append(f"{quoted(name)} is a virtual dataset mapping other files")

    try:
        with h5py.File(path, "r") as weights:  # opening reads the file's own structure only, no link is followed
            weights.visititems_links(visit)
    except (OSError, ValueError, RuntimeError) as exc:
        raise SpecError("model", f"{what}: model.weights.h5 is not a readable HDF5 file ({shown(exc)})") from None
    if outside:
        more = f"; and {len(outside) - 3} more" if len(outside) > 3 else ""
        raise SpecError("model", f"{what} refused before anything ran: in model.weights.h5, {'; '.join(outside[:3])}"
                                 f"{more}. A .keras file's weights must be inside it")
