"""Where a model's time goes: the executed graph's per-node times mapped to the graph after Grappler, its
fusions and its near-misses, ranked.

Input: an inspect result (its stages, its ``fusions_by_pair`` and its report) and the worker's profile
(``worker.op_time``: {executed node: median ms}). The executed graph keeps the names of the graph after
Grappler (oneDNN renames a kernel in place); a fusion the device made on its own (oneDNN's Pad +
Conv2D) carries the time of what it absorbed. A near-miss costs the time of the nodes of its chain; its
share is that time over the time of all the model's ops (``total_ms``: the sum of the per-node medians,
which can exceed the call's wall time where the executor ran two ops at once).
"""

from __future__ import annotations

from ..model.graph import Graph

IDLE_OPS = frozenset({"_Arg", "_Retval", "NoOp", "Const", "_HostConst", "Identity", "_Send", "_Recv",
                      "_HostSend", "_HostRecv"})


def optimized_times(result: dict, profile: dict) -> dict[str, float]:
    """{node of the graph after Grappler: ms}: each executed node's time under its own name, or under the
    name of the node a device fusion made of it."""
    times: dict[str, float] = {}
    for name, entry in (profile.get("nodes") or {}).items():
        if entry["op"] not in IDLE_OPS:
            times[name] = times.get(name, 0.0) + float(entry["ms"])
    return times


def attach(result: dict, profile: dict, top: int = 10) -> dict:
    """The result with its report's near-misses and fusions timed and ranked, and ``report.op_time``: the
    totals, the slowest nodes, and how it was measured."""
    report = result.get("report")
    if not report or not profile or not profile.get("nodes"):
        return result
    times = optimized_times(result, profile)
    whole = float(sum(times.values()))

    def share(ms: float) -> float:
        return ms / whole if whole > 0 else 0.0

    misses = []
    for miss in report.get("near_misses") or []:
        ms = sum(times.get(n, 0.0) for n in miss["nodes"])
        misses.append(dict(miss, time_ms=ms, share=share(ms)))
    fusions = []
    for row in report.get("fusions") or []:
        ms = sum(times.get(n, 0.0) for n in row["nodes"])
        fusions.append(dict(row, time_ms=ms, share=share(ms)))
    optimized = Graph.from_dict(result["stages"]["optimized"]) if "optimized" in (result.get("stages") or {}) else None
    slowest = sorted(times.items(), key=lambda kv: -kv[1])[:top]
    timing = {"total_ms": whole, "call_ms": profile.get("call_ms"), "calls": profile.get("calls"),
              "method": profile.get("method"), "nodes": times,
              "slowest": [{"node": n, "op": optimized[n].op if optimized is not None and n in optimized
                           else (profile["nodes"].get(n) or {}).get("op", "?"), "time_ms": ms, "share": share(ms)}
                          for n, ms in slowest],
              "near_misses_ms": sum(m["time_ms"] for m in misses),
              "fused_ms": sum(f["time_ms"] for f in fusions)}
    return dict(result, report=dict(report, near_misses=misses, fusions=fusions, op_time=timing))


def ranked(misses: list[dict]) -> list[dict]:
    """Near-misses by the time they cost, the slowest first (untimed ones last, in their order)."""
    return sorted(misses, key=lambda m: -(m.get("time_ms") or 0.0))


def colour_scale(times: dict[str, float], top: int = 5) -> tuple[dict[str, str], list[str], float]:
    """({node: fill colour}, the ``top`` slowest nodes, the largest time): white to red by the square root
    of a node's share of the slowest (a few convolutions would otherwise leave everything else white)."""
    if not times:
        return {}, [], 0.0
    largest = max(times.values()) or 1.0
    colours = {name: heat(ms / largest) for name, ms in times.items()}
    slowest = [n for n, _ in sorted(times.items(), key=lambda kv: -kv[1])[:top]]
    return colours, slowest, largest


def heat(fraction: float) -> str:
    """A fill from near-white (no time) to red (the slowest node), light enough for black text on it."""
    f = max(0.0, min(1.0, fraction)) ** 0.5
    low, high = (255, 247, 236), (227, 74, 51)
    r, g, b = (round(a + (c - a) * f) for a, c in zip(low, high))
    return f"#{r:02x}{g:02x}{b:02x}"
