"""Grappler's pass pipeline on the model's function, as a table, and the graphs around one pass.

Read from Grappler's own log (``grappler_log.main_run``) and the graphs TensorFlow dumped after each
pass (``result["grappler"]["pass_graphs"]``, keyed by the dump's file name). A pass's "before" is
the graph after the previous pass that left a dump in the same iteration, or the iteration's own
before-dump; its "after" is its own dump.
"""

from __future__ import annotations

import os


def rows(run: dict) -> list[dict]:
    """One row per pass, in order, with what the table and the picker need."""
    out = []
    for iteration in run["iterations"]:
        for i, p in enumerate(iteration["passes"]):
            ran = bool(p.get("ran"))
            nodes_after, edges_after = p.get("nodes"), p.get("edges")
            out.append({
                "key": f"{iteration['index']}:{i}", "iteration": iteration["index"], "position": i + 1,
                "pass": p["pass"], "full_name": p.get("full_name", p["pass"]), "ran": ran,
                "changed": bool(p.get("changed")),
                "nodes_before": None if nodes_after is None else nodes_after - p.get("nodes_delta", 0),
                "nodes": nodes_after, "nodes_delta": p.get("nodes_delta", 0),
                "edges_before": None if edges_after is None else edges_after - p.get("edges_delta", 0),
                "edges": edges_after, "edges_delta": p.get("edges_delta", 0),
                "time_ms": p.get("time_ms"), "log": list(p.get("log") or []), "dump": p.get("dump"),
            })
    return out


def graphs_around(run: dict, key: str, pass_graphs: dict) -> tuple[str | None, str | None]:
    """Dump names (keys of pass_graphs) of the graph before and after the pass ``key``."""
    it_index, _, pos = key.partition(":")
    for iteration in run["iterations"]:
        if str(iteration["index"]) != it_index:
            continue
        passes = iteration["passes"]
        at = int(pos)
        after = base_name(passes[at].get("dump"))
        before = None
        for p in reversed(passes[:at]):
            if base_name(p.get("dump")) in pass_graphs:
                before = base_name(p["dump"])
                break
        if before is None:
            before = base_name(iteration.get("before_dump"))
        return (before if before in pass_graphs else None), (after if after in pass_graphs else None)
    return None, None


def pass_delta(base: str, names: list[str], changed: list[dict]) -> dict:
    """A per-pass graph as the worker sends it: the dump it follows, its node names in order, and the
    nodes that are new or differ from that dump's."""
    return {"delta_of": base, "names": names, "changed": changed}


def expand_pass_graphs(pass_graphs: dict) -> dict:
    """Every per-pass graph whole again (each delta applied to the graph it follows, in dump order);
    unchanged nodes are shared between graphs, which nothing downstream modifies."""
    whole: dict[str, dict] = {}
    for key, graph in pass_graphs.items():
        if "delta_of" not in graph:
            whole[key] = graph
            continue
        before = {n["name"]: n for n in whole[graph["delta_of"]]["nodes"]}
        changed = {n["name"]: n for n in graph["changed"]}
        whole[key] = {"stage": "pass", "nodes": [changed.get(name) or before[name] for name in graph["names"]]}
    return whole


def base_name(path: str | None) -> str | None:
    return os.path.basename(path) if path else None


def default_pass(table: list[dict], pass_graphs: dict) -> str | None:
    """The first remapper pass that changed the graph, else the first pass that changed it, else the first."""
    drawable = [r for r in table if base_name(r["dump"]) in pass_graphs]
    for pick in (lambda r: r["pass"] == "remapper" and r["changed"], lambda r: r["changed"], lambda r: True):
        for r in drawable:
            if pick(r):
                return r["key"]
    return None
