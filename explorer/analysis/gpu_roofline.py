"""Predicted GPU time, fused against unfused, from the simulated graphs: a roofline per kernel, never a measurement.

Input: a simulated-GPU result (worker.simulate), whose ``tensors`` give, for the graph after Grappler
("fused") and the same with the remapper off ("unfused"), every op's tensors ([dtype, shape, bytes]) and the
device it was placed on; and a GPU profile (model.gpu_profiles: the vendor's data-sheet figures).

Each op placed on the GPU is one kernel. Its device time is max(bytes ÷ the memory bandwidth, FLOPs ÷ the peak
rate of the unit TensorFlow would run it on), each at the fraction of the peak real kernels reached on a
measured GPU, plus the launch; the op takes the longer of that and TensorFlow's dispatch of it (the host
dispatches while earlier kernels run). The kernels of a variant add up (one after another on one stream).
Launch and fractions were measured on an H100 (model.gpu_profiles.OVERHEAD, EFFICIENCY); the dispatch is
assumed. The unit, as TensorFlow runs
it: matmuls and convolutions in float16 on tensor cores (V100 and later), bfloat16 on tensor cores from
A100 on, float32 in TF32 on tensor cores from A100 on (TensorFlow's default; NVIDIA_TF32_OVERRIDE=0 turns it
off), float64 on FP64 tensor cores where there are some; every other op on the CUDA cores.

It leaves out what no data sheet gives: how close a kernel gets to the peaks (real kernels reach a part
of them), caches between kernels, autotuning, the cost of a tanh. So it is a prediction to compare, not
a bound, and the page and the command line say so wherever they show it.
"""

from __future__ import annotations

from collections.abc import Mapping

from ..model.devices import Device
from ..model.gpu_profiles import EFFICIENCY, MEASURED_AGAINST, OVERHEAD, PROFILES, canonical
from . import gpu_measured
from .traffic import op_account

# Ops TensorFlow runs on a GPU without a kernel of their own (the output aliases the input's buffer, or
# only the shape is read): no traffic, no launch.
NO_KERNEL_OPS = frozenset({"Reshape", "Squeeze", "ExpandDims", "Shape", "ShapeN", "Size", "Rank", "StopGradient",
                           "Snapshot", "PreventGradient", "EnsureShape"})
CONTRACTIONS = ("MatMul", "Conv2D", "Conv3D", "Einsum")  # op names holding these run on tensor cores
LABEL = "Predicted (a roofline on the data-sheet figures, calibrated on a measured H100; not measured here)"

UNITS = {"fp64": "FP64", "fp64_tc": "FP64 tensor cores", "fp32": "FP32 CUDA cores", "tf32_tc": "TF32 tensor cores",
         "fp16": "FP16 CUDA cores", "fp16_tc": "FP16 tensor cores", "bf16_tc": "BF16 tensor cores"}


def profile_figures(name: str) -> dict:
    """A profile's roofline figures and their sources (KeyError for an unknown name)."""
    key = canonical(name)
    p = PROFILES[key]
    return {"name": name, "profile": key, "label": p["label"], "memory_gbs": p["memory_gbs"],
            "peak_tflops": dict(p["peak_tflops"]), "sources": list(p["sources"]), "derived": list(p["derived"]),
            "launch_us": OVERHEAD["launch_us"], "framework_us": OVERHEAD["framework_us"],
            "overhead_source": OVERHEAD["source"],
            "efficiency": {k: v for k, v in EFFICIENCY.items() if k != "source"},
            "efficiency_source": EFFICIENCY["source"]}


def unit(op: str, dtype: str, peaks: dict, tf32: bool) -> str:
    """Which of the profile's units runs this op in this dtype, as TensorFlow would run it."""
    contraction = any(c in op for c in CONTRACTIONS) and "Depthwise" not in op
    if dtype == "float64":
        return "fp64_tc" if contraction and "fp64_tc" in peaks else "fp64"
    if dtype == "float16":
        if contraction and "fp16_tc" in peaks:
            return "fp16_tc"
        return "fp16" if "fp16" in peaks else "fp32"
    if dtype == "bfloat16":
        if contraction and "bf16_tc" in peaks:
            return "bf16_tc"
        return "fp16" if "bf16_tc" in peaks and "fp16" in peaks else "fp32"
    if contraction and tf32 and dtype == "float32" and "tf32_tc" in peaks:
        return "tf32_tc"
    return "fp32"


def _dtype(op: dict) -> str:
    for tensor in (op.get("outputs") or []) + (op.get("inputs") or []):
        if tensor and tensor[0]:
            return tensor[0]
    return "float32"


def kernel(op: dict, figures: dict, tf32: bool) -> dict:
    """One op's predicted time on the GPU (µs), its bytes, FLOPs, the unit and what bounds it."""
    row = op_account(op)
    dtype = _dtype(op)
    row.update(dtype=dtype, device=op.get("device", "GPU"))
    if row["device"] == "CPU":
        return dict(row, kernel=False, unit="host CPU", memory_us=0.0, compute_us=0.0, overhead_us=0.0, us=0.0,
                    bound="host", why="placed on the host CPU (no GPU kernel for it): not in the GPU time")
    if op["op"] in NO_KERNEL_OPS:
        return dict(row, kernel=False, unit="none", memory_us=0.0, compute_us=0.0, overhead_us=0.0, us=0.0,
                    bound="none", why="no kernel: the output is the input's buffer or its shape")
    used = unit(op["op"], dtype, figures["peak_tflops"], tf32)
    reached = figures.get("efficiency") or {}
    memory_us = row["bytes"] / (figures["memory_gbs"] * reached.get("memory", 1.0) * 1e9) * 1e6
    compute_us = row["flops"] / (figures["peak_tflops"][used] * reached.get(used, 1.0) * 1e12) * 1e6
    roof = max(memory_us, compute_us)
    us = max(roof + figures["launch_us"], figures["framework_us"])  # the host dispatches while earlier kernels run
    overhead_us = us - roof
    return dict(row, kernel=True, unit=UNITS[used], memory_us=memory_us, compute_us=compute_us,
                overhead_us=overhead_us, us=us,
                bound="compute" if compute_us > memory_us else "memory", overhead_dominated=overhead_us > roof,
                why="")


def variant(ops: list[dict], figures: dict, tf32: bool) -> dict:
    rows = [kernel(op, figures, tf32) for op in ops]
    launched = [r for r in rows if r["kernel"]]
    return {"kernels": rows, "us": sum(r["us"] for r in launched), "count": len(launched),
            "bytes": sum(r["bytes"] for r in launched), "flops": sum(r["flops"] for r in launched),
            "overhead_us": sum(r["overhead_us"] for r in launched),
            "on_host": [r["name"] for r in rows if r["bound"] == "host"]}


def tf32_on(env: dict | None) -> bool:
    """TensorFlow runs float32 matmuls and convolutions in TF32 on Ampere and newer unless told not to."""
    return str((env or {}).get("NVIDIA_TF32_OVERRIDE", "")).strip() != "0"


def predict(result: Mapping, profile: str | None = None, env: dict | None = None) -> dict | None:
    """Fused against unfused predicted time of a simulated result on ``profile`` (default: the result's own).

    None when the result carries no tensors (a result of an older explorer, or not simulated)."""
    tensors = result.get("tensors") or {}
    if not (tensors.get("fused") and tensors.get("unfused")):
        return None
    profile = profile or (result.get("profile") or {}).get("name") or Device.of(result.get("device")).profile or ""
    figures = profile_figures(profile)
    env = env if env is not None else (result.get("config") or {}).get("env") or result.get("env_flags") or {}
    tf32 = tf32_on(env) and "tf32_tc" in figures["peak_tflops"]
    fused, unfused = variant(tensors["fused"], figures, tf32), variant(tensors["unfused"], figures, tf32)
    kept = {r["name"] for r in fused["kernels"] if r["kernel"]}
    removed = [r["name"] for r in unfused["kernels"] if r["kernel"] and r["name"] not in kept]
    notes = [f"{len(v['on_host'])} op(s) of the {name} graph placed on the host CPU are not in its GPU time: "
             + ", ".join(v["on_host"][:6]) for name, v in (("fused", fused), ("unfused", unfused)) if v["on_host"]]
    partial = bool(fused["on_host"] or unfused["on_host"])
    if partial:  # the host's share is not predicted, so the two totals are not the whole of either variant
        notes.insert(0, "no speedup predicted: part of the model runs on the host CPU, whose time this GPU roofline "
                        "does not predict")
    if figures["derived"]:
        notes.append("figures of this profile that are derived: " + "; ".join(figures["derived"]))
    notes.append("measured against: " + MEASURED_AGAINST)
    return {
        "label": LABEL,
        "evidence": "prediction",
        "profile": figures,
        "tf32": tf32,
        "fused_us": fused["us"], "unfused_us": unfused["us"],
        "speedup": unfused["us"] / fused["us"] if fused["us"] and unfused["us"] and not partial else None,
        "partial": partial,
        "saved_us": unfused["us"] - fused["us"],
        "kernels": {"fused": fused["kernels"], "unfused": unfused["kernels"]},
        "kernel_count": {"fused": fused["count"], "unfused": unfused["count"]},
        "bytes": {"fused": fused["bytes"], "unfused": unfused["bytes"]},
        "flops": {"fused": fused["flops"], "unfused": unfused["flops"]},
        "overhead_us": {"fused": fused["overhead_us"], "unfused": unfused["overhead_us"]},
        "removed_kernels": removed,
        "model": "per kernel: max(bytes ÷ memory bandwidth, FLOPs ÷ peak rate of the unit TensorFlow runs it on), "
                 "at the fractions of the peaks reached on a measured H100, + the launch; at least TensorFlow's "
                 "dispatch of the op; a variant's kernels add up",
        "notes": notes,
    }


def words(p: dict) -> list[str]:
    """The prediction as the command line prints it."""
    f = p["profile"]
    peaks = ", ".join(f"{UNITS[k]} {v:g}" for k, v in f["peak_tflops"].items())
    lines = [f"{LABEL}, on {f['label']}:",
             f"  fused {p['fused_us']:.1f} µs ({p['kernel_count']['fused']} kernels) · unfused {p['unfused_us']:.1f} µs "
             f"({p['kernel_count']['unfused']} kernels) · predicted speedup "
             + (f"{p['speedup']:.2f}×" if p["speedup"] else "?"),
             f"  profile: {f['memory_gbs']:g} GB/s; peak TFLOP/s {peaks}; TF32 {'on' if p['tf32'] else 'off'}; "
             f"launch {f['launch_us']:g} µs, at least {f['framework_us']:g} µs per op ({f['overhead_source']}); "
             f"peaks at {f['efficiency_source']}",
             "  figures from: " + "; ".join(f["sources"])]
    for name in ("fused", "unfused"):
        lines.append(f"  {name}:")
        for k in p["kernels"][name]:
            if not k["kernel"]:
                lines.append(f"    {k['name']:<36} {k['op']:<18} — {k['why']}")
                continue
            lines.append(f"    {k['name']:<36} {k['op']:<18} {k['us']:9.2f} µs  {k['bytes'] / 2**20:8.2f} MiB "
                         f"{k['flops'] / 1e9:8.3f} GFLOP  {k['bound']}-bound ({k['unit']})"
                         + (" (overhead dominates)" if k.get("overhead_dominated") else ""))
    return lines + [f"  ({n})" for n in p["notes"]]


def answer(result: dict, profile: str | None = None) -> dict:
    """What ``bench`` on a simulated GPU answers: the simulated result's identity, its fusions and the prediction."""
    config = result.get("config") or {}
    return {"simulated": True, "evidence": "prediction", "device": config.get("device") or result.get("device"),
            "config": config, "spec": result.get("spec"),
            "fusions": [f.get("description") for f in result.get("fusions") or []],
            "prediction": predict(result, profile, config.get("env")),
            "measured": gpu_measured.find(result, profile),
            "limits": ["Nothing ran: the times are a roofline prediction from the simulated graphs and the GPU's "
                       "data-sheet figures, not a measurement.", *(result.get("limits") or [])]}


def answer_words(a: dict) -> str:
    """``answer`` as the command line prints it."""
    lines = [f"{a['spec'].get('preset') or 'model'} on {a['device']}: fused against unfused, PREDICTED (nothing ran)",
             "Grappler made (simulated): " + ("; ".join(a["fusions"]) or "no fusion")]
    if a["prediction"] is None:
        lines.append("no prediction: this result carries no per-op tensors (rerun with --no-cache)")
    else:
        lines += words(a["prediction"])
    if a.get("measured"):
        lines.append(gpu_measured.words(a["measured"]).replace("**", ""))
    return "\n".join(lines) + "\n"


PAYS = 1.05  # a predicted speedup below this is "no longer pays": within what the roofline cannot tell apart


def sweep_row(value, prediction: dict | None) -> dict | None:
    if prediction is None or prediction["speedup"] is None:
        return None
    heaviest = max((k for k in prediction["kernels"]["fused"] if k["kernel"]), key=lambda k: k["us"], default=None)
    return {"value": value, "fused_us": prediction["fused_us"], "unfused_us": prediction["unfused_us"],
            "speedup": prediction["speedup"], "kernels_fused": prediction["kernel_count"]["fused"],
            "kernels_unfused": prediction["kernel_count"]["unfused"],
            "heaviest": f"{heaviest['op']}, {heaviest['bound']}-bound" if heaviest else ""}


def stops_paying(rows: list[dict]) -> object | None:
    """The smallest swept size from which the predicted speedup stays below PAYS (None: it pays throughout)."""
    found = None
    for row in sorted(rows, key=lambda r: r["value"], reverse=True):
        if row["speedup"] >= PAYS:
            break
        found = row["value"]
    return found
