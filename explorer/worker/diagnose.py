"""When the fusion itself is wrong: the model run with the remapper off, then on, and each fused node cut out.

One "diagnose" request: the model's graph called once with Grappler's remapper off (the reference)
and once as configured, on the same seeded inputs, every output compared; TensorFlow's error kept
when the fused call fails (its graphs after Grappler are read from the run metadata even then). For
each fused node, the kernel that ran it (its op in the executed graph: ``_MklNative...``/``_MklFused...``
is oneDNN's, the rest Eigen's) and its absorbed ops cut out as a model of their own
(``isolate``): what ``engine.diagnose`` runs in fresh processes to pin the fault on one node.

``fused_run`` False skips the fused call (for a model whose fused call aborted the last worker): the
graph after Grappler then comes from Grappler's own dump, written before the call runs its kernels.
"""

from __future__ import annotations

import os
import re
import time

from ..analysis import agreement, diagnosis, grappler_log
from ..analysis.fusion import find_fusions
from ..model.graph import Graph
from ..model.spec import resolve
from ..present import fault_repro
from . import models
from .grappler import _concrete
from .agreement import basis, called, declared_shapes, with_variation
from .isolate import NotIsolated, isolate
from .models.graph_function import static_dims
from .protocol import error_line
from .runtime import Runtime, as_list


def run(rt: Runtime, request: dict) -> dict:
    tf = rt.tf
    spec = resolve(request["spec"])
    switches = request.get("grappler") or {}
    rt.reset_grappler()
    rt.clear_dumps()
    body, args = rt.build(spec)
    reference, unfused = _call(rt, models.function(body, tf, served=True), args, switches, remapping=False)
    rt.clear_dumps()
    rt.log.read()
    if "error" in reference:
        return {"spec": spec.to_dict(), "unfused_error": reference["error"], "fingerprint": rt.fingerprint}
    result = {"spec": spec.to_dict(), "fingerprint": rt.fingerprint}
    # the output shapes the traced graph declares: a run that returns others is wrong, whatever it is compared with
    declared = declared_shapes(rt, unfused, args)
    if request.get("xla") and rt.device == "cpu":
        result["xla"] = xla_check(rt, body, args, reference["outputs"], declared)
    started = time.perf_counter()
    fused, stages = _call(rt, models.function(body, tf, served=True), args, switches, remapping=None)
    result["fused_s"] = round(time.perf_counter() - started, 3)
    if "error" in fused:
        result["fused_error"] = fused["error"]
    else:
        found = basis(rt, [stages["traced"]] if stages else [])
        result["agreement"] = agreement.compare_on(fused["outputs"], reference["outputs"], found)
        ran = sorted({n.op for g in (stages or {}).values() if g is not None for n in g.node})  # oneDNN's kernels too
        misshapen = agreement.off_declared(fused["outputs"], reference["outputs"], dict(found, declared=declared,
                                                                                         ops=ran))
        if misshapen:
            result["agreement"] = dict(result["agreement"], agree=False, summary=misshapen)
        if not result["agreement"]["agree"]:  # a model drawing random numbers differs from itself too
            found = with_variation(found, fused["outputs"], lambda: called(
                rt, models.function(body, tf, served=True), args, switches))
            result["varies"] = found["varies"]
        reps = int(request.get("reps") or 0)
        if reps:
            result["timing"] = time_both(rt, body, args, switches, min(reps, MAX_REPS))
    rt.reset_grappler()
    log = rt.log.read()
    result["notable"] = grappler_log.parse_log(log)["notable"]  # a Grappler that gave up says so here
    if "error" in fused:
        result["fused_error"].update(failed_kernel(log))
    if stages is None:  # a failed call whose graphs TensorFlow did not keep: Grappler's own dumps have them
        stages = dumped_stages(rt, log)
    if stages is None:
        result["nodes"] = []
        return result
    result["nodes"] = fused_nodes(rt, stages, fn_shapes(rt, body, args), result.get("fused_error"))
    fault = diagnosis.verdict(result)["fault"]
    if fault is not None:  # each node's script, to run alone in a fresh process (engine.diagnose)
        context = dict(repro_context(rt, spec, request), fault_words=diagnosis.FAULT_WORDS[fault])
        for node in result["nodes"]:
            if "isolated" in node:
                node["script"] = fault_repro.script(node["isolated"], context)
    return result


MAX_REPS = 200


def time_both(rt: Runtime, body, args, switches: dict, reps: int) -> dict:
    """Median milliseconds of a call as configured and with the remapper off, interleaved after a warm-up
    (what a way around costs against the unfused graph). Grappler's options are set before every call."""
    import statistics

    fns = {"configured": (models.function(body, rt.tf, served=True), None),
           "unfused": (models.function(body, rt.tf, served=True), False)}
    samples = {name: [] for name in fns}
    with rt.without_dumps():
        for i in range(reps + 2):
            for name, (fn, remap) in (fns.items() if i % 2 == 0 else reversed(fns.items())):
                rt.set_grappler(switches, remap)
                started = time.perf_counter()
                rt.call(fn, args)
                rt.sync()
                if i >= 2:
                    samples[name].append((time.perf_counter() - started) * 1e3)
                rt.reset_grappler()
    return {name + "_ms": round(statistics.median(values), 4) for name, values in samples.items()} | {"reps": reps}


def _call(rt: Runtime, fn, args, switches: dict, remapping):
    """One call with run metadata on (``Runtime.capture``): ({"outputs"} or {"error"}, its stage GraphDefs or None)."""
    try:
        stages, out, _ = rt.capture(fn, args, switches, remapping)
        return {"outputs": [t.numpy() for t in as_list(out)]}, stages
    except Exception as exc:  # noqa: BLE001 - the fused call's failure is the finding
        message = getattr(exc, "message", None) or str(exc)
        node = re.search(r"\{\{node ([^}\s]+)\}\}|Detected at node '?([^'\s]+)", message)
        line = re.sub(r"^\{\{function_node [^}]*\}\}\s*", "", error_line(message))
        error = {"type": type(exc).__name__, "line": line[:400],
                 "node": (node.group(1) or node.group(2)) if node else None}
        return {"error": error}, getattr(exc, "failed_stages", None)
    finally:
        rt.reset_grappler()


def xla_check(rt: Runtime, body, args, reference: list, declared: list) -> dict:
    """The XLA-compiled function's outputs against the remapper-off graph's, same inputs (a tolerance that
    follows the ops, as for Grappler's fusions: XLA reorders sums and computes activations its own way). Where
    the remapper-off graph itself returns another shape than the model declares, that is said instead
    (``reference_off``), with whether XLA's keeps to it: such a reference says nothing of XLA's numbers."""
    fn = models.function(body, rt.tf, jit_compile=True)
    try:
        with rt.without_dumps():
            out = [t.numpy() for t in as_list(rt.call(fn, args))]
    except Exception as exc:  # noqa: BLE001 - what XLA refuses or fails on is a finding too
        message = getattr(exc, "message", None) or str(exc)
        refused = "unsupported op" in message.lower() or "no registered" in message.lower()
        return {"error": {"type": type(exc).__name__, "line": error_line(message)[:400]}, "refused": refused}
    finally:
        rt.reset_grappler()
    reference_off = agreement.off_declared(reference, [], {"declared": declared})
    if reference_off:
        return {"reference_off": reference_off,
                "keeps_declared": agreement.off_declared(out, [], {"declared": declared}) is None}
    traced = _concrete(models.function(body, rt.tf, trace=True), args).graph
    return {"agreement": agreement.compare_on(out, reference, basis(rt, [traced.as_graph_def()]))}


def dumped_stages(rt: Runtime, log: list[str]) -> dict | None:
    """The model's graph before and after Grappler from Grappler's dumps (written before the call ran)."""
    from .elide import parse_dump
    from .grappler import MAIN_PREFIX

    run = grappler_log.main_run(grappler_log.parse_log(log), MAIN_PREFIX)
    if run is None or not run["iterations"]:
        return None
    first = run["iterations"][0].get("before_dump")
    last = [p["dump"] for it in run["iterations"] for p in it["passes"] if p.get("dump")]
    if not first or not last:
        return None
    try:
        stages = {}
        for stage, path in (("traced", first), ("optimized", last[-1])):
            with open(path, "rb") as handle:
                stages[stage] = parse_dump(path, handle.read(), rt.tf)
    except OSError:
        return None
    return stages


def fn_shapes(rt: Runtime, body, args) -> dict[str, list[int]]:
    """Static output shapes of the traced model's ops, by name (what a cut-out op's inputs are drawn as)."""
    fn = models.function(body, rt.tf, trace=True)
    try:
        graph = _concrete(fn, args).graph
    except Exception:  # noqa: BLE001 - shapes are a help, not a need
        return {}
    shapes = {}
    for op in graph.get_operations():
        if op.outputs:
            dims = static_dims(op.outputs[0].shape)
            if dims is not None:
                shapes[op.name] = list(dims)
    return shapes


def kernel_of(op_or_file: str) -> str:
    """oneDNN's kernels are the _Mkl ops (their sources mkl_*.cc/.h); the rest are Eigen's on a CPU."""
    name = os.path.basename(op_or_file).lower()
    return "oneDNN" if name.startswith(("_mkl", "mkl_", "onednn")) else "Eigen"


def failed_kernel(log: list[str]) -> dict:
    """The kernel source a failed call names in TensorFlow's log ('OP_REQUIRES failed at conv_ops_fused_impl.h:750')."""
    for line in log:
        found = re.search(r"OP_REQUIRES failed at (\S+?):(\d+)", line)
        if found:
            return {"kernel_file": f"{found.group(1)}:{found.group(2)}", "kernel": kernel_of(found.group(1))}
    return {}


def fused_nodes(rt: Runtime, stages: dict, shapes: dict, error: dict | None = None) -> list[dict]:
    """Each fused node of the graph after Grappler: its pattern, the kernel that ran it, its ops cut out."""
    graphs = {name: Graph.from_dict(rt.graph_to_dict(g, name)) for name, g in stages.items()}
    executed = {n.name: n.op for n in graphs["executed"].nodes} if "executed" in graphs else {}
    found = []
    for fusion in find_fusions(graphs["traced"], graphs["optimized"]):
        data = fusion.to_dict()
        ran = executed.get(fusion.node)
        entry = {"node": fusion.node, "op": fusion.op, "fused_ops": list(fusion.fused_ops),
                 "describe": data["describe"], "absorbed": data["absorbed"], "absorbed_ops": data["absorbed_ops"],
                 "executed_op": ran, "kernel": kernel_of(ran) if ran else None}
        if ran is None and error and error.get("node") == fusion.node and error.get("kernel"):
            entry.update(kernel=error["kernel"], kernel_file=error["kernel_file"])
        try:
            entry["isolated"] = isolate(rt.tf, stages["traced"], data, shapes)
        except NotIsolated as exc:
            entry["not_isolated"] = str(exc)
        found.append(entry)
    return found


def repro_context(rt: Runtime, spec, request: dict) -> dict:
    """What the repro script's header says of where it ran: TensorFlow, oneDNN and the flags, the CPU, the model."""
    fp = rt.fingerprint
    env = dict(fp.get("flags") or {})
    env["TF_ENABLE_ONEDNN_OPTS"] = "1" if fp.get("onednn") else "0"
    try:
        model = " ".join(spec.cli_args())
    except Exception:  # noqa: BLE001 - words only
        model = getattr(spec, "source_id", "a model")
    return {"tf_version": fp.get("tensorflow"), "cpu": fp.get("cpu_model"), "onednn": fp.get("onednn"),
            "env": {k: v for k, v in env.items() if k.startswith("TF_") and v is not None}, "model": model,
            "dtype": dict(getattr(spec, "params", ()) or ()).get("dtype") if hasattr(spec, "params") else None}
