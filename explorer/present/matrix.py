"""The what-if matrix's rows as a table for people, CSV and JSON for scripts (plain data in, text out)."""

from __future__ import annotations

import csv
import io
import json

from .agreement import cell_words as agreement_cell
from .machine import describe

COLUMNS = ("preset", "label", "status", "verdict", "fused_op", "because", "speedup", "ci_low", "ci_high", "processes",
           "pairs", "between_share", "device", "env", "grappler", "params", "cached", "reason", "machine", "node",
           "retried", "model", "predicted_speedup",
           "agreement", "measured_gpu_speedup")  # new columns go last: scripts read these by position too


def cell_words(row: dict) -> str:
    """'fused _FusedMatMul[BiasAdd+Relu]', 'not fused', 'failed: <reason>' ..."""
    if row.get("status") != "ok":
        return f"{row.get('status')}: {row.get('reason')}"
    words = row.get("verdict") or "?"
    if row.get("fused_op") and words != "not fused":
        words += f" {row['fused_op']}"
    if words.split()[0] in ("not", "partly") and row.get("because"):
        words += f" ({row['because']})"  # the first failing condition, as the explanation words it
    broke = agreement_cell(row.get("agreement"))
    return f"{broke}: {words} ({row.get('agreement_summary')})" if broke else words


def retry_words(row: dict) -> str:
    """What was run again to get this cell: the explorer's worker restarted, or Ray's task retried."""
    parts = []
    if row.get("retried_because"):
        parts.append(f"worker restarted once ({row['retried_because'][0]})")
    lost = row.get("ray_retries")
    if lost:
        parts.append(f"retried by Ray: {lost} attempt{'s' if lost > 1 else ''} lost")
    elif lost is None and "ray_retries" in row:
        parts.append("retried by Ray: unknown (this Ray does not report a task's attempt)")
    return "; ".join(parts)


def speedup_words(row: dict) -> str:
    if row.get("speedup") is None and row.get("predicted_speedup") is not None:  # a simulated GPU: nothing ran
        measured = (f"; measured {row['measured_gpu_speedup']:.2f}× on a real GPU ({row['measured_gpu']})"
                    if row.get("measured_gpu_speedup") else "")
        return f"predicted {row['predicted_speedup']:.2f}× (a roofline on the data sheet, not measured){measured}"
    if row.get("speedup") is None:
        if (row.get("bench_error") or "").startswith("nothing to compare"):
            return "none: nothing fused to compare"  # the cell's result says why in full
        return f"no timing: {row['bench_error']}" if row.get("bench_error") else ""
    ci = "" if row.get("ci_low") is None else f" ({row['ci_low']:.2f}–{row['ci_high']:.2f})"
    procs = f", {row['processes']} processes" if (row.get("processes") or 1) > 1 else ""
    return f"{row['speedup']:.2f}×{ci}{procs}"


def _flat(row: dict) -> dict:
    out = {}
    for column in COLUMNS:
        if column == "machine":
            out[column] = describe(row["fingerprint"]) if row.get("fingerprint") else ""
        elif column == "node":
            node = row.get("node") or {}
            out[column] = node.get("hostname", "") + (f" ({node['node_id'][:12]})" if node.get("node_id") else "")
        elif column == "retried":
            out[column] = retry_words(row)
        elif column in ("env", "grappler", "params"):
            out[column] = " ".join(f"{k}={v}" for k, v in (row.get(column) or {}).items())
        else:
            value = row.get(column)
            out[column] = "" if value is None else value
    return out


def to_csv(rows: list[dict]) -> str:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow(_flat(row))
    return buffer.getvalue()


def to_json(matrix: dict) -> str:
    return json.dumps(matrix, indent=1)


def table(rows: list[dict]) -> str:
    """One line per cell, presets grouped, columns aligned: what a person reads in a terminal."""
    lines = []
    width = max((len(r["label"]) for r in rows), default=0)
    for preset in dict.fromkeys(r.get("preset") or r.get("model") for r in rows):
        lines.append(preset)
        for row in (r for r in rows if (r.get("preset") or r.get("model")) == preset):
            timing, retried = speedup_words(row), retry_words(row)
            lines.append(f"  {row['label']:<{width}}  {cell_words(row)}" + (f"  |  {timing}" if timing else "")
                         + (f"  |  {retried}" if retried else ""))
    return "\n".join(lines)


def machines(rows: list[dict]) -> list[str]:
    """Each distinct machine (and Ray node) that ran a cell, in words."""
    seen = {}
    for row in rows:
        if row.get("fingerprint"):
            node = (row.get("node") or {}).get("hostname")
            seen.setdefault((describe(row["fingerprint"]), node), None)
    return [words + (f" on node {node}" if node else "") for words, node in seen]
