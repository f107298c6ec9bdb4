"""``python -m explorer diagnose MODEL [--repro FILE] [--json]``: does the fusion break this model, which fused
node does it, what gets around it (each run), and a standalone script to file upstream.

The model options are inspect's (a preset, ``chain --chain ...``, ``--spec``, ``--model``). Exit status 0 when the
fused graph runs and agrees with the unfused one, 1 when the fusion breaks the model (or a run failed), 2 for a
wrong argument. ``--json`` prints ``JSON_KEYS``.
"""

from __future__ import annotations

from . import command
from .model_args import add_model_options, config_from_args, spec_from_args

JSON_KEYS = ("verdict", "xla", "pinned", "nodes", "ways", "repro", "config", "measured_at")
NODE_KEYS = ("node", "op", "fused_ops", "describe", "executed_op", "kernel", "alone", "not_isolated")


def add_parser(sub) -> None:
    p = sub.add_parser("diagnose", help="whether the fusion breaks the model, the fused node responsible, the "
                       "ways around it, and a repro script to file upstream")
    add_model_options(p)
    p.add_argument("--device", default="cpu", metavar="cpu|gpu", help="where to run (default cpu)")
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="an environment flag")
    p.add_argument("--grappler", action="append", default=[], metavar="SWITCH=on|off", help="a Grappler switch")
    p.add_argument("--repro", metavar="FILE", help="write the responsible fused node's standalone script here")
    p.add_argument("--out", metavar="PATH", help="an imported model: where to write the copy rewritten so that "
                   "only the responsible fusion is prevented (a GraphDef as PATH.pb, a SavedModel as a directory)")
    p.add_argument("--no-ways", action="store_true", help="skip verifying the ways around it")
    p.add_argument("--reps", type=int, default=20, help="timed calls of each way around (default 20)")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def run(args, open_engine) -> int:
    from ..present.diagnose_text import diagnose_text

    if not 1 <= args.reps <= 200:
        from ..errors import SpecError

        raise SpecError("--reps", f"{args.reps} is out of range; allowed 1..200")
    spec, config = spec_from_args(args), config_from_args(args)
    engine = open_engine(None)  # a diagnosis is never served from the cache: it must be run
    result = engine.diagnose(spec, config, repro=args.repro, ways=not args.no_ways, reps=args.reps,
                             out=args.out, on_progress=command.progress(args))
    command.show(public(result) if args.json else result, args.json, diagnose_text)
    return 1 if result["verdict"]["fault"] or (result.get("xla") or {}).get("fault") else 0


def public(result: dict) -> dict:
    out = {k: result.get(k) for k in JSON_KEYS}
    out["nodes"] = [{k: n.get(k) for k in NODE_KEYS} for n in result.get("nodes") or ()]
    for node in out["nodes"]:
        if node["alone"]:
            node["alone"] = {k: node["alone"].get(k) for k in ("fault", "rc", "findings", "wall_s")}
    return out
