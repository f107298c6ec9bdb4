"""Grappler's own account of a run, read from the log lines TensorFlow prints when asked.

With ``TF_CPP_VMODULE=meta_optimizer=4,remapper=2`` (and ``TF_DUMP_GRAPH_PREFIX``) TensorFlow logs,
for every grappler item (one per instantiated function), every pass of every iteration with the
graph size after it, the remapper's "Fuse ..." lines, and the file each pass's graph was dumped
to. ``parse_log`` turns those lines into plain data; it needs no TensorFlow.
"""

from __future__ import annotations

import re

_LINE = re.compile(r"^([IWEF])\d{4} [\d:.]+\s+\d+ ([\w.+-]+):(\d+)\] ?(.*)$")
_SIZE = re.compile(
    r"^(?P<name>.+?): Graph size after: (?P<nodes>\d+) nodes \((?P<dn>-?\d+)\), "
    r"(?P<edges>\d+) edges \((?P<de>-?\d+)\), time = (?P<ms>[\d.e+-]+)ms\.?$"
)
_ITEM = re.compile(r"Optimize GrapplerItem: item\.id=(?P<id>\S+) num_optimizers=(?P<n>\d+), num nodes = (?P<nodes>\d+)")
_ITER = re.compile(r"Starting optimization iteration (\d+)")
_STUB = re.compile(r"Replace function library with a stub for (.+)$")
_DUMP = re.compile(r"Dumped Graph to (.+)$")

# Log lines worth showing a person on their own (the rest is kept raw).
NOTABLE = re.compile(
    r"Fuse |Ignoring multi-device function optimization failure|does not specify an operation|"
    r"No registered '' OpKernel|has an empty op name|Fusion is not implemented|"
    r"Optimizing fused batch norm node|"
    r"^\w+ failed: "  # a pass that failed (meta_optimizer): TensorFlow drops what that pass did and goes on
)

# TensorFlow logs a remapper that failed ("remapper failed: ...") once in a process: in a worker that logged it
# before, the pass shows it only by its fusions logged and no graph of its own (no size line after them). This line
# stands for it then.
REMAPPER_FAILED = "] remapper failed: "
REMAPPER_DROPPED = "explorer] remapper failed silently"


def split_line(line: str) -> dict | None:
    """A TF C++ log line as {level, file, line, message}, or None for a continuation line."""
    m = _LINE.match(line.rstrip("\n"))
    if not m:
        return None
    return {"level": m.group(1), "file": m.group(2), "line": int(m.group(3)), "message": m.group(4)}


def short_pass_name(name: str) -> str:
    """'tfg_optimizer{any(...)}' -> 'tfg_optimizer'."""
    return name.split("{", 1)[0]


def parse_log(lines: list[str]) -> dict:
    """Items, iterations and passes, the remapper's lines, and the notable lines of a log."""
    items: list[dict] = []
    remapper_log: list[str] = []
    notable: list[str] = []
    item: dict | None = None
    iteration: dict | None = None
    current: dict | None = None
    pending: list[str] = []  # lines seen since the last pass boundary
    for raw in lines:
        parsed = split_line(raw)
        if parsed is None:
            continue
        msg, src = parsed["message"], parsed["file"]
        if NOTABLE.search(msg):
            notable.append(f"{src}:{parsed['line']}] {msg}")
        if src.startswith("remapper"):
            remapper_log.append(msg.strip())
            pending.append(msg.strip())
            if current is not None and current["pass"] == "remapper" and not current["ran"]:
                current["log"] = list(pending)  # kept where no size line follows (the pass failed)
            continue
        m = _ITEM.search(msg)
        if m:
            item = {"item": m.group("id"), "optimizers": int(m.group("n")), "nodes": int(m.group("nodes")),
                    "iterations": []}
            items.append(item)
            iteration = current = None
            pending = []
            continue
        m = _ITER.search(msg)
        if m and item is not None:
            iteration = {"index": int(m.group(1)), "passes": [], "before_dump": None}
            item["iterations"].append(iteration)
            current = None
            continue
        m = _STUB.search(msg)
        if m and iteration is not None:
            current = {"pass": short_pass_name(m.group(1)), "full_name": m.group(1), "ran": False,
                       "nodes": None, "nodes_delta": 0, "edges": None, "edges_delta": 0,
                       "time_ms": None, "changed": False, "dump": None, "log": []}
            iteration["passes"].append(current)
            pending = []
            continue
        m = _SIZE.match(msg)
        if m and iteration is not None:
            name = m.group("name")
            if current is None or current["full_name"] != name:
                # Passes that do not swap the function library log no "stub" line first.
                current = {"pass": short_pass_name(name), "full_name": name, "dump": None, "log": []}
                iteration["passes"].append(current)
            current.update(
                ran=True, nodes=int(m.group("nodes")), nodes_delta=int(m.group("dn")),
                edges=int(m.group("edges")), edges_delta=int(m.group("de")), time_ms=float(m.group("ms")),
                changed=int(m.group("dn")) != 0 or int(m.group("de")) != 0,
            )
            current["log"] = list(pending)
            pending = []
            continue
        m = _DUMP.search(msg)
        if m and iteration is not None:
            path = m.group(1).strip()
            base = path.rsplit("/", 1)[-1]
            if base.startswith("before_MetaOptimizer_iteration_"):
                iteration["before_dump"] = iteration["before_dump"] or path
            elif current is not None and f"_{current['full_name']}_" in base:
                current["dump"] = path
            continue
    for it in items:
        for iteration in it["iterations"]:
            # A pass that printed no size line did not run on this graph (nothing to do).
            for p in iteration["passes"]:
                p.setdefault("ran", False)
                fused = [line for line in p.get("log") or () if line.startswith("Fuse ")]
                # no size line after its Fuse lines: the pass returned an error (a rewrite in place, such as
                # FusedBatchNorm + Relu into _FusedBatchNormEx, can leave the sizes as they were: not a sign)
                if p["pass"] == "remapper" and fused and not p["ran"] and not any(
                        REMAPPER_FAILED in line for line in notable):
                    notable.append(f"{REMAPPER_DROPPED} on {it['item']}: it logged {len(fused)} fusion(s), and no "
                                   "graph after it")
    return {"items": items, "remapper_log": remapper_log, "notable": notable}


def item_runs(parsed: dict, prefix: str) -> list[dict]:
    """The runs of grappler items whose id starts with ``prefix`` (e.g. '__inference_model_')."""
    return [it for it in parsed["items"] if it["item"].startswith(prefix)]


def main_run(parsed: dict, prefix: str = "__inference_model_") -> dict | None:
    """The full Grappler run of the model's function: its first item run with most optimizers."""
    runs = item_runs(parsed, prefix)
    if not runs:
        return None
    return max(runs, key=lambda it: (it["optimizers"], -runs.index(it)))
