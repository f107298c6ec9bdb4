"""``python -m explorer compare MODEL [--env/--grappler/--set/--device for A] --b NAME=VALUE [...]``: A against B.

A is the model and configuration the usual options give (any model source); B is A with what ``--b`` changes (an
env flag, a Grappler switch, a model parameter or ``device``, as the matrix's ``--vary`` names them, one value
each). Both are timed as served, each round a fresh worker process per side (``Engine.compare``); the answer is
how many times faster B is than A, with its interval over rounds.
"""

from __future__ import annotations

from ..engine import matrix
from ..errors import SpecError
from ..model.spec import resolve
from ..present import compare_text
from . import command
from .model_args import add_model_options, config_from_args, spec_from_args


def add_parser(sub) -> None:
    p = sub.add_parser("compare", help="A against B: the model as served under one setting against another")
    add_model_options(p)
    p.add_argument("--device", default="cpu", metavar="cpu|gpu", help="A's device (default cpu)")
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="an environment flag of A")
    p.add_argument("--grappler", action="append", default=[], metavar="SWITCH=on|off", help="a Grappler switch of A")
    p.add_argument("--b", action="append", default=[], metavar="NAME=VALUE", required=True,
                   help="what B changes: an env flag, a Grappler switch, a model parameter or 'device' (repeatable; "
                        "'unset' leaves a flag at TensorFlow's default)")
    p.add_argument("--processes", type=int, default=3, metavar="N",
                   help="rounds, each a fresh worker process for A and one for B (default 3; 1 is a quick figure)")
    p.add_argument("--reps", type=int, default=30, help="timed calls of each side per round (default 30)")
    p.add_argument("--warmup", type=int, default=3, help="untimed calls first (default 3)")
    p.add_argument("--max-seconds", type=float, default=30.0, help="time budget of each side's timed loop")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def b_of(a_spec: dict, a_config, changes: list[str]) -> tuple[dict, object]:
    """B: A's spec and configuration with each NAME=VALUE of ``changes`` set (checked like the matrix's cells)."""
    try:
        axes = [matrix.parse_vary(change) for change in changes]
    except SpecError as exc:
        raise SpecError("--b", exc.message) from None
    for axis in axes:
        if len(axis.values) != 1:
            raise SpecError("--b", f"{axis.name}: B takes one value (give A's with --env, --grappler or --set)")
    cells = matrix.plan([], axes, device=a_config.device, env=dict(a_config.env), grappler=dict(a_config.grappler),
                        models={"A": a_spec})
    cell = cells[0]
    if cell.status != "planned":
        raise SpecError("--b", cell.reason)
    return cell.spec, cell.config


def run(args, open_engine) -> int:
    from ..engine.cache import DEFAULT_CACHE_DIR

    a_spec, a_config = spec_from_args(args), config_from_args(args)
    resolve(a_spec)
    b_spec, b_config = b_of(a_spec, a_config, args.b)
    engine = open_engine(DEFAULT_CACHE_DIR)
    result = engine.compare(a_spec, a_config, b_spec, b_config, processes=args.processes, reps=args.reps,
                            warmup=args.warmup, max_seconds=args.max_seconds)
    command.show(result, args.json, compare_text.words)
    return 0
