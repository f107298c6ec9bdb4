"""The what-if matrix: presets × every combination of varied flags, Grappler switches and parameters.

A cell is one (preset, settings) pair; it says whether the model fused (the explanation's verdict,
read from the graph after Grappler) and with what op, and, when asked, the measured speedup. The
cells are grouped by worker process (device + environment flags): one warm worker runs all of a
configuration's cells, so TensorFlow is imported once per configuration, never per cell. Cells run
through the engine's queue and cache (locally) or in Ray tasks (``ray_backend``). Every planned
cell comes back: a result, or a status with the reason it has none.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import cast

from ..analysis import gpu_measured, gpu_roofline
from ..analysis.annotate import annotate_bench, annotate_replicated
from ..analysis.replicated import QUICK_MODE, quick
from ..errors import ExplorerError, SpecError
from ..model.catalog import PRESETS
from ..model.devices import NOTHING_TO_TIME, is_simulated
from ..model.flags import ENV_FLAGS, GRAPPLER_SWITCHES, UNSET_SPELLINGS, Config, parse_assignment
from ..model.gpu_measured import HOW_SHORT
from ..model.results import BenchResult, Fingerprint, MatrixRow
from ..model.spec import PARAMS, resolve
from .interface import EngineInterface, Progress

MAX_CELLS = 256
NOT_RUNNABLE = ("invalid", "n/a")  # statuses the plan gives; every other cell runs (again, when run again)


@dataclass(frozen=True)
class Axis:
    name: str
    kind: str  # "env", "grappler", "param" or "device"
    values: tuple[str, ...]


def parse_vary(text: str) -> Axis:
    """'NAME=V1,V2' -> an Axis; NAME is an env flag, a Grappler switch, a model parameter or 'device'."""
    name, raw = parse_assignment(text, "--vary")
    values = tuple(dict.fromkeys(v.strip() for v in raw.split(",") if v.strip()))
    if not values:
        raise SpecError("--vary", f"no values for {name}; give NAME=V1,V2")
    if name in ENV_FLAGS:
        kind = "env"
    elif name in GRAPPLER_SWITCHES:
        kind = "grappler"
    elif name in PARAMS:
        kind = "param"
    elif name == "device":
        kind = "device"
    else:
        raise SpecError("--vary", f"{name!r} is neither an env flag ({', '.join(ENV_FLAGS)}), a Grappler switch "
                        f"({', '.join(GRAPPLER_SWITCHES)}), a model parameter ({', '.join(PARAMS)}) nor 'device'")
    for value in values:  # each value checked on its own, before anything runs
        if kind == "env" and value not in UNSET_SPELLINGS:
            Config.make("cpu", {name: value})
        elif kind == "grappler" and value not in UNSET_SPELLINGS:
            Config.make("cpu", None, {name: value})
        elif kind == "param":
            PARAMS[name].check(value)
        elif kind == "device":
            Config.make(value)
    return Axis(name, kind, values)


@dataclass
class Cell:
    preset: str  # the preset's id; "" for a row of another model (``plan``'s ``models``)
    settings: tuple[tuple[str, str], ...]  # the varied names and this cell's values, in axis order
    spec: dict
    config: Config | None  # None: the cell cannot run (status says why)
    status: str = "planned"
    reason: str = ""
    row: MatrixRow = field(default_factory=lambda: MatrixRow())
    model: str = ""  # the row's name for people: the preset's title, or the model's own label

    @property
    def label(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.settings) or "as given"

    @property
    def runs_on(self) -> Config:
        """The configuration of a cell that runs: every cell ``groups`` gives out has one (a cell whose
        configuration was refused is 'invalid', never run)."""
        assert self.config is not None, f"cell {self.label} has no configuration ({self.status}: {self.reason})"
        return self.config


def plan(presets: list[str], axes: list[Axis], *, device: str = "cpu", env: dict | None = None,
         grappler: dict | None = None, params: dict | None = None, models: dict[str, dict] | None = None) -> list[Cell]:
    """Every cell, checked: a bad name stops the whole matrix; a combination one model cannot take
    (a parameter it does not have, a dtype its ops refuse) is a cell with status 'invalid' and why.
    ``models`` adds rows of any model source: {row name: its JSON spec} (the page's current model)."""
    models = dict(models or {})
    if not presets and not models:
        raise SpecError("--presets", "give at least one preset id, or your own model with --model PATH")
    for preset in presets:
        if preset not in PRESETS:
            raise SpecError("--presets", f"unknown preset {preset!r}; `python -m explorer presets` lists them")
    names = [a.name for a in axes]
    if len(set(names)) != len(names):
        raise SpecError("--vary", "the same NAME is varied twice")
    total = (len(presets) + len(models)) * _product(len(a.values) for a in axes)
    if total > MAX_CELLS:
        raise SpecError("--vary", f"{total} cells; at most {MAX_CELLS}")
    params = dict(params or {})
    unused = [p for p in params if not any(p in PRESETS[x].chain.param_names() for x in presets)]
    if unused and presets:
        raise SpecError("--set", f"{', '.join(unused)} applies to none of the presets")
    rows: list[tuple[str, str, dict]] = [(preset, PRESETS[preset].title, {"preset": preset, "params": {}})
                                         for preset in presets]
    rows += [("", name, spec) for name, spec in models.items()]
    cells: list[Cell] = []
    for preset, title, base_spec in rows:
        takes = _takes(base_spec)
        for combo in itertools.product(*(a.values for a in axes)):
            settings = tuple(zip(names, combo))
            cell_env, cell_sw = dict(env or {}), dict(grappler or {})
            cell_params = {k: v for k, v in params.items() if k in takes} if preset else {}
            cell_device = device
            skip = ""
            for axis, value in zip(axes, combo):
                if axis.kind == "env":
                    cell_env[axis.name] = "" if value in UNSET_SPELLINGS else value
                elif axis.kind == "grappler":
                    cell_sw[axis.name] = "" if value in UNSET_SPELLINGS else value
                elif axis.kind == "device":
                    cell_device = value
                elif axis.name in takes:
                    cell_params[axis.name] = PARAMS[axis.name].check(value)
                else:
                    skip = f"{axis.name} does not apply to {preset or title}"
            spec = dict(base_spec, params=dict(base_spec.get("params") or {}, **cell_params)) \
                if "params" in base_spec or cell_params else base_spec
            cell = Cell(preset, settings, spec, None, model=title)
            try:
                cell.config = Config.make(cell_device, cell_env, cell_sw)
                resolve(spec)
            except SpecError as exc:
                cell.status, cell.reason = "invalid", str(exc)
            if skip:
                cell.status, cell.reason = "n/a", skip
            cells.append(cell)
    return cells


def _takes(spec: dict) -> list[str]:
    """The size and type parameters a model's spec takes (a preset's or chain's; none for a stack or a file)."""
    if "params" not in spec:
        return []
    return list(resolve(spec).p)


def _product(sizes: Iterable[int]) -> int:
    out = 1
    for s in sizes:
        out *= s
    return out


def groups(cells: list[Cell]) -> list[list[Cell]]:
    """Runnable cells by worker process (device + env flags), in first-appearance order."""
    by_key: dict[tuple, list[Cell]] = {}
    for cell in cells:
        if cell.status not in NOT_RUNNABLE:
            by_key.setdefault(cell.runs_on.process_key(), []).append(cell)
    return list(by_key.values())


@dataclass(frozen=True)
class BenchOptions:
    reps: int = 30
    warmup: int = 3
    max_seconds: float = 30.0
    processes: int = 1

    def extra(self) -> dict:
        return {"reps": self.reps, "warmup": self.warmup, "max_seconds": self.max_seconds, "processes": self.processes}


def fill(cell: Cell, inspect_result: Mapping | None, bench_result: Mapping | None = None, *,
         node: dict | None = None, bench_error: str = "") -> None:
    """The cell's row from its results: verdict, fused op, speedup, what ran it."""
    explanation = (inspect_result or {}).get("explanation") or {}
    observed = explanation.get("observed") or [
        {"op": f["fused_op"] if "fused_op" in f else f.get("op", "?"), "fused_ops": f.get("fused_ops", [])}
        for f in (inspect_result or {}).get("fusions", [])]
    # A network repeats its patterns: each fused op once, with its count.
    counts = Counter(f"{o['op']}[{'+'.join(o['fused_ops'])}]" if o.get("fused_ops") else o["op"] for o in observed)
    fused_op = "; ".join(op if n == 1 else f"{op} ×{n}" for op, n in counts.items())
    verdict = explanation.get("verdict")
    if verdict is None and inspect_result is not None:  # a whole model (no one pattern's checklist): its fusions
        verdict = "fused" if observed else "not fused"
    fp: Fingerprint = (inspect_result or bench_result or {}).get("fingerprint") or Fingerprint()
    row: MatrixRow = {
        "preset": cell.preset, "model": cell.model or cell.preset, "settings": dict(cell.settings),
        "label": cell.label,
        "device": cell.config.device if cell.config else None,
        "env": cell.config.env_dict if cell.config else {}, "grappler": cell.config.grappler_dict if cell.config else {},
        "params": dict(cell.spec.get("params") or {}), "status": cell.status, "reason": cell.reason,
        "verdict": verdict, "pattern": explanation.get("pattern"), "fused_op": fused_op,
        "why": explanation.get("why"), "because": (explanation.get("reasons") or [""])[0], "simulated": bool((inspect_result or {}).get("simulated")),
        "cached": bool((inspect_result or {}).get("cached")), "key": (inspect_result or {}).get("key"),
        "fingerprint": fp, "node": node or {}, "pid": ((inspect_result or {}).get("worker") or {}).get("pid"),
        # the fused graph against the unfused one (analysis.agreement's statuses), and in one sentence
        "agreement": ((inspect_result or {}).get("agreement") or {}).get("status"),
        "agreement_summary": ((inspect_result or {}).get("agreement") or {}).get("summary"),
    }
    row.update(prediction_fields(inspect_result))
    nothing = nothing_to_compare(row, bench_result)
    if bench_result is not None and nothing:
        # A cell that did not fuse shows no fusion speedup: its two timings compare one graph with itself, or
        # (remapper off) this configuration with another one.
        row.update({"speedup": None, "bench_error": nothing, "bench_cached": bool(bench_result.get("cached"))})
    elif bench_result is not None:
        sp = bench_result["summary"]["speedup"]
        row.update({"speedup": sp["estimate"], "ci_low": sp.get("ci_low"), "ci_high": sp.get("ci_high"),
                    "speedup_verdict": sp.get("verdict"), "processes": bench_result.get("processes", 1),
                    "pairs": sp.get("n_pairs_total", sp.get("n_pairs")), "between_share": sp.get("between_share"),
                    "bench_cached": bool(bench_result.get("cached"))})
    elif bench_error:
        row.update({"speedup": None, "bench_error": bench_error})
    cell.row = row


def prediction_fields(inspect_result: Mapping | None) -> MatrixRow:
    """A simulated GPU cell's predicted time (analysis.gpu_roofline): nothing ran, so it is never a measurement."""
    if inspect_result is None or not inspect_result.get("simulated"):
        return {}
    p = gpu_roofline.predict(inspect_result)
    if p is None:
        return {}
    measured = gpu_measured.find(inspect_result)
    return {"predicted_speedup": p["speedup"], "predicted_fused_us": p["fused_us"],
            "predicted_unfused_us": p["unfused_us"], "prediction": f"{p['label']}, on {p['profile']['label']}",
            "measured_gpu_speedup": measured["speedup"] if measured else None,
            "measured_gpu": f"{measured['gpu']}, {measured['dates'][0][:10]} (device time; {HOW_SHORT})"
                            if measured else None}


def nothing_to_compare(row: MatrixRow, bench_result: Mapping | None) -> str:
    """Why a cell has no fusion speedup to show, or "" when it has one."""
    if bench_result is not None and bench_result.get("nothing_to_compare"):
        return bench_result["nothing_to_compare"]
    if row.get("verdict") == "not fused":
        return "nothing to compare: not fused here, so fused and unfused are the same graph"
    return ""


def rows(cells: list[Cell]) -> list[MatrixRow]:
    """Every cell's row, ran or not (a cell never drops out of the matrix)."""
    for cell in cells:
        if not cell.row or cell.row.get("status") != cell.status:
            if cell.row:
                cell.row.update({"status": cell.status, "reason": cell.reason})
            else:
                fill(cell, None)
    return [c.row for c in cells]


def run_local(engine: EngineInterface, cells: list[Cell], *, bench: BenchOptions | None = None, use_cache: bool = True,
              on_progress: Progress | None = None, stop: threading.Event | None = None) -> list[MatrixRow]:
    """Every runnable cell through the engine (its queue, warm workers and cache), a configuration at a time."""
    todo = groups(cells)
    for cell in (c for g in todo for c in g):
        cell.status, cell.reason, cell.row = "planned", "", MatrixRow()
    total = sum(len(g) for g in todo) or 1
    done = 0
    for group in todo:
        for cell in group:
            if stop is not None and stop.is_set():
                cell.status, cell.reason = "stopped", "the matrix was stopped before this cell ran"
                continue
            if on_progress:
                on_progress({"fraction": done / total, "message": f"{cell.model or cell.preset} · {cell.label}"})
            try:
                result = engine.inspect(cell.spec, cell.runs_on, use_cache=use_cache)
            except ExplorerError as exc:
                cell.status, cell.reason = "failed", str(exc)
                done += 1
                continue
            cell.status = "ok"
            bench_result: Mapping | None = None
            bench_error = ""
            if bench is not None:
                bench_result, bench_error = _bench_local(engine, cell, bench, use_cache)
            fill(cell, result, bench_result, bench_error=bench_error)
            done += 1
    if on_progress:
        on_progress({"fraction": 1.0, "message": f"{done} cells"})
    return rows(cells)


def _bench_local(engine: EngineInterface, cell: Cell, options: BenchOptions,
                 use_cache: bool) -> tuple[Mapping | None, str]:
    config = cell.runs_on
    if is_simulated(config.device):
        return None, NOTHING_TO_TIME
    cached = engine.stored("bench", cell.spec, config, options.extra()) if use_cache else None
    if cached is not None:
        return dict(cached, cached=True), ""
    try:
        result = engine.bench(cell.spec, config, reps=options.reps, warmup=options.warmup,
                              max_seconds=options.max_seconds, processes=options.processes)
    except ExplorerError as exc:
        return None, str(exc)
    engine.store("bench", cell.spec, config, result, options.extra())
    return result, ""


def store_bench(engine: EngineInterface, cell: Cell, options: BenchOptions, raw_runs: list[dict]) -> BenchResult:
    """A bench run elsewhere (a Ray task) annotated as the engine would, and cached like a local one."""
    config = cell.runs_on
    if len(raw_runs) > 1:
        result = annotate_replicated(raw_runs)
    else:  # the task's answer: JSON of a BenchResult's worker part (worker.bench)
        result = annotate_bench({**cast(BenchResult, raw_runs[0]), "config": config.to_dict()})
        result["summary"]["speedup"] = quick(result["summary"]["speedup"])
        result.update({"mode": QUICK_MODE, "processes": 1})
    result = {**result, "config": config.to_dict(), "measured_at": time.strftime("%Y-%m-%d %H:%M:%S")}
    engine.store("bench", cell.spec, config, result, options.extra())
    return result


def summary(cells: list[Cell]) -> dict:
    counts: dict[str, int] = {}
    for cell in cells:
        counts[cell.status] = counts.get(cell.status, 0) + 1
    verdicts: dict[str, int] = {}
    for cell in cells:
        verdict = cell.row.get("verdict")
        if verdict:
            verdicts[verdict] = verdicts.get(verdict, 0) + 1
    return {"cells": len(cells), "status": counts, "verdicts": verdicts,
            "configurations": len({c.config.process_key() for c in cells if c.config is not None})}
