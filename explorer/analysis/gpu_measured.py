"""Whether the simulated GPU's graphs of a result are graphs that were measured on a real GPU, and what ran.

A prediction says what a roofline expects; where the very same graphs (the same ops, fused ops, dtypes and
shapes, fused and unfused) were replayed on a real GPU (model.gpu_measured), the page and the command line
show that measurement beside the prediction, with the GPU, the date and the libraries, and how it was run.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping

from ..model import gpu_measured
from ..model.devices import Device
from ..model.gpu_profiles import canonical, profile_for

VARIANTS = ("fused", "unfused")


def signature(ops: list[dict]) -> tuple:
    """A graph's GPU ops as what a kernel replay depends on: op, fused ops and every tensor's dtype and shape."""
    def tensors(specs) -> tuple:  # a shape TensorFlow could not tell is None: it matches no measured graph
        return tuple((t[0], tuple(t[1]) if t[1] is not None else None) for t in (specs or []) if t)

    return tuple((op["op"], tuple(op.get("fused_ops") or ()), tensors(op.get("inputs")), tensors(op.get("outputs")))
                 for op in ops if op.get("device", "GPU") == "GPU")


def _case_of(tensors: dict) -> str | None:
    wanted = tuple(signature(tensors.get(v) or []) for v in VARIANTS)
    for case, recorded in gpu_measured.graphs()["cases"].items():
        if tuple(signature(recorded["tensors"][v]) for v in VARIANTS) == wanted:
            return case
    return None


def find(result: Mapping, profile: str | None = None) -> dict | None:
    """The real-GPU measurement of this result's simulated graphs on ``profile``'s GPU, or None when those graphs
    were not measured there."""
    tensors = result.get("tensors") or {}
    if not all(tensors.get(v) for v in VARIANTS):
        return None
    profile = profile or (result.get("profile") or {}).get("name") or Device.of(result.get("device")).profile
    if not profile:  # not a simulated GPU's result: no profile whose GPU could have run these graphs
        return None
    profile = canonical(profile)
    case = _case_of(tensors)
    if case is None:
        return None
    rows = [(run, row["measured"]) for run in gpu_measured.runs() for row in run["rows"]
            if row["case"] == case and "unsupported" not in row["measured"]
            and profile_for(run.get("gpu")) == profile]
    if not rows:
        return None
    run = rows[0][0]
    return {
        "evidence": "measured", "case": case, "gpu": run["gpu"], "driver": run["driver"],
        "dates": sorted({r["date"] for r, _ in rows}), "runs": len(rows),
        "libraries": {k: v for k, v in (run.get("libraries") or {}).items() if k in ("nvidia-cublas", "nvidia-cudnn-cu13", "torch", "cuda")},
        "how": gpu_measured.HOW, **medians([m for _, m in rows]),
    }


def medians(measured: list[dict]) -> dict:
    """One case's runs as one figure: the median device and eager times per variant, their speedups, and the
    kernels the first run saw."""
    device = {v: statistics.median(m[v]["device_us"] for m in measured) for v in VARIANTS}
    eager = {v: statistics.median(m[v]["eager_us"] for m in measured) for v in VARIANTS}
    return {"device_us": device, "eager_us": eager,
            "speedup": device["unfused"] / device["fused"], "eager_speedup": eager["unfused"] / eager["fused"],
            "kernels": {v: measured[0][v].get("kernels") or [] for v in VARIANTS}}


def words(m: dict) -> str:
    """One sentence, with its evidence first."""
    libraries = ", ".join(f"{k} {v}" for k, v in m["libraries"].items())
    ran = len(m["kernels"]["fused"])
    return (f"Measured on a real GPU ({m['gpu']}, {', '.join(d[:10] for d in m['dates'][:1])}; {libraries}; "
            f"{m['runs']} run{'s' if m['runs'] != 1 else ''}): these very graphs took {m['device_us']['fused']:.1f} µs "
            f"fused ({ran} kernel{'s' if ran != 1 else ''} ran) against {m['device_us']['unfused']:.1f} µs unfused on "
            f"the device, **{m['speedup']:.2f}×**; with PyTorch's dispatch from Python {m['eager_speedup']:.2f}×. "
            f"How: {m['how']}; not TensorFlow's own kernels or executor.")
