"""The command line's parser: commands, their options, and one-line errors (exit status 2).

inspect's and bench's model options come from the model sources (``model.sources``: each adds its own);
the names and options here are relied on by scripts: keep them stable.
"""

from __future__ import annotations

import argparse

from ..model import compilers
from ..model.experiment_parts import Bench
from ..model.limits import PASS_GRAPHS_AUTO_NODES
from ..model.sources import sources
from . import compare, diagnose, fix, lessons
from .model_args import add_model_options


class Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, non-zero: scripts read the message, people too
        self.exit(2, f"explorer: error: {message}\n")


def make_parser() -> argparse.ArgumentParser:
    parser = Parser(prog="python -m explorer", description="See and measure what Grappler's remapper does.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    p = sub.add_parser("presets", help="list the ready models")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p = sub.add_parser("stacks", help="list the ready layer stacks, or print one as JSON to start from")
    p.add_argument("name", nargs="?", help="a ready stack: print its JSON (e.g. `stacks resnet_basic_block > block.json`)")
    p.add_argument("--layers", action="store_true", help="list the layer types and their fields")
    for name, helptext in (("inspect", "show the graph stages, fusions and Grappler's log"),
                           ("bench", "time the fused graph against the unfused one")):
        p = sub.add_parser(name, help=helptext)
        add_model_options(p)
        p.add_argument("--device", default="cpu", metavar="cpu|gpu|gpu-sim[:PROFILE]",
                       help="where to run; gpu-sim simulates Grappler's GPU decisions and bench predicts its time "
                            "(profiles: v100, t4, a100, l4, h100, h200; volta, ampere, hopper as aliases)")
        p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="an environment flag")
        p.add_argument("--grappler", action="append", default=[], metavar="SWITCH=on|off", help="a Grappler switch")
        p.add_argument("--no-cache", action="store_true", help="run even if this configuration was run before")
        p.add_argument("--compiler", default=compilers.FIRST.id, choices=compilers.CHOICES,
                       help=", ".join(f"{c.id} ({c.label})" for c in compilers.COMPILERS)
                       + f", or {compilers.BOTH} side by side; default {compilers.FIRST.id}")
        if name == "inspect":
            p.add_argument("--export", metavar="DIR", help="also write repro.py, the three graphs as pbtxt and a "
                           "summary.json into DIR (for a bug report)")
            p.add_argument("--pass-graphs", action="store_true",
                           help=f"with --json, the graph after every Grappler pass even for a model over "
                           f"{PASS_GRAPHS_AUTO_NODES} nodes (left out by default: they slow its first graphs)")
        p.add_argument("--json", action="store_true", help="machine-readable output")
        p.add_argument("--experiment", metavar="FILE", help="run an experiment file saved by the page (its model, "
                       "flags, switches and settings; an imported model's file with --model PATH); --device, --env "
                       "and --grappler given beside it change it")
        p.add_argument("--link", action="store_true", help="also print the page link of this run (with --json: "
                       "its \"link\" field)")
        p.add_argument("--url", metavar="URL", help="where --link's explorer is (default: $EXPLORER_URL, else "
                       "http://localhost:8501)")
        if name == "bench":
            p.add_argument("--reps", type=int, default=Bench.reps,
                           help=f"timed repetitions of each variant (default {Bench.reps})")
            p.add_argument("--warmup", type=int, default=Bench.warmup, help=f"untimed calls first (default {Bench.warmup})")
            p.add_argument("--max-seconds", type=float, default=float(Bench.seconds), help="time budget of the timed loop")
            p.add_argument("--processes", type=int, default=1, metavar="N",
                           help="run the benchmark in N fresh worker processes, one after another, for a speedup "
                                "whose interval includes process-to-process variation (default 1: the quick run)")
    fix.add_parser(sub)
    compare.add_parser(sub)
    diagnose.add_parser(sub)
    lessons.add_parser(sub)
    p = sub.add_parser("matrix", help="what-if matrix: presets (and your own model) × every combination of varied "
                                      "settings")
    p.add_argument("--presets", metavar="P1,P2,...", help="preset ids, comma-separated")
    for option in sources()["import"].cli_options:  # your own model as a row: --model PATH and its options
        p.add_argument(*option.flags, **option.kwargs)
    p.add_argument("--vary", action="append", default=[], metavar="NAME=V1,V2",
                   help="an env flag, Grappler switch, model parameter or 'device' and its values (repeatable)")
    p.add_argument("--device", default="cpu", metavar="cpu|gpu|gpu-sim[:PROFILE]")
    p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="a flag for every cell")
    p.add_argument("--set", action="append", default=[], metavar="PARAM=VALUE",
                   help="a parameter for every cell whose model takes it")
    p.add_argument("--grappler", action="append", default=[], metavar="SWITCH=on|off", help="a switch for every cell")
    p.add_argument("--bench", action="store_true", help="also time fused against unfused in each cell")
    p.add_argument("--reps", type=int, default=30, help="with --bench: timed repetitions per cell (default 30)")
    p.add_argument("--warmup", type=int, default=3, help="with --bench: untimed calls first (default 3)")
    p.add_argument("--max-seconds", type=float, default=30.0, help="with --bench: time budget per cell")
    p.add_argument("--processes", type=int, default=1, metavar="N", help="with --bench: fresh processes per cell")
    p.add_argument("--ray", metavar="ADDRESS|local", help="run the cells on a Ray cluster ('local' starts one here)")
    p.add_argument("--no-cache", action="store_true", help="run every cell even if it was run before")
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="machine-readable output")
    out.add_argument("--csv", action="store_true", help="one CSV row per cell")
    return parser
