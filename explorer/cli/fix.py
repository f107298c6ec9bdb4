"""``python -m explorer fix --model PATH [--apply NAME,...] [--env ...] [--json]``: an imported model's
near-misses rewritten into the form the remapper fuses, checked against the original and timed against it.

The fixed model is written beside the current directory as ``<model>-fixed`` (``.pb`` for a GraphDef, a
directory for a SavedModel), or at ``--out``. ``--json`` prints the keys scripts read (``JSON_KEYS``).
"""

from __future__ import annotations

import os

from ..analysis.fix_plan import FIXES
from ..errors import SpecError, shown
from ..model.sources import sources
from ..present import fix_text
from . import command
from .model_args import config_from_args

JSON_KEYS = ("applied", "fusions_before", "fusions_after", "max_abs_diff", "max_rel_diff", "tolerance", "speedup",
             "per_fix", "near_misses_ranked", "bytes_saved", "model_out")
APPLIED_KEYS = ("fix", "chains", "nodes", "advice", "left")
PER_FIX_KEYS = ("fix", "fusions_after", "max_abs_diff", "max_rel_diff", "speedup", "bytes_saved")
RANKED_KEYS = ("kind", "chain", "nodes", "time_ms", "share", "fixed_by")
SPEEDUP_KEYS = ("estimate", "ci_low", "ci_high", "processes")


def add_parser(sub) -> None:
    p = sub.add_parser("fix", help="rewrite an imported model's near-misses into fusable form, check it, time it")
    imported = sources()["import"]
    for option in imported.cli_options:
        if option.flags[0] != "--fix-dims":
            p.add_argument(*option.flags, **dict(option.kwargs, **({"required": True} if option.flags[0] == "--model"
                                                                    else {})))
    p.add_argument("--apply", metavar="NAME,...", help=f"the fixes to try, comma-separated (default: every one that "
                   f"applies): {', '.join(FIXES)}")
    p.add_argument("--out", metavar="PATH", help="where to write the fixed model (default: <model>-fixed here; "
                   ".pb for a GraphDef, a directory for a SavedModel)")
    p.add_argument("--device", default="cpu", metavar="cpu|gpu", help="where to run (default cpu)")
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="an environment flag")
    p.add_argument("--grappler", action="append", default=[], metavar="SWITCH=on|off", help="a Grappler switch")
    p.add_argument("--processes", type=int, default=3, metavar="N",
                   help="fresh worker processes that time the fixed model against the original (default 3; 1 is "
                        "a quick run in the warm worker)")
    p.add_argument("--reps", type=int, default=30, help="timed repetitions of each model per process (default 30)")
    p.add_argument("--warmup", type=int, default=3, help="untimed calls of each model first (default 3)")
    p.add_argument("--max-seconds", type=float, default=30.0, help="time budget of each process's timed loop")
    p.add_argument("--no-measure", action="store_true", help="check the fixed model's outputs, but time nothing")
    p.add_argument("--no-cache", action="store_true", help="run even if this model and configuration ran before")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def default_out(model: str) -> str:
    """<model>-fixed in the current directory, numbered when that is taken (a .pb or a directory)."""
    stem = os.path.basename(os.path.normpath(model))
    for suffix in (".pbtxt", ".pb", ".zip", ".keras"):
        stem = stem.removesuffix(suffix)
    candidate, i = f"{stem}-fixed", 2
    while os.path.exists(candidate) or os.path.exists(candidate + ".pb"):
        candidate, i = f"{stem}-fixed-{i}", i + 1
    return candidate


def checked_out(out: str) -> str:
    """``--out`` checked before any work starts: its folder exists and can be written (a missing folder used to
    end a whole run of fixes and timings in a traceback)."""
    folder = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(folder):
        raise SpecError("--out", f"{shown(out, 300)}: there is no folder {shown(folder, 300)}")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise SpecError("--out", f"{shown(out, 300)}: the folder {shown(folder, 300)} cannot be written")
    return out


def run(args, open_engine) -> int:
    from ..engine.cache import DEFAULT_CACHE_DIR
    from ..engine.engine import Engine
    from ..engine.uploads import spec_for_path

    if args.device not in ("cpu", "gpu"):
        raise SpecError("--device", f"{args.device!r}: fixes run on the model as it runs here, cpu or gpu")
    apply = [name.strip() for name in args.apply.split(",") if name.strip()] if args.apply else None
    unknown = [name for name in apply or () if name not in FIXES]
    if unknown or apply == []:
        raise SpecError("--apply", f"no fix {unknown[0] if unknown else args.apply!r}; the fixes are "
                                   f"{', '.join(FIXES)}")
    processes = Engine.check_bench_options(args.reps, args.warmup, args.max_seconds, args.processes)
    config = config_from_args(args)
    spec = spec_for_path(args.model, signature=args.signature, unknown_dim=args.dim, outputs=args.output)
    out = checked_out(args.out or default_out(args.model))
    engine = open_engine(None if args.no_cache else DEFAULT_CACHE_DIR)
    result = engine.fix(spec, config, apply=apply, out=out, processes=processes,
                        reps=args.reps, warmup=args.warmup, max_seconds=args.max_seconds,
                        measure=not args.no_measure, on_progress=command.progress(args))
    command.show(public(result) if args.json else result, args.json, fix_text.fix_text)
    return 0


def public(result: dict) -> dict:
    """The result as ``fix --json`` prints it: the keys scripts rely on, nothing of the engine's own."""
    def pick(entry, keys):
        return {k: entry.get(k) for k in keys}

    def speedup(sp):
        return pick(sp, SPEEDUP_KEYS) if sp else None

    out = pick(result, JSON_KEYS)
    out["applied"] = [pick(a, APPLIED_KEYS) for a in result["applied"]]
    out["per_fix"] = [dict(pick(p, PER_FIX_KEYS), speedup=speedup(p.get("speedup"))) for p in result["per_fix"]]
    out["speedup"] = speedup(result.get("speedup"))
    out["near_misses_ranked"] = [pick(m, RANKED_KEYS) for m in result["near_misses_ranked"]]
    return out
