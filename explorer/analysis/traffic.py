"""Why fusion pays: the bytes each executed op moves, its FLOPs, and the time those need on this machine.

Input: a benchmark result, whose worker recorded for each variant the tensors every executed op reads
and writes (``proof[variant]["tensors"]``: [dtype, shape, bytes], bytes from TensorFlow's own dtype
sizes), and the machine's measured speeds (``engine.machine_profile``: a bandwidth curve over working-set
sizes and TensorFlow's float32 matmul rate).

The model is a per-op roofline: an op takes max(its bytes ÷ the bandwidth at its working set, its
FLOPs ÷ the matmul rate), because inside one op the loads and the arithmetic overlap; the ops of a
variant add up, because they run one after another. It leaves out what it cannot see: per-op
dispatch overhead (which dominates small tensors), an intermediate still in cache from the op that
wrote it (the working set is the op's own tensors), and transcendental functions' real cost (a tanh
counts one FLOP). So the estimate is not a bound: where it lies above the measured time, it says so.
"""

from __future__ import annotations

import math

MIB = 1024 ** 2
BANDWIDTH_CURVE = "triad"  # an elementwise op reads two tensors and writes one, like STREAM's triad

# FLOPs per output element of the elementwise ops (and of fused epilogues) that are not one;
# a transcendental counts one, as a roofline that cannot see the instruction mix must.
ELEMENTWISE_FLOPS = {
    "Relu6": 2, "LeakyRelu": 2, "Elu": 3, "Selu": 4, "Sigmoid": 3, "Softplus": 3, "Swish": 4,
    "GeluApproximate": 8, "GeluExact": 8, "Gelu": 8, "_MklSwish": 4,
    "FusedBatchNorm": 4, "FusedBatchNormV2": 4, "FusedBatchNormV3": 4, "_FusedBatchNormEx": 4,
    "BiasAddGrad": 1, "Const": 0, "Square": 1, "SquaredDifference": 2,
}
REDUCTIONS = frozenset({"Sum", "Mean", "Max", "Min", "Prod", "ArgMax", "ArgMin", "All", "Any", "Softmax",
                        "LogSoftmax"})


def _size(tensor) -> int | None:
    return tensor[2] if tensor and len(tensor) > 2 else None


def _unknown(tensor) -> bool:
    """A tensor whose shape no run fixed (a string or resource tensor of known shape has no size, and is not)."""
    return not tensor or len(tensor) < 2 or tensor[1] is None


def _elements(tensor) -> int:
    shape = tensor[1] if tensor and len(tensor) > 1 else None
    return math.prod(shape) if shape is not None else 0


def op_flops(op: dict) -> int:
    """FLOPs of one executed op from its tensors' shapes (a multiply-add is two)."""
    kind, inputs, outputs = op["op"], op.get("inputs", []), op.get("outputs", [])
    out = _elements(outputs[0]) if outputs else 0
    epilogue = sum(ELEMENTWISE_FLOPS.get(f, 1) for f in op.get("fused_ops", []))
    epilogue += "WithBias" in kind  # oneDNN's _MklNativeConv2DWithBias adds its bias without saying so
    if "MatMul" in kind and len(inputs) >= 2 and outputs and outputs[0][1]:
        # [.., m, k] x [.., k, n] -> [.., m, n]: 2·m·k·n per batch = 2 · elements(A) · n
        n = outputs[0][1][-1]
        return 2 * _elements(inputs[0]) * n + epilogue * out
    if "Conv" in kind and len(inputs) >= 2 and inputs[1][1]:
        filt = inputs[1][1]  # HWIO (depthwise: HWCM): each output element sums H·W(·I) products
        per_output = math.prod(filt[:-2]) if "Depthwise" in kind else math.prod(filt[:-1])
        return 2 * out * per_output + epilogue * out
    base = kind.removeprefix("_MklNative").removeprefix("_Mkl")  # oneDNN's kernel of the same op, the same FLOPs
    if base in REDUCTIONS:
        return _elements(inputs[0]) if inputs else 0
    return out * ELEMENTWISE_FLOPS.get(base, 1)


def op_account(op: dict) -> dict:
    reads = [_size(t) for t in op.get("inputs", [])]
    writes = [_size(t) for t in op.get("outputs", [])]
    # What moves data: every input and the first output. A further output of unknown shape (FusedBatchNorm's
    # reserve space in inference) is left out and noted, as it stands apart from the figures.
    outputs = op.get("outputs", [])
    unknown = sum(1 for t in op.get("inputs", []) + outputs[:1] if _unknown(t))
    aside = sum(1 for t in outputs[1:] if _unknown(t))
    read_b, write_b = sum(b or 0 for b in reads), sum(b or 0 for b in writes)
    return {"name": op["name"], "op": op["op"], "fused_ops": list(op.get("fused_ops", [])),
            "reads": read_b, "writes": write_b, "bytes": read_b + write_b, "flops": op_flops(op),
            "output_shape": (op.get("outputs") or [[None, None]])[0][1], "unknown_tensors": unknown,
            "uncounted_outputs": aside}


def variant_account(tensors: list[dict] | None) -> dict:
    """One run's account; ``tensors`` None (the worker could not read the executed graph's shapes): not known."""
    ops = [op_account(op) for op in tensors or ()]
    return {"ops": ops, "reads": sum(o["reads"] for o in ops), "writes": sum(o["writes"] for o in ops),
            "bytes": sum(o["bytes"] for o in ops), "flops": sum(o["flops"] for o in ops),
            "unknown_tensors": sum(o["unknown_tensors"] for o in ops) + (tensors is None), "unreadable": tensors is None,
            "uncounted_outputs": sum(o["uncounted_outputs"] for o in ops)}


def removed_intermediates(unfused: dict, fused: dict) -> list[dict]:
    """The tensors the unfused variant writes and the fused one no longer does: the outputs of the
    unfused ops whose names are gone from the fused graph (a fused node keeps its last op's name)."""
    kept = {o["name"] for o in fused["ops"]}
    return [{"name": o["name"], "op": o["op"], "bytes": o["writes"]} for o in unfused["ops"] if o["name"] not in kept]


def saving(tensors: dict) -> dict:
    """What fusion saves a model, the one figure every tab and the command line show: both variants' accounts
    (``tensors``: {"fused", "unfused"} executed tensors, at the shapes that ran), the intermediates the fused
    graph no longer writes, the traffic saved in all, and how many tensors' shapes no run fixed (then the
    byte figures are not known, whatever the sums say)."""
    variants = {v: variant_account(tensors[v]) for v in ("fused", "unfused")}
    removed = removed_intermediates(variants["unfused"], variants["fused"])
    return {"variants": variants, "removed": removed, "removed_bytes": sum(r["bytes"] for r in removed),
            "saved_bytes": variants["unfused"]["bytes"] - variants["fused"]["bytes"],
            "unknown_tensors": sum(a["unknown_tensors"] for a in variants.values()),
            "unreadable": any(a["unreadable"] for a in variants.values())}


# ---- the words ----------------------------------------------------------------------------------

def not_known(unknown: int, unreadable: bool = False) -> str:
    """The one line said where a traffic figure cannot be known (``unreadable``: a run's executed graph could not be
    read for its shapes at all)."""
    if unreadable:
        return "not known: TensorFlow could not work out the shapes of the executed graph's ops (it did not import)"
    return (f"not known: {unknown} tensor{'s' if unknown != 1 else ''} whose shape TensorFlow cannot work out before "
            "the model runs (inside a loop, or sized by values computed as it runs)")


def size_text(nbytes: int | None, unknown: int = 0) -> str:
    """A traffic figure as every tab and the command line word it: bytes below a KiB, then KiB, MiB or GiB to
    three significant figures ('576 B', '88.9 KiB', '1.25 MiB', '2.33 GiB'); 'not known' where a tensor's
    shape is. One function, so one model's figure reads the same on every tab."""
    if unknown or nbytes is None:
        return "not known"
    size, unit = float(nbytes), "B"
    for bigger in ("KiB", "MiB", "GiB"):
        if abs(size) < 1000:  # "0.977 MiB", never "1024 KiB"
            break
        size, unit = size / 1024, bigger
    if unit == "B" or not size:
        return f"{size:.0f} {unit}"
    digits = max(0, 2 - math.floor(math.log10(abs(size))))
    digits = max(0, 2 - math.floor(math.log10(abs(round(size, digits)))))  # 0.99996 reads "1.00", not "1.000"
    return f"{size:.{digits}f} {unit}"


def flops_text(flops: float) -> str:
    """'918 kFLOP', '2.15 GFLOP': three significant figures in the unit a reader takes in at once."""
    units = ("FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP")
    i = min(int(math.log(max(flops, 1), 1000)), len(units) - 1)
    return f"{flops / 1000 ** i:.3g} {units[i]}"


# ---- the machine's speeds ----------------------------------------------------------------------

def bandwidth_at(profile: dict, working_set: float, curve: str = BANDWIDTH_CURVE) -> float:
    """GB/s at a working-set size, interpolated on log(size) between measured points, flat beyond them."""
    points = sorted((p["bytes"], p[f"{curve}_gbs"]) for p in profile["bandwidth"] if p.get(f"{curve}_gbs"))
    if not points:
        raise ValueError("the machine profile has no bandwidth points")
    if working_set <= points[0][0]:
        return points[0][1]
    for (x0, y0), (x1, y1) in zip(points, points[1:]):
        if working_set <= x1:
            t = (math.log(working_set) - math.log(x0)) / (math.log(x1) - math.log(x0))
            return y0 + t * (y1 - y0)
    return points[-1][1]


def dram_bandwidth(profile: dict, curve: str = BANDWIDTH_CURVE) -> float:
    """The bandwidth of the largest working set measured (beyond the last-level cache)."""
    return max(profile["bandwidth"], key=lambda p: p["bytes"])[f"{curve}_gbs"]


def estimate_ops(ops: list[dict], profile: dict) -> dict:
    """Each op's roofline time at its working set's bandwidth (and at DRAM's), summed."""
    rate = profile["matmul"]["gflops"] * 1e9
    dram = dram_bandwidth(profile) * 1e9
    total = total_dram = 0.0
    timed = []
    for o in ops:
        bw = bandwidth_at(profile, max(o["bytes"], 1)) * 1e9
        memory_s, compute_s = o["bytes"] / bw, o["flops"] / rate
        seconds = max(memory_s, compute_s)
        dram_s = max(o["bytes"] / dram, compute_s)
        total += seconds
        total_dram += dram_s
        timed.append(dict(o, bandwidth_gbs=round(bw / 1e9, 3), est_ms=seconds * 1e3, est_dram_ms=dram_s * 1e3,
                          bound="compute" if compute_s > memory_s else "memory"))
    return {"ops": timed, "est_ms": total * 1e3, "est_dram_ms": total_dram * 1e3}


def relation(est_ms: float, measured_ms: float | None) -> dict:
    """Where the estimate sits against the measurement, in words that never call an estimate above
    the measured time a bound."""
    if measured_ms is None or not est_ms:
        return {"code": "unknown", "ratio": None, "words": "no measurement to compare with"}
    ratio = measured_ms / est_ms
    if ratio >= 1:
        return {"code": "below", "ratio": ratio,
                "words": f"the estimate is {ratio:.2f}× below the measured time: the run stays above what its traffic and "
                         "FLOPs need here; the rest is what the model leaves out (per-op overhead, real cost of "
                         "tanh and friends)"}
    return {"code": "above", "ratio": ratio,
            "words": f"the estimate is {1 / ratio:.2f}× ABOVE the measured time, so it is not a bound here: the "
                     "data moved faster than the curve says (intermediates stayed in cache between ops)"}


# ---- the report a benchmark result carries ------------------------------------------------------

def report(result: dict, profile: dict | None) -> dict | None:
    """Bytes, FLOPs and removed intermediates of both variants; with a machine profile, the estimate
    beside the measurement. None when the result carries no tensors (an older or three-way result)."""
    proof = result.get("proof") or {}
    if not all((proof.get(v) or {}).get("tensors") for v in ("fused", "unfused")):
        return None
    summary = result.get("summary") or {}
    out = saving({v: proof[v]["tensors"] for v in ("fused", "unfused")})
    variants = out["variants"]
    out.update({
        "machine": None,
        "model": "per-op roofline: each op takes max(its bytes ÷ the bandwidth at its working set, its FLOPs ÷ the "
                 "matmul rate); a variant's ops add up (they run one after another)",
        "notes": [],
    })
    for v, account in variants.items():
        account["measured_ms"] = (summary.get(v) or {}).get("median_ms")
        account["p10_ms"] = (summary.get(v) or {}).get("p10_ms")
        account["p90_ms"] = (summary.get(v) or {}).get("p90_ms")
        if account["uncounted_outputs"]:
            out["notes"].append(f"{v}: {account['uncounted_outputs']} tensor(s) of unknown shape are not counted")
    if out["unknown_tensors"]:  # an estimate of part of the run beside the time of all of it compares nothing
        out["notes"].append("no time estimate: the traffic is " + not_known(out["unknown_tensors"], out["unreadable"]))
        return out
    device = (result.get("fingerprint") or {}).get("device", "cpu")
    if profile is None or device != "cpu":
        out["notes"].append("no time estimate: " + ("the bandwidth probe measures the host CPU's memory, not a GPU's"
                                                   if device != "cpu" else "this machine's speeds are not measured yet"))
        return out
    fp = profile.get("fingerprint") or {}
    out["machine"] = {  # the profile itself (small), so the report draws its curve wherever it goes
        "key": profile.get("key"), "described": profile.get("described", ""), "measured_at": profile.get("measured_at", ""),
        "bandwidth": profile["bandwidth"], "caches": profile.get("caches") or {}, "threads": profile.get("threads"),
        "matmul": profile["matmul"], "fingerprint": {k: fp.get(k) for k in ("cpu_model", "cpu_count", "device")},
        "dram_gbs": dram_bandwidth(profile), "matmul_gflops": profile["matmul"]["gflops"], "curve": BANDWIDTH_CURVE}
    for account in variants.values():
        account.update(estimate_ops(account["ops"], profile))
        account["relation"] = relation(account["est_ms"], account["measured_ms"])
    f, u = variants["fused"], variants["unfused"]
    measured_gap = (u["measured_ms"] - f["measured_ms"]) if None not in (u["measured_ms"], f["measured_ms"]) else None
    est_gap, dram_gap = u["est_ms"] - f["est_ms"], u["est_dram_ms"] - f["est_dram_ms"]
    out["saving"] = {"measured_ms": measured_gap, "est_ms": est_gap, "est_dram_ms": dram_gap,
                     "dram_over_measured": dram_gap / measured_gap if measured_gap and measured_gap > 0 else None,
                     "est_over_measured": est_gap / measured_gap if measured_gap and measured_gap > 0 else None}
    dtype = (result.get("spec") or {}).get("params", {}).get("dtype", "float32")
    if dtype != "float32":
        out["notes"].append(f"the FLOP rate is float32 matmul's; this model runs {dtype}")
    return out


def sweep_rows(points: list[dict]) -> list[dict]:
    """Per swept value: measured and estimated medians of both variants and the traffic saved."""
    rows = []
    for point in points:
        t = (point["result"] or {}).get("traffic")
        if not t or t.get("machine") is None:
            continue
        f, u = t["variants"]["fused"], t["variants"]["unfused"]
        rows.append({"value": point["value"], "fused_ms": f["measured_ms"], "unfused_ms": u["measured_ms"],
                     "est_fused_ms": f["est_ms"], "est_unfused_ms": u["est_ms"],
                     "est_dram_fused_ms": f["est_dram_ms"], "est_dram_unfused_ms": u["est_dram_ms"],
                     "saved_mib": t["saved_bytes"] / MIB, "unfused_mib": u["bytes"] / MIB,
                     "intensity": u["flops"] / max(u["bytes"], 1),
                     "fused_relation": f["relation"]["code"], "unfused_relation": u["relation"]["code"]})
    return rows


def words(t: dict) -> list[str]:
    """The report as the command line prints it (and the page's caption)."""
    f, u = t["variants"]["fused"], t["variants"]["unfused"]
    if t.get("unknown_tensors"):
        return [f"traffic  {not_known(t['unknown_tensors'], t.get('unreadable', False))}; no time estimate"]
    lines = [f"traffic  fused {size_text(f['bytes'])}, {flops_text(f['flops'])} · unfused {size_text(u['bytes'])}, "
             f"{flops_text(u['flops'])} · fusion no longer writes {size_text(t['removed_bytes'])} of intermediates "
             f"({', '.join(r['op'] for r in t['removed']) or 'none'}); {size_text(t['saved_bytes'])} less traffic in all"]
    m = t.get("machine")
    if m is None:
        return lines + [f"  ({n})" for n in t["notes"]]
    lines.append(f"machine  {m['dram_gbs']:.1f} GB/s beyond the caches ({m['curve']}), matmul {m['matmul_gflops']:.1f} "
                 f"GFLOP/s; measured {m['measured_at']} [{m['key']}]")
    for name, v in (("fused", f), ("unfused", u)):
        measured = f"{v['measured_ms']:.4f} ms" if v["measured_ms"] is not None else "?"
        lines.append(f"estimate {name:<8} {v['est_ms']:.4f} ms at its working sets' bandwidth "
                     f"({v['est_dram_ms']:.4f} ms all at DRAM's) vs measured {measured}: {v['relation']['words']}")
    s = t["saving"]
    if s["measured_ms"] is not None:
        dram = (f" ({s['dram_over_measured']:.1f}× the measured gap)" if s.get("dram_over_measured") else "")
        lines.append(f"saving   measured {s['measured_ms']:.4f} ms · estimated {s['est_ms']:.4f} ms · all at DRAM "
                     f"bandwidth {s['est_dram_ms']:.4f} ms{dram}")
    return lines + [f"  ({n})" for n in t["notes"]]
