"""XLA's pass pipeline as a table, from what one compile logged and dumped (no TensorFlow).

Two sources, because neither alone is complete (measured on TF 2.21):

* ``TF_CPP_VMODULE=hlo_pass_pipeline=2`` logs every pass XLA ran: "Running HLO pass pipeline on
  module M: P", then per pass "HLO pass X", the module's hash and instruction count *before* it,
  and "HLO pass: X time: ... (N us)". The state after a pass is the next state logged. The hash
  ignores layouts, so layout-assignment looks unchanged by it.
* ``--xla_dump_hlo_pass_re=.*`` writes the module only at each pipeline start and after a pass
  that changed it: ``module_0001.<module>.0005.<pipeline>.after_<pass>.before_<next>.txt``.

So a pass changed the module if its hash changed or a dump was written after it.
"""

from __future__ import annotations

import difflib
import re

_DUMP = re.compile(r"^module_(?P<mid>\d+)\.(?P<module>.+?)\.(?P<seq>\d{4})\.(?P<pipeline>[^.]+)\.(?P<rest>.+)\.txt$")
_RUN = re.compile(r"Running HLO pass pipeline on module (\S+): (.+)$")
_PASS = re.compile(r"\]\s+HLO pass (.+)$")
_HASH = re.compile(r"\]\s+Module hash (\S+)$")
_COUNT = re.compile(r"\]\s+Number of instructions: (\d+)$")
_DONE = re.compile(r"\]\s+HLO pass: (.+?) time: .*?\((\d+) us\)")


def parse_dump_name(name: str) -> dict | None:
    m = _DUMP.match(name)
    if not m:
        return None
    rest, after, before = m.group("rest"), None, None
    mm = re.match(r"after_(.+?)\.before_(.+)$", rest)
    if mm:
        after, before = mm.group(1), mm.group(2)
    elif rest.startswith("after_"):  # copy-insertion.after_adding_copies_to_resolve_interference
        after = rest[len("after_"):]
    return {"file": name, "module": m.group("module"), "seq": int(m.group("seq")),
            "pipeline": m.group("pipeline").replace("_", " "), "after": after, "before": before}


def count_instructions(text: str) -> int:
    """Instructions of an HLO text module, fused computations included."""
    return sum(1 for line in text.splitlines()
               if line.strip().startswith(("%", "ROOT ")) and " = " in line)


def vlog_rows(lines: list[str], module: str) -> list[dict]:
    """Every pass XLA ran on ``module``, in order, from the hlo_pass_pipeline=2 log lines of one compile."""
    rows: list[dict] = []
    pipelines: list[str] = []
    open_rows: list[dict] = []
    pending: list[dict] = []
    current = None
    last = None
    for line in lines:
        if "hlo_pass_pipeline" not in line:
            continue
        m = _RUN.search(line)
        if m:
            current = m.group(1) == module
            if not current:
                continue
            pipe = m.group(2)
            if pipelines and pipelines[-1] == pipe:  # HloPassFix running its pipeline again
                pass
            elif open_rows and open_rows[-1]["pass"] == pipe:  # a nested pipeline run as a pass
                open_rows[-1]["is_pipeline"] = True
                pipelines.append(pipe)
            else:
                pipelines[:] = [pipe]
                open_rows.clear()
            continue
        if not current:
            continue
        if (m := _PASS.search(line)):
            last = {"pass": m.group(1), "pipeline": pipelines[-1] if pipelines else None, "depth": len(pipelines),
                    "is_pipeline": False, "hash_before": None, "hash_after": None, "instructions_before": None,
                    "instructions_after": None, "changed": None, "time_us": None}
            rows.append(last)
            open_rows.append(last)
        elif (m := _HASH.search(line)):
            for r in pending:
                r["hash_after"] = m.group(1)
            if last is not None and last["hash_before"] is None:
                last["hash_before"] = m.group(1)
        elif (m := _COUNT.search(line)):
            for r in pending:
                r["instructions_after"] = int(m.group(1))
            pending = []
            if last is not None and last["instructions_before"] is None:
                last["instructions_before"] = int(m.group(1))
        elif (m := _DONE.search(line)):
            name = m.group(1)
            for i in range(len(open_rows) - 1, -1, -1):
                if open_rows[i]["pass"] == name:
                    row = open_rows.pop(i)
                    row["time_us"] = int(m.group(2))
                    pending.append(row)
                    break
            if pipelines and pipelines[-1] == name:
                pipelines.pop()
    for r in rows:
        if r["hash_before"] is not None and r["hash_after"] is not None:
            r["changed"] = r["hash_before"] != r["hash_after"]
    return rows


def pass_table(rows: list[dict], dumps: list[dict]) -> list[dict]:
    """The log's rows, each marked with the dump written after it (if any); a dump means it changed.

    Dumps come in order, so each is matched to the first unmarked row of its pass (followed by the
    pass its name says ran next at that level) that had not finished before the last match. A
    pipeline's row comes before its own passes' rows and finishes after them.
    """
    table = [dict(r, dump=None) for r in rows]
    ends = []  # index of the last row inside each row (itself for a plain pass)
    for i, r in enumerate(table):
        j = i
        while j + 1 < len(table) and table[j + 1]["depth"] > r["depth"]:
            j += 1
        ends.append(j)
    last = 0
    for d in sorted(dumps, key=lambda d: d["seq"]):
        after, before = d.get("after"), d.get("before")
        if not after or after == "pipeline-start":
            continue
        for i, row in enumerate(table):
            if row["dump"] or ends[i] < last or row["pass"] != after:
                continue
            following = table[ends[i] + 1]["pass"] if ends[i] + 1 < len(table) else "pipeline-end"
            if before in (None, following, "pipeline-end"):
                row["dump"] = d["file"]
                if not row["is_pipeline"]:
                    row["changed"] = True
                last = ends[i]
                break
    return table


def module_before(dumps: list[dict], file: str) -> dict | None:
    """The dump just before ``file`` (the module as the pass found it)."""
    ordered = sorted(dumps, key=lambda d: d["seq"])
    names = [d["file"] for d in ordered]
    i = names.index(file) if file in names else -1
    return ordered[i - 1] if i > 0 else None


def diff(before: str, after: str, names: tuple[str, str] = ("before", "after")) -> str:
    """A unified diff of two module texts, without the 'HloModule' header line (it names the dump)."""
    a = [ln for ln in before.splitlines() if not ln.startswith("HloModule ")]
    b = [ln for ln in after.splitlines() if not ln.startswith("HloModule ")]
    return "\n".join(difflib.unified_diff(a, b, names[0], names[1], lineterm="", n=2))


def summary(table: list[dict]) -> dict:
    passes = [r for r in table if not r["is_pipeline"]]
    return {"passes": len(passes), "changed": sum(1 for r in passes if r["changed"]),
            "pipelines": list(dict.fromkeys(r["pipeline"] for r in table if r["depth"] == 1))}
