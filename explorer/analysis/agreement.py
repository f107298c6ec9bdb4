"""Whether a fused graph still computes what the model says: its outputs against the unfused graph's.

Pure numpy (no TensorFlow): the worker hands over the outputs of one call with the configuration as set
(``fused``) and one with Grappler's remapper off (``reference``), same seeded inputs, and this module
says whether they agree. Two functions make the API:

``tolerance(dtype, ops=(), tf32=False, computed=()) -> {"rtol": float, "basis": [str]}``
    The largest relative difference still counted as agreement for outputs of ``dtype`` (numpy's or
    TensorFlow's name) from a graph holding ``ops`` (op type names) that computes in the float dtypes
    ``computed``. Integer, bool and string outputs must match exactly (0). Floats: the rounding of the
    output's dtype or of a narrower one the graph computes in, widened where the graph sums (contractions,
    normalisations, reductions: the fused and unfused kernels add in other orders, oneDNN's blocked
    sums especially), where it evaluates transcendental activations (oneDNN's own approximations) and
    where float32 contractions run as TF32. ``basis`` says why, in words.

``compare(fused, reference, ops=(), tf32=False, computed=()) -> dict``
    Every output compared; JSON-able, keys stable::

        {"agree": bool,                      # every output agrees and the counts match
         "outputs": [per output, below],
         "count": {"fused": n, "reference": n},
         "worst": index of the first disagreeing output (else of the largest max_rel) or None,
         "summary": one sentence}

    Per output::

        {"index": i, "agree": bool, "why": None or a sentence,
         "shape": {"fused": [...], "reference": [...]}, "dtype": {"fused": str, "reference": str},
         "elements": n, "outside": elements beyond the tolerance,
         "nan": {"fused": n, "reference": n}, "inf": {"fused": n, "reference": n},
         "nonfinite_where_reference_finite": n,   # a disagreement (NaN or Inf the model does not make)
         "finite_where_reference_nonfinite": n,   # reported only: the fused graph did no worse
         "max_abs": float, "max_abs_at": [index] or None,
         "max_rel": float, "max_rel_at": [index] or None,
         "tolerance": {"rtol": float, "basis": [str]}}

Relative difference: ``|fused - reference| / max(|reference|, rms(reference))``, over the elements finite
on both sides. Relative to each element, but never to less than the output's typical magnitude: a
reordered sum's error scales with the magnitude of what it adds, so an element that cancels to near
zero would otherwise turn rounding into a huge ratio. An output agrees when its shape and dtype match,
it has no non-finite value where the reference is finite (same-signed infinities and NaN on both sides
match) and ``max_rel <= rtol``.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Mapping, Sequence

import numpy as np

# The dtype's own rounding (half an ulp, rounded up), and what summing in another order may cost.
ROUNDING = {"float64": 1e-12, "float32": 1e-5, "float16": 5e-3, "bfloat16": 3e-2}
SUMS = {"float64": 1e-9, "float32": 1e-3, "float16": 3e-2, "bfloat16": 1e-1}
TRANSCENDENTAL = {"float64": 1e-9, "float32": 1e-4, "float16": 1e-2, "bfloat16": 5e-2}
TF32 = 1e-2  # float32 contractions on a TF32 GPU keep 10 mantissa bits
COMPUTES_IN = "the model computes in"  # the basis entry of a tolerance set by a dtype narrower than the output's
# The simpler rule of the fault repro script a diagnosis writes (it runs without the explorer, by the isolated
# node's dtype): the largest difference still counted as agreement; integer outputs must match exactly.
BENCH_TOLERANCE = {"float64": 1e-9, "float32": 1e-3, "float16": 5e-2, "bfloat16": 1e-1}
EXACT = ("int", "uint", "bool", "str", "bytes", "object", "qint", "quint")

# Ops whose result is a sum of many terms (kernels may add them in another order), and ops evaluated with
# approximations that oneDNN's fused post-ops compute their own way. Matched on the op's name without
# TensorFlow's "_Fused"/"_Mkl" prefixes and version suffixes ("_FusedConv2D" and "Conv3D" are contractions).
CONTRACTIONS = {"MatMul", "BatchMatMul", "Conv", "DepthwiseConv", "Einsum", "Conv2DBackpropInput",
                "Conv3DBackpropInput", "DepthwiseConv2dNativeBackpropInput"}
SUMMING = CONTRACTIONS | {"FusedBatchNorm", "BatchNorm", "Sum", "Mean", "Softmax", "LogSoftmax", "LayerNorm",
                          "InstanceNorm", "Prod", "L2Loss", "AvgPool", "Cumsum", "SegmentSum"}
# Stateful random ops: each call draws new numbers, so two calls (fused, unfused) differ whatever the fusion did.
RANDOM_OPS = {"RandomUniform", "RandomStandardNormal", "TruncatedNormal", "RandomUniformInt", "Multinomial",
              "RandomShuffle", "RandomGamma", "RandomPoisson", "RandomPoissonV2", "ParameterizedTruncatedNormal"}
TRANSCENDENTALS = {"Tanh", "Sigmoid", "Gelu", "Erf", "Elu", "Selu", "Softplus", "Swish", "Mish", "Exp", "Log",
                   "Pow", "Sqrt", "Rsqrt", "Sin", "Cos", "Softsign", "Log1p", "Expm1", "Erfc"}


def _family(op: str) -> str:
    """"_FusedConv2D" -> "Conv", "BatchMatMulV2" -> "BatchMatMul", "FusedBatchNormV3" -> "FusedBatchNorm"."""
    op = re.sub(r"^_(Mkl|Onednn)?(Native)?(Fused)?", "", op)
    op = re.sub(r"(V\d+|\d+D|2dNative|Native)+$", "", op)
    return "FusedBatchNorm" if op in ("BatchNormEx", "FusedBatchNormEx") else op


def _dtype_name(dtype) -> str:
    name = getattr(dtype, "name", None) or str(dtype)
    return name.replace("tf.", "").replace("np.", "").lower()


def _exact(name: str) -> bool:
    return name.startswith(EXACT) or name in ("string",)


def _has(ops: Iterable[str], family: set[str]) -> bool:
    return any(_family(op) in family for op in ops)


def tolerance(dtype, ops: Iterable[str] = (), tf32: bool = False, computed: Iterable[str] = ()) -> dict:
    """The relative tolerance for outputs of ``dtype`` from a graph of ``ops`` that computes in the float dtypes
    ``computed`` (a mixed-precision model's bfloat16 behind float32 outputs), with its reasons."""
    name, ops = _dtype_name(dtype), [str(o) for o in ops]
    if name.startswith("complex"):
        name = "float64" if name == "complex128" else "float32"
    if _exact(name) or name not in ROUNDING:
        return {"rtol": 0.0, "basis": [f"{name} outputs must match exactly"]}
    # The fused and unfused graphs round at other places, so the narrowest dtype computed in sets the scale.
    within = max([name, *(c for c in map(_dtype_name, computed) if c in ROUNDING)], key=ROUNDING.__getitem__)
    rtol, basis = ROUNDING[within], [f"{within} rounding"]
    if within != name:
        basis.append(f"{COMPUTES_IN} {within} behind {name} outputs")
    if _has(ops, TRANSCENDENTALS):
        rtol = max(rtol, TRANSCENDENTAL[within])
        basis.append("transcendental activations (oneDNN computes its fused post-ops its own way)")
    if _has(ops, SUMMING):
        rtol = max(rtol, SUMS[within])
        basis.append("sums added in another order (contractions, normalisations, reductions)")
    if tf32 and within == "float32" and _has(ops, CONTRACTIONS):
        rtol = max(rtol, TF32)
        basis.append("float32 contractions run as TF32 (10 mantissa bits)")
    return {"rtol": rtol, "basis": basis}


def _index(flat: int, shape) -> list[int]:
    return [int(i) for i in np.unravel_index(int(flat), shape)] if shape else []


def compare_one(index: int, fused, reference, ops: Iterable[str] = (), tf32: bool = False,
                computed: Iterable[str] = ()) -> dict:
    """One output of each run compared (see the module's docstring for the keys)."""
    a, b = np.asarray(fused), np.asarray(reference)
    da, db = _dtype_name(a.dtype), _dtype_name(b.dtype)
    tol = tolerance(db, ops, tf32, computed)
    out: dict[str, Any] = {"index": index, "agree": True, "why": None,
           "shape": {"fused": [int(d) for d in a.shape], "reference": [int(d) for d in b.shape]},
           "dtype": {"fused": da, "reference": db}, "elements": int(b.size), "outside": 0,
           "nan": {"fused": 0, "reference": 0}, "inf": {"fused": 0, "reference": 0},
           "nonfinite_where_reference_finite": 0, "finite_where_reference_nonfinite": 0,
           "max_abs": 0.0, "max_abs_at": None, "max_rel": 0.0, "max_rel_at": None, "tolerance": tol}
    if a.shape != b.shape:
        return dict(out, agree=False, why=f"shape {list(a.shape)} against the reference's {list(b.shape)}")
    if da != db:
        return dict(out, agree=False, why=f"dtype {da} against the reference's {db}")
    if _exact(db) or db not in ROUNDING and not db.startswith("complex"):
        equal = a == b
        outside = int(equal.size - np.count_nonzero(equal))
        out["outside"] = outside
        if outside:
            first = int(np.flatnonzero(~equal.ravel())[0])
            out.update(agree=False, max_abs_at=_index(first, b.shape), max_rel_at=_index(first, b.shape),
                       why=f"{outside} of {b.size} elements differ (exact match required), first at "
                           f"{_index(first, b.shape)}")
            if a.dtype.kind in "iub":
                diff = np.abs(a.astype(np.float64) - b.astype(np.float64))
                out["max_abs"] = float(diff.max())
                out["max_abs_at"] = _index(int(diff.argmax()), b.shape)
        return out
    x = a.astype(np.complex128 if db.startswith("complex") else np.float64)
    y = b.astype(x.dtype)
    fin_x, fin_y = np.isfinite(x), np.isfinite(y)
    out["nan"] = {"fused": int(np.isnan(x).sum()), "reference": int(np.isnan(y).sum())}
    out["inf"] = {"fused": int(np.isinf(x).sum()), "reference": int(np.isinf(y).sum())}
    # Non-finite on both sides matches when it is the same value (NaN with NaN, +Inf with +Inf).
    both_nonfinite = ~fin_x & ~fin_y
    same_special = both_nonfinite & ((np.isnan(x) & np.isnan(y)) | (x == y))
    bad_special = int(np.count_nonzero(~fin_x & fin_y)) + int(np.count_nonzero(both_nonfinite & ~same_special))
    out["nonfinite_where_reference_finite"] = int(np.count_nonzero(~fin_x & fin_y))
    out["finite_where_reference_nonfinite"] = int(np.count_nonzero(fin_x & ~fin_y))
    both = fin_x & fin_y
    if np.any(both):
        with np.errstate(invalid="ignore", over="ignore"):
            diff = np.where(both, np.abs(x - y), 0.0)
        yf = np.abs(y[both])
        top = float(yf.max())
        rms = top * float(np.sqrt(np.mean((yf / top) ** 2))) if top > 0 else 0.0  # scaled: no overflow
        floor = max(rms, np.finfo(np.float64).tiny)
        rel = np.where(both, diff / np.maximum(np.abs(np.where(both, y, 0.0)), floor), 0.0)
        out["max_abs"], out["max_abs_at"] = float(diff.max()), _index(int(diff.argmax()), b.shape)
        out["max_rel"], out["max_rel_at"] = float(rel.max()), _index(int(rel.argmax()), b.shape)
        out["outside"] = int(np.count_nonzero(rel > tol["rtol"]))
    out["outside"] += bad_special
    if bad_special:
        first = int(np.flatnonzero((~fin_x & fin_y) | (both_nonfinite & ~same_special))[0])
        out.update(agree=False, why=f"{bad_special} non-finite values (NaN or Inf) where the reference has others or "
                                    f"finite values, first at {_index(first, b.shape)}")
    elif out["max_rel"] > tol["rtol"]:
        out.update(agree=False, why=f"{out['outside']} of {b.size} elements beyond tolerance {tol['rtol']:g}: max "
                                    f"relative difference {out['max_rel']:.3g} at {out['max_rel_at']} (max absolute "
                                    f"{out['max_abs']:.3g} at {out['max_abs_at']})")
    return out


def compare(fused: Sequence, reference: Sequence, ops: Iterable[str] = (), tf32: bool = False,
            computed: Iterable[str] = ()) -> dict:
    """Every output of the fused run against the reference run's (see the module's docstring)."""
    ops, computed = list(ops), list(computed)
    outputs = [compare_one(i, a, b, ops, tf32, computed) for i, (a, b) in enumerate(zip(fused, reference))]
    counts = {"fused": len(fused), "reference": len(reference)}
    agree = counts["fused"] == counts["reference"] and all(o["agree"] for o in outputs)
    bad = [o for o in outputs if not o["agree"]]
    worst = bad[0]["index"] if bad else (max(outputs, key=lambda o: o["max_rel"])["index"] if outputs else None)
    if counts["fused"] != counts["reference"]:
        summary = f"{counts['fused']} outputs against the reference's {counts['reference']}"
    elif bad:
        summary = f"output {bad[0]['index']}: {bad[0]['why']}" + (f" ({len(bad)} of {len(outputs)} outputs differ)"
                                                                   if len(bad) > 1 else "")
    elif outputs:
        w, many = outputs[worst or 0], len(outputs) != 1
        narrower = [b for b in w["tolerance"]["basis"] if b.startswith(COMPUTES_IN)]
        summary = (f"{len(outputs)} output{'s agree' if many else ' agrees'}: " +
                   ("exactly" if w["tolerance"]["rtol"] == 0 else
                    f"max relative difference {w['max_rel']:.2g} within {w['tolerance']['rtol']:g}"
                    + (f" ({narrower[0]})" if narrower else "")))
    else:
        summary = "no outputs to compare"
    return {"agree": bool(agree), "outputs": outputs, "count": counts, "worst": worst, "summary": summary}


def compare_on(fused: Sequence, reference: Sequence, basis: Mapping) -> dict:
    """``compare`` with what a graph's ``basis`` (the worker's ``agreement.basis``) says it computes with."""
    return compare(fused, reference, basis["ops"], basis["tf32"], basis.get("computed", ()))


# The check of a whole inspect (worker.agreement): its status, and the verdict's words for the bad ones.
# "agrees", "differs" (beyond tolerance), "varies" (they differ, but so do two fused calls: random ops), "fails"
# (the fused graph raised; unfused it runs), "aborts" (the fused run killed the process; unfused it runs),
# "unchecked" (the unfused reference failed), "skipped" (the remapper is off: nothing to compare).
BROKEN = ("fails", "aborts")
HEADLINES = {"fails": "The fusion breaks this model", "aborts": "The fusion breaks this model",
             "differs": "The fusion changes this model's numbers beyond tolerance"}


def judged(fused, fused_error, reference, reference_error, basis: Mapping) -> dict:
    """One pair of runs on one set of inputs, judged: a status and what it rests on. ``basis``: what the graph
    computes with (``{"ops", "tf32", "computed", "random", "varies"}``, the worker's ``agreement.basis``)."""
    if fused_error and reference_error:
        return {"status": "model_fails", "comparison": None, "fused_error": fused_error,
                "reference_error": reference_error,
                "summary": f"fails with the remapper on and off alike: {reference_error['message']}"}
    if fused_error:
        where = f" at node {fused_error['node']}" + (f" ({fused_error['op']})" if fused_error["op"] else "") \
            if fused_error["node"] else ""
        return {"status": "fails", "comparison": None, "fused_error": fused_error, "reference_error": None,
                "summary": f"the fused graph fails{where}: {fused_error['type']}: {fused_error['message']}; "
                           "with the remapper off it runs"}
    if reference_error:
        return {"status": "unchecked", "comparison": None, "fused_error": None, "reference_error": reference_error,
                "summary": f"the unfused reference failed, so nothing was compared: {reference_error['message']}"}
    comparison = compare_on(fused, reference, basis)
    status = "agrees" if comparison["agree"] else "varies" if basis.get("varies") else "differs"
    summary = comparison["summary"] if status != "varies" else \
        f"{basis['varies']}, so the unfused run's numbers say nothing of the fusion"
    misshapen = off_declared(fused, reference, basis)
    if misshapen:  # a wrong shape is wrong whatever the reference says: it may share the rewrite that made it
        status, summary = "differs", misshapen
    return {"status": status, "comparison": comparison, "fused_error": None, "reference_error": None,
            "summary": summary}


def off_declared(fused: Sequence, reference: Sequence, basis: Mapping) -> str | None:
    """The sentence saying that an output of the fused run has another shape than the model's traced graph declares
    (``basis["declared"]``, None for a dimension left open), and whether the unfused reference's had it too: then a
    rewrite that runs with the remapper off made it, such as oneDNN's layout pass folding a Pad into a convolution
    (TF 2.21 drops a Pad of the batch axis there: measured 2026-11-29). None when every shape keeps to it."""
    for i, (out, want) in enumerate(zip(fused, basis.get("declared") or ())):
        got = [int(d) for d in np.shape(out)]
        if want is None or (len(got) == len(want) and all(w is None or w == g for w, g in zip(want, got))):
            continue
        said = f"output {i} has shape {got}, where the model's traced graph declares " \
               f"{[w if w is not None else '?' for w in want]}"
        if i < len(reference) and [int(d) for d in np.shape(reference[i])] == got:
            folds = sorted(op for op in basis.get("ops") or () if "PadWith" in op)
            said += ("; the unfused reference (remapper off) has it too: a rewrite that runs with the remapper off "
                     "made it" + (f" (oneDNN's layout pass ran {', '.join(folds)}: a Pad folded into a convolution; "
                                  "try TF_ENABLE_ONEDNN_OPTS=0)" if folds else ""))
        return said
    return None


def variation(first, second, basis: Mapping) -> str | None:
    """Two calls of one graph on the same inputs (``first``, ``second``) held against each other: the sentence
    saying that the model's outputs vary from call to call (its random ops named), or None when they agree."""
    again = compare_on(first, second, basis)
    if again["agree"]:
        return None
    calls = f"it calls {', '.join(basis['random'])}, and " if basis.get("random") else ""
    most = max((o["max_rel"] for o in again["outputs"]), default=0.0)
    by = f"by up to {most:.2g} (relative)" if most else f"({again['summary']})"
    return f"the model's outputs vary from call to call: {calls}two calls of the fused graph on the same inputs differ {by}"


def edges_judged(fused: list[dict], reference: list[dict], basis: Mapping) -> list[dict]:
    """The edge inputs' pairs, ``judged`` case by case: each side's runs ({"case", "outputs", "error", ...}, the
    fused side's with its "inputs" words and "shapes"); a case one side did not run is left out. Seconds: both
    runs', where both sides timed theirs."""
    theirs = {e["case"]: e for e in reference}
    basis = {k: v for k, v in basis.items() if k != "declared"}  # declared at the seeded inputs' shapes, not these
    pairs = []
    for edge in fused:
        other = theirs.get(edge["case"])
        if other is not None:
            pair = judged(edge["outputs"], edge["error"], other["outputs"], other["error"], basis)
            pairs.append(dict(pair, case=edge["case"], inputs=edge["inputs"], shapes=edge["shapes"],
                              seconds=round(edge["seconds"] + other.get("seconds", 0.0), 4)))
    return pairs


def concluded(base: dict, main: dict, edges: list[dict], seconds: float) -> dict:
    """The whole check: ``base`` (what it rests on), the seeded inputs' pair ``main`` and the edge inputs' pairs
    ``edges`` (each ``judged``, with its case and words), judged together; an edge that fails or differs
    speaks for a check whose seeded inputs agree."""
    status, summary = main["status"], main["summary"]
    for wanted in ("fails", "differs"):
        bad = [e for e in edges if e["status"] == wanted]
        if status == "agrees" and bad:
            status, summary = wanted, f"on edge inputs ({bad[0]['case']}: {bad[0]['inputs']}): {bad[0]['summary']}"
    result = dict(base, **{k: main[k] for k in ("comparison", "fused_error", "reference_error")}, edges=edges,
                  status=status, summary=summary, seconds=seconds)
    result["headline"] = headline(result)
    return result


def headline(check: dict | None) -> str | None:
    """The verdict above everything else ("The fusion breaks this model", ...), or None when it agrees."""
    return HEADLINES.get(str((check or {}).get("status")))


def broken(check: Mapping | None) -> bool:
    """Whether the fused run failed or aborted: such a result is never cached (asked again, it runs again) and
    the command line exits 1, as it did when TensorFlow's error was all it said."""
    return (check or {}).get("status") in BROKEN


def disagrees(check: dict | None) -> bool:
    """Whether the check found the fused graph broken or its numbers changed (what no speedup may hide)."""
    return (check or {}).get("status") in HEADLINES
