"""Grappler as the worker sees it: one inspect request, the model's graphs around Grappler and its own log.

``inspect`` traces the model, calls it once with run metadata on and returns the three stages, the
remapper's log lines, Grappler's per-pass account and the graph it dumped after every pass.
``simulate`` does the same for a simulated GPU (Grappler run from Python on a virtual device).
A second compiler (XLA) lives beside this module, with the same shape of result.
"""

from __future__ import annotations

import os
import time
from contextlib import nullcontext
from dataclasses import replace as dataclass_replace

from ..analysis import grappler_log, grappler_passes
from ..model.devices import is_simulated
from ..model.limits import PASS_GRAPHS_AUTO_NODES
from ..model.results import InspectResult
from ..model.spec import resolve
from .elide import (MAX_DUMPED_CONSTANT_BYTES, constant_bytes, elide_constants, graph_def_constant_bytes, graph_text,
                    parse_dump, size_text)
from . import agreement, models
from .models.graph_function import static_dims
from .runtime import Runtime, as_list
from .shapes import executed_tensors, fed_shapes
from .xla import clusters as xla_clusters

MAIN_PREFIX = models.graph_function.NAME_PREFIX  # the model's function, traced or registered
CONTRACTION_OPS = ("MatMul", "Conv2D", "DepthwiseConv2dNative", "Conv3D", "BatchMatMulV2", "Einsum")


def answer(rt: Runtime, request: dict) -> InspectResult:
    """Grappler's inspect request: a real run, or on a simulated GPU Grappler run from Python; after a worker
    died in the fused run (``aborted``: how), Grappler's graphs without running them, and the unfused run."""
    if is_simulated(rt.device):
        return simulate(rt, request)
    return after_abort(rt, request) if request.get("aborted") else inspect(rt, request)


def inspect(rt: Runtime, request: dict) -> InspectResult:
    spec = resolve(request["spec"])
    switches = request.get("grappler") or {}
    rt.clear_dumps()
    rt.reset_grappler()
    t0 = time.perf_counter()
    body, args, names = rt.build(spec, names=True)
    fn = models.function(body, rt.tf, served=True)
    if isinstance(fn, models.GraphFunction):  # an imported graph: nothing to trace
        heavy, nodes = graph_def_constant_bytes(fn.graph_def), len(fn.graph_def.node)
    else:
        graph = _concrete(fn, args).graph  # traced here; the call below reuses it
        heavy, nodes = constant_bytes(graph), len(graph.get_operations())
    t1 = time.perf_counter()
    skipped, deferred = None, False
    if heavy > MAX_DUMPED_CONSTANT_BYTES:
        skipped = (f"the model's constants hold {size_text(heavy)} (a frozen model's weights), and TensorFlow would "
                   "write them as text after every pass (MobileNetV2: 2.4 GB, two minutes); the pass list above is "
                   "from Grappler's log. Import the SavedModel or .keras file (weights as variables) to see them.")
    elif request.get("pass_graphs", "auto") == "auto" and nodes > PASS_GRAPHS_AUTO_NODES:
        deferred = True  # asked for again with "all" when someone opens them
    fused_exc = None
    with rt.without_dumps() if skipped or deferred else nullcontext():
        try:
            stages, out, entries = rt.capture(fn, args, switches)
        except rt.tf.errors.OpError as exc:  # the graph as set failed: judged against the unfused one below
            if getattr(exc, "failed_stages", None) is None:
                raise
            stages, out, entries, fused_exc = exc.failed_stages, None, 1, exc
    t2 = time.perf_counter()
    rt.reset_grappler()
    parsed, log = request_log(rt)
    passes = pass_graphs(rt, parsed)
    reference_executed: list = []  # the remapper-off run's executed graph, made by the agreement check
    with rt.without_dumps():
        fused = None if fused_exc is not None else agreement.outputs(rt.tf, out)
        checked = None
        if request.get("agreement") == "beside" and fused is not None and switches.get("remapping") != "off":
            checked = agreement.fused_side(rt, spec, body, fn, names, args, switches, fused, stages,
                                           request["outputs"])  # the reference runs in a second worker
        if checked is None:
            checked = agreement.check(rt, spec, body, fn, names, args, switches, fused, fused_exc, stages,
                                      wanted=request.get("agreement", "on") != "off", executed=reference_executed)
    rt.log.read()  # the reference run's own Grappler lines are not this inspect's log
    if checked is None:  # it fails with the remapper off too: the model's failure, not the fusion's
        raise fused_exc
    shapes = traced_shapes(fn, args, body, rt.tf)
    graphs = {name: with_shapes(rt.graph_to_dict(g, name), shapes) for name, g in stages.items()}
    elided = {name: elide_constants(g) for name, g in stages.items()}  # after graph_to_dict: it reads shapes only
    result = {
        "spec": spec.to_dict(),
        "stages": graphs,
        "pbtxt": {name: graph_text(g) for name, g in stages.items()},
        "elided_bytes": elided,
        "output_shapes": [list(t.shape) for t in as_list(out)] if out is not None else
                         checked.get("reference_shapes") or [],
        "agreement": checked,
        "function_graphs": entries,
        # auto-clustering's clusters, if it is on, and the model's own functions that XLA must compile
        "xla_clusters": xla_clusters(rt, stages["optimized"]) + must_compile(rt, stages["optimized"], fn),
        "grappler": {
            "remapper_log": parsed["remapper_log"],
            "notable": parsed["notable"],
            "items": parsed["items"],
            "pass_graphs": passes,
            "pass_graphs_skipped": skipped,
            "pass_graphs_deferred": deferred,
            "function_nodes": nodes,
            "log": log,
        },
        "fingerprint": rt.fingerprint,
    }
    if fused_exc is None and (reference_executed or checked["status"] == "pending"):
        # what each executed op of both runs reads and writes, at the shapes fed (analysis.traffic); the unfused
        # run's, where it ran beside, comes with its answer (engine.reference)
        fed = fed_shapes(args)
        result["executed_tensors"] = {"fused": executed_tensors(rt.tf, stages["executed"], fed)}
        if reference_executed:
            result["executed_tensors"]["unfused"] = executed_tensors(rt.tf, reference_executed[0], fed)
    described = models.describe(spec, rt.tf)
    if described is not None:
        result["model_info"] = described
    if getattr(spec, "fixed_dims", False) and models.unknown_dims(spec, rt.tf):
        result["as_served"] = as_served(rt, spec, switches)
    # capture_s: the call that runs Grappler (and, before, the trace: kept as one figure for older readers).
    result["timings"] = {"build_s": round(t1 - t0, 4), "capture_s": round(t2 - t0, 4), "run_s": round(t2 - t1, 4),
                         "agreement_s": checked["seconds"],
                         "convert_s": round(time.perf_counter() - t2 - checked["seconds"], 4),
                         "import_s": round(rt.import_s, 3)}
    return result


def simulate(rt: Runtime, request: dict) -> InspectResult:
    """Grappler's decisions on a virtual GPU of the requested profile (no execution)."""
    from ..model.devices import DEFAULT_PROFILE

    profile = rt.device.partition(":")[2] or DEFAULT_PROFILE
    result = _offline(rt, resolve(request["spec"]), request.get("grappler") or {}, profile)
    result["fingerprint"] = dict(rt.fingerprint, simulated_gpu=result.get("profile"))
    return result


def after_abort(rt: Runtime, request: dict) -> InspectResult:
    """The model whose fused run killed the worker process: Grappler's output made without running it
    (``tf_optimizer`` on this CPU, as the simulation's control does), then the unfused graph run on the same
    inputs. Its own failure of the unfused run is the model's, reported as TensorFlow's error."""
    spec = resolve(request["spec"])
    switches = request.get("grappler") or {}
    result = _offline(rt, spec, switches, "", place_on="CPU")
    body, args, names = rt.build(spec, names=True)
    fn = models.function(body, rt.tf, served=True)
    with rt.without_dumps():
        checked = agreement.after_abort(rt, spec, fn, names, args, switches, request["aborted"])
    rt.log.read()
    for key in ("profile", "gpu_kernels", "limits", "placement", "env_flags", "host_onednn", "ignored_switches"):
        result.pop(key, None)
    result.update(simulated=False, offline_grappler=True, agreement=checked, function_graphs=0,
                  output_shapes=checked.get("reference_shapes") or [], fingerprint=rt.fingerprint,
                  device="cpu", xla_clusters=[])
    return result


def _offline(rt: Runtime, spec, switches: dict, profile: str, place_on: str = "GPU") -> dict:
    """Grappler run from Python (``worker.simulate``), with what this request logged; the remapper log stays
    simulate's own: that of the run with the requested switches only."""
    from . import simulate as offline

    rt.reset_grappler()
    result = offline.simulate(spec, switches, profile, rt.tf, rt.graph_to_dict, place_on=place_on)
    rt.reset_grappler()
    parsed, log = request_log(rt)
    result["grappler"].update(notable=parsed["notable"], items=parsed["items"], pass_graphs={}, log=log)
    return result


def request_log(rt: Runtime) -> tuple[dict, list[str]]:
    """This request's stderr parsed, and its lines as shown (without the graph-dump notices)."""
    log = rt.log.read()
    return grappler_log.parse_log(log), [line for line in log if "dump_graph.cc" not in line][-4000:]


def pass_graphs(rt: Runtime, parsed: dict) -> dict:
    """The model's per-pass dumps, keyed by dump file name: the first in full (a neutral graph), each
    next one as what changed from the one before it (``grappler_passes.pass_delta``); the engine
    makes them whole again. A 1,600-node model's passes change a few dozen nodes each: converting and
    sending every dump whole cost ~0.4 s and 4 MiB of its first graphs."""
    from google.protobuf import text_format
    from google.protobuf.message import DecodeError

    run = grappler_log.main_run(parsed, MAIN_PREFIX)
    graphs: dict[str, dict] = {}
    if run is None:
        return graphs
    base, previous_nodes = None, None  # the last dump kept: its key, and its NodeDefs by name
    for iteration in run["iterations"]:
        # A pass whose dump is byte for byte the graph before it changed nothing: it is left out (a
        # pass's "before" is the latest dump kept, so every pair drawn stays exact); 1,000-node models
        # would otherwise carry ~30 copies of one graph.
        previous = None
        paths = [iteration["before_dump"]] if iteration.get("before_dump") else []
        for path in paths + [p["dump"] for p in iteration["passes"] if p.get("dump")]:
            try:
                with open(path, "rb") as handle:
                    data = handle.read()
                if data == previous:
                    continue
                previous = data
                graph_def = parse_dump(path, data, rt.tf)
            except (OSError, text_format.ParseError, DecodeError):
                continue
            key = os.path.basename(path)
            nodes = {n.name: n for n in graph_def.node}
            if previous_nodes is None:
                graphs[key] = rt.graph_to_dict(graph_def, "pass")
            else:
                changed = rt.tf.compat.v1.GraphDef()
                changed.node.extend(n for n in graph_def.node if previous_nodes.get(n.name) != n)
                graphs[key] = grappler_passes.pass_delta(base, [n.name for n in graph_def.node],
                                                         rt.graph_to_dict(changed, "pass")["nodes"])
            base, previous_nodes = key, nodes
    return graphs


def _concrete(fn, args):
    """The concrete function a call with ``args`` runs (one traced with an input signature takes them as they are)."""
    return fn.get_concrete_function(*args) if fn.input_signature is None else fn.get_concrete_function()


def fused_summary(graph_def) -> dict[str, str]:
    """{node: "op [fused_ops]"} of the fused nodes of a graph: what two graphs of one model compare by."""
    from ..analysis.fusion import fused_label, is_fused_op

    out = {}
    for node in graph_def.node:
        fused = [s.decode() for s in node.attr["fused_ops"].list.s] if "fused_ops" in node.attr else []
        if fused or is_fused_op(node.op):
            out[node.name] = fused_label(node.op, fused)
    return out


def as_served(rt: Runtime, spec, switches: dict) -> dict:
    """The model traced as served (its unknown dimensions unknown), called once with the same values: what
    fused there, to set beside the graph traced with the dimensions fixed."""
    body, args = rt.build(dataclass_replace(spec, fixed_dims=False))
    fn = models.function(body, rt.tf, served=True)
    with rt.without_dumps():
        stages, _, _ = rt.capture(fn, args, switches)
    rt.reset_grappler()
    rt.log.read()
    return {"fused": fused_summary(stages["optimized"]),
            "contractions": sorted(n.name for n in stages["optimized"].node if n.op in CONTRACTION_OPS)}


def must_compile(rt: Runtime, graph_def, fn) -> list[dict]:
    """Calls in the graph of functions that XLA must compile (``_XlaMustCompile``: Keras 3 sends a grouped
    convolution there on CPU). Grappler leaves them whole and their ops never reach the graphs above, so
    each is reported as an XLA cluster with the ops of its body."""
    from tensorflow.python.eager import context

    library = {f.signature.name: f for f in getattr(getattr(fn, "graph_def", None), "library", ()).function} \
        if isinstance(fn, models.GraphFunction) else {}
    ctx = context.context()
    found = []
    for node in graph_def.node:
        if node.op not in ("StatefulPartitionedCall", "PartitionedCall") or "f" not in node.attr:
            continue
        name = node.attr["f"].func.name
        function = library.get(name)
        if function is None and ctx.has_function(name):
            function = ctx.get_function_def(name)
        must = node.attr["_XlaMustCompile"].b if "_XlaMustCompile" in node.attr else False
        if function is not None and "_XlaMustCompile" in function.attr:
            must = must or function.attr["_XlaMustCompile"].b
        if not must:
            continue
        ops = [{"name": f"{node.name}/{n.name}", "op": n.op} for n in (function.node_def if function else ())
               if n.op not in ("Const", "Identity", "NoOp", "ReadVariableOp")]
        found.append({"cluster": node.name, "function": name, "kind": "must-compile", "ops": ops})
    return found


def traced_shapes(fn, args, body=None, tf=None) -> dict[str, str]:
    """Static output shape of every op of the traced function, by node name ("[64,256]", -1 unknown).

    The graphs from run metadata record shapes of the arguments only; the function's own graph knows
    every tensor's, and its op names are the stage graphs' node names (a fused node keeps its root's
    name, and with it the shape of what it writes).
    """
    if isinstance(fn, models.GraphFunction):
        dims = fn.static_shapes(*args)
    else:
        if fn.input_signature is not None and body is not None:
            # Traced as served, its shapes leave the unknown dimensions open: the values' own shapes
            # come from a trace with them fixed (same body, same op names).
            fn = models.function(body, tf)
        dims = {op.name: static_dims(op.outputs[0].shape)
                for op in fn.get_concrete_function(*args).graph.get_operations() if op.outputs}
    return {name: "[" + ",".join(map(str, d)) + "]" for name, d in dims.items() if d is not None}


def with_shapes(graph: dict, shapes: dict[str, str]) -> dict:
    for node in graph["nodes"]:
        if not node["shape"] and node["name"] in shapes:
            node["shape"] = shapes[node["name"]]
    return graph
