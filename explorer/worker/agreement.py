"""Does the fused graph still compute what the model says? Inspect's check, run inside the worker.

After inspect's call with the configuration as set (the "fused" run), the same function is called with
Grappler's remapper off (the "reference": the other switches as set, same process, same seeded inputs;
TensorFlow instantiates the function again for the other options, with no new trace) and every output is
compared (``analysis.agreement``). Where the model's signature leaves a dimension open, or its inputs are
integers or booleans, edge inputs a user's data can reach are tried too (a dimension of 1, an empty one,
zeros, large magnitudes). Grappler's options are global: they are put back to TensorFlow's defaults after.

The result is ``InspectResult["agreement"]`` (``model.results.AgreementCheck``): a status, the verdict's
headline, how the inputs were made, the comparison, each run's error and the failing node it names.
"""

from __future__ import annotations

import re
import time

import numpy as np

from ..analysis import agreement as compare_outputs
from . import models
from ..model.spec import resolve
from .protocol import error_line
from .runtime import Runtime
from .shapes import executed_tensors, fed_shapes, returned_shapes

REFERENCE = "this model with Grappler's remapper off (the other switches as set), same process, same inputs"
REFERENCE_BESIDE = ("this model with Grappler's remapper off (the other switches as set), run at the same time in a "
                    "second worker process of this configuration: same flags, same seeded weights and inputs")
LARGE = 1e4  # how much the "large magnitudes" edge scales float inputs by


def outputs(tf, out) -> list:
    """A call's outputs as numpy arrays, in the function's own order and dtypes."""
    return [np.asarray(t.numpy()) if hasattr(t, "numpy") else np.asarray(t) for t in tf.nest.flatten(out)]


def error_record(exc, stages: dict | None = None) -> dict:
    """TensorFlow's error: its type, its first useful line and the node it names (with its op, if the graphs
    after Grappler or as executed hold it)."""
    message = getattr(exc, "message", None) or str(exc)
    named = re.findall(r"\{\{node ([^}]+)\}\}", message) or re.findall(r"node '?([\w/.\-]+)'? ", message)
    node = named[0] if named else None
    op = None
    for stage in ("executed", "optimized"):
        graph = (stages or {}).get(stage)
        for n in getattr(graph, "node", ()):
            if node and n.name == node:
                op = n.op
        if op:
            break
    return {"type": type(exc).__name__, "message": (error_line(message) or type(exc).__name__)[:400],
            "node": node, "op": op}


def describe_inputs(spec, names: list[str], args: list) -> dict:
    """How the inputs were made: the builder's words and seed, and each tensor's shape, dtype and range."""
    made = models.inputs_made(spec)
    tensors = []
    for name, arg in zip(names, args):
        value = np.asarray(arg.numpy())
        row = {"name": name, "shape": [int(d) for d in value.shape], "dtype": arg.dtype.name}
        if value.size and (value.dtype.kind in "fiub" or value.dtype.name == "bfloat16"):
            as_float = value.astype(np.float64)
            row.update(min=float(as_float.min()), max=float(as_float.max()), mean=round(float(as_float.mean()), 6))
        tensors.append(row)
    return dict(made, tensors=tensors)


def called(rt: Runtime, fn, args, switches: dict, remapping: bool | None = None, executed: list | None = None):
    """(outputs, error): fn called once with the switches as set (``remapping`` False: the remapper off, for the
    reference); a call TensorFlow fails leaves nothing pending (``flush_run_metadata``). ``executed``, a list:
    the call's graphs are collected and its executed graph appended (the traffic account's unfused graph)."""
    tf = rt.tf
    try:
        if executed is not None:
            try:
                stages, out, _ = rt.capture(fn, args, switches, remapping)
            except RuntimeError:  # no graphs recorded for the call (or mixed with another's): called plainly
                pass
            else:
                executed.append(stages["executed"])
                return outputs(tf, out), None
        rt.set_grappler(switches, remapping)
        return outputs(tf, rt.call(fn, args)), None
    except tf.errors.OpError as exc:
        rt.flush_run_metadata()
        return None, error_record(exc)
    finally:
        rt.reset_grappler()


def computed_dtypes(tf, graphs) -> list[str]:
    """The float dtypes the graphs' ops compute in or cast to: what their outputs' tolerance rests on (a
    mixed-precision model computes in bfloat16 or float16 behind float32 outputs)."""
    names = set()
    for graph in graphs:
        for node in graph.node:
            for attr in ("T", "DstT"):
                dtype = node.attr[attr].type if attr in node.attr else 0
                if dtype and tf.dtypes.as_dtype(dtype).is_floating:
                    names.add(tf.dtypes.as_dtype(dtype).name)
    return sorted(names)


def basis(rt: Runtime, graphs) -> dict:
    """What a comparison of the outputs of ``graphs`` rests on (``analysis.agreement.judged``): their ops, whether
    float32 contractions run as TF32, the float dtypes they compute in, the random ops they call (their functions'
    included), and whether the outputs vary anyway (``with_variation``)."""
    called_ops = {n.op for g in graphs for f in g.library.function for n in f.node_def}
    ops = {n.op for g in graphs for n in g.node}
    return {"ops": sorted(ops), "tf32": rt.tf32_active(), "computed": computed_dtypes(rt.tf, graphs),
            "random": sorted((ops | called_ops) & compare_outputs.RANDOM_OPS), "varies": None}


def declared_shapes(rt: Runtime, stages: dict | None, args: list) -> list:
    """The output shapes the traced graph of ``stages`` declares at the shapes of ``args`` (a basis's ``declared``:
    ``analysis.agreement.off_declared`` holds each run's outputs to them); [] without a traced graph."""
    traced = (stages or {}).get("traced")
    return returned_shapes(rt.tf, traced, fed_shapes(args)) if traced is not None else []


def with_variation(found: dict, first: list | None, again) -> dict:
    """``found`` (a ``basis``) with what a second call of the fused graph on the same inputs says: ``again()`` is
    made only for a graph calling random ops and whose first call ran (other graphs' calls repeat exactly)."""
    if first is None or not found["random"]:
        return found
    second, _ = again()
    return found if second is None else dict(found, varies=compare_outputs.variation(first, second, found))


def bench_agreement(fused: list, reference: list, found: dict) -> dict:
    """The benchmark's ``Agreement`` of its fused and unfused variants, judged as inspect's check judges them
    (``analysis.agreement.judged``, tolerance by dtype and ops): the largest differences over the outputs, the
    worst output's tolerance, and the whole comparison beside them. Outputs that vary from call to call (random
    ops) are neither within tolerance nor outside it (None), and ``varies`` says so."""
    comparison = compare_outputs.judged(fused, None, reference, None, found)["comparison"]
    outs = comparison["outputs"]
    worst = outs[comparison["worst"]] if comparison["worst"] is not None else None
    varies = found.get("varies") if not comparison["agree"] else None
    misshapen = compare_outputs.off_declared(fused, reference, found)  # both variants may share a wrong shape
    return {"max_abs": max((o["max_abs"] for o in outs), default=0.0),
            "max_rel": max((o["max_rel"] for o in outs), default=0.0),
            "tolerance": worst["tolerance"]["rtol"] if worst else 0.0,
            "within_tolerance": None if varies else comparison["agree"] and not misshapen, "varies": varies,
            "tf32": any("TF32" in b for o in outs for b in o["tolerance"]["basis"]), "comparison": comparison,
            **({"off_declared": misshapen} if misshapen else {})}


def edge_inputs(spec, body, args: list, tf) -> list[tuple[str, str, list]]:
    """[(case, words, inputs)]: the edges a user's data can reach, for a model whose signature leaves a
    dimension open (imports traced as served) or that takes integers or booleans; [] otherwise."""
    declared = getattr(body, models.DECLARED, None)
    open_dims = [[i for i, d in enumerate(shape or ()) if d is None] for shape, _ in declared] if declared else []
    discrete = any(a.dtype.is_integer or a.dtype == tf.bool for a in args)
    if not any(open_dims) and not discrete:
        return []
    cases = [("zeros", "every input zero (False)", [tf.zeros_like(a) for a in args])]

    def large(a):
        if a.dtype == tf.bool:
            return tf.ones_like(a)
        if a.dtype.is_integer:
            return tf.cast(tf.fill(tf.shape(a), min(a.dtype.max, 1 << 30)), a.dtype)
        return a * tf.cast(LARGE, a.dtype)
    cases.append(("large", f"every input scaled by {LARGE:g} (integers at 2^30 or their maximum, booleans True)",
                  [large(a) for a in args]))
    rng = np.random.default_rng(models.inputs_made(spec).get("seed") or 0)
    for size, case in ((1, "dimension 1"), (0, "empty dimension")):
        if not any(open_dims) or all(a.shape[i] == size for a, dims in zip(args, open_dims) for i in dims):
            continue
        resized = []
        for a, dims in zip(args, open_dims):
            shape = [size if i in dims else int(d) for i, d in enumerate(a.shape)]
            data = rng.standard_normal(shape) if a.dtype.is_floating else rng.integers(0, 2, shape)
            resized.append(tf.constant(data.astype(a.dtype.as_numpy_dtype)))
        cases.append((case, f"the open dimensions set to {size}", resized))
    return cases


def check(rt: Runtime, spec, body, fn, names: list[str], args: list, switches: dict, fused, fused_exc,
          stages: dict | None, wanted: bool = True, executed: list | None = None) -> dict | None:
    """The agreement check of one inspect (see the module's docstring); None when the model fails with the
    remapper off too (then it is the model that fails, not the fusion: the caller reports TensorFlow's error).
    ``executed``: a list that receives the reference run's executed graph."""
    started = time.perf_counter()
    base = {"reference": REFERENCE, "inputs": describe_inputs(spec, names, args), "edges": []}
    if switches.get("remapping") == "off" or not wanted:
        why = "the remapper is off: the graph run is the unfused reference itself" if wanted else \
            "not asked for (benchmarks/agreement_cost.py times inspect without it)"
        if fused_exc is not None:  # nothing to judge it against: TensorFlow's error, as before the check
            raise fused_exc
        return dict(base, status="skipped", headline=None, comparison=None, fused_error=None, reference_error=None,
                    reference_shapes=None, summary=why, seconds=0.0)
    found = with_variation(dict(basis(rt, [g for g in (stages or {}).values() if g is not None]),
                                declared=declared_shapes(rt, stages, args)), fused, lambda: called(rt, fn, args, switches))
    fused_error = error_record(fused_exc, stages) if fused_exc is not None else None
    reference, reference_error = called(rt, fn, args, switches, False, executed)
    base["reference_seconds"] = round(time.perf_counter() - started, 4)  # its own Grappler run and kernels
    base["reference_shapes"] = [[int(d) for d in r.shape] for r in reference] if reference is not None else None
    main = compare_outputs.judged(fused, fused_error, reference, reference_error, found)
    if main["status"] == "model_fails":
        return None
    edges = []
    if main["status"] == "agrees":
        cases = edge_inputs(spec, body, args, rt.tf)
        edges = compare_outputs.edges_judged(edge_runs(rt, fn, cases, switches),
                                             edge_runs(rt, fn, cases, switches, False), found)
    return compare_outputs.concluded(base, main, edges, round(time.perf_counter() - started, 4))


def edge_runs(rt: Runtime, fn, cases: list, switches: dict, remapping: bool | None = None) -> list[dict]:
    """Each edge case (``edge_inputs``) called once, as ``called`` calls: its case, words, input shapes, outputs
    (None when it failed), error and seconds."""
    runs = []
    for case, words, inputs in cases:
        started = time.perf_counter()
        out, error = called(rt, fn, inputs, switches, remapping)
        runs.append({"case": case, "inputs": words, "shapes": [[int(d) for d in a.shape] for a in inputs],
                     "outputs": out, "error": error, "seconds": round(time.perf_counter() - started, 4)})
    return runs


def savable(arrays) -> bool:
    """Whether numpy's own .npz holds these outputs as they are (not bfloat16 and the like, nor strings)."""
    return all(a.dtype.isbuiltin == 1 and a.dtype.kind != "O" for a in arrays)


def written(path: str, main: list | None, edges: list[dict]) -> list[dict]:
    """The outputs of one side of a check beside another worker written to ``path`` (numpy's .npz: ``main_<i>``,
    ``<case>_<i>``, read back by ``engine.reference``); the edges as sent, each with its output count instead of
    its outputs."""
    arrays = {f"main_{i}": a for i, a in enumerate(main or ())}
    for edge in edges:
        arrays.update({f"{edge['case']}_{i}": a for i, a in enumerate(edge["outputs"] or ())})
    np.savez(path, **arrays)
    return [dict({k: v for k, v in edge.items() if k != "outputs"}, count=len(edge["outputs"] or ())) for edge in edges]


def fused_side(rt: Runtime, spec, body, fn, names: list[str], args: list, switches: dict, fused: list,
               stages: dict, path: str) -> dict | None:
    """Inspect's half of a check whose reference runs beside it (``reference``, in another worker): the fused
    outputs, on the seeded inputs and the edge inputs, ``written`` to ``path``; the check "pending" with what the
    engine judges them by. None when the outputs are not numpy's own dtypes: the check is then made here, as it is
    without a second worker."""
    started = time.perf_counter()
    edges = edge_runs(rt, fn, edge_inputs(spec, body, args, rt.tf), switches)
    if not savable(fused) or not all(savable(e["outputs"]) for e in edges if e["outputs"] is not None):
        return None
    found = with_variation(dict(basis(rt, [g for g in stages.values() if g is not None]),
                                declared=declared_shapes(rt, stages, args)), fused, lambda: called(rt, fn, args, switches))
    return {"status": "pending", "reference": REFERENCE_BESIDE, "inputs": describe_inputs(spec, names, args),
            "basis": found, "count": len(fused),
            "edges": written(path, fused, edges), "outputs": path, "seconds": round(time.perf_counter() - started, 4)}


def reference(rt: Runtime, request: dict) -> dict:
    """The ``reference`` request: the model called with the remapper off (the other switches as set), on its seeded
    inputs and on its edge inputs, the outputs ``written`` to ``request["outputs"]``. A second warm worker of the
    same configuration answers it while the first runs the fused graph (``engine.reference``). Returns each run's
    error, the reference's shapes and seconds, and its executed graph's tensors (the traffic account's unfused
    graph)."""
    started = time.perf_counter()
    spec = resolve(request["spec"])
    switches = request.get("grappler") or {}
    rt.reset_grappler()
    body, args = rt.build(spec)
    fn = models.function(body, rt.tf, served=True)
    executed: list = []
    with rt.without_dumps():
        main, error = called(rt, fn, args, switches, False, executed)
        edges = edge_runs(rt, fn, edge_inputs(spec, body, args, rt.tf), switches, False)
    rt.log.read()  # its Grappler lines are no inspect's log
    return {"error": error, "count": len(main or ()), "edges": written(request["outputs"], main, edges),
            "shapes": [[int(d) for d in r.shape] for r in main] if main is not None else None,
            "executed_tensors": executed_tensors(rt.tf, executed[0], fed_shapes(args)) if executed else None,
            "seconds": round(time.perf_counter() - started, 4)}


def after_abort(rt: Runtime, spec, fn, names: list[str], args: list, switches: dict, how: str) -> dict:
    """The check of a model whose fused run killed the worker (``how``: the engine's words): the unfused run
    alone, in a new worker. Raises TensorFlow's error when the unfused run fails too."""
    started = time.perf_counter()
    reference, reference_error = called(rt, fn, args, switches, False)
    if reference_error is not None:
        raise RuntimeError(f"the model fails with the remapper off too: {reference_error['message']}")
    fused_error = {"type": "abort", "message": how, "node": None, "op": None}
    result = {"reference": REFERENCE, "inputs": describe_inputs(spec, names, args), "edges": [],
              "reference_shapes": [[int(d) for d in r.shape] for r in reference], "comparison": None,
              "fused_error": fused_error, "reference_error": None, "status": "aborts",
              "summary": f"the fused graph's run killed the worker process ({how}); with the remapper off it runs "
                         "(in a new worker); the graphs after Grappler are Grappler's output made without running them",
              "seconds": round(time.perf_counter() - started, 4)}
    result["headline"] = compare_outputs.headline(result)
    return result
