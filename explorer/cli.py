"""The command line: the same engine as the page, for scripts and for people without a browser.

    python -m explorer presets [--json]
    python -m explorer inspect PRESET [--device cpu|gpu] [--env NAME=VALUE ...] [--set PARAM=VALUE ...]
                                      [--grappler SWITCH=on|off ...] [--json]
    python -m explorer bench PRESET [same options] [--reps N] [--warmup N] [--max-seconds S] [--json]
    python -m explorer inspect --spec FILE.json [...]   (bench too: a layer stack instead of PRESET)
    python -m explorer stacks [NAME] [--layers]          (the ready layer stacks; NAME prints one as JSON)

PRESET is a preset id, or ``chain`` with ``--chain FIELD=VALUE`` options for a custom op chain.
Scripts rely on these names and options: keep them stable.
"""

from __future__ import annotations

import argparse
import json
import sys

from .analysis.annotate import graphs_of
from .analysis.grappler_log import main_run
from .errors import ExplorerError, SpecError
from .model import stack_examples
from .model.catalog import PRESETS
from .model.chain import Chain
from .model.flags import Config, parse_assignment
from .model.graph import STAGES
from .model.layers import field_help
from .model.spec import DEFAULT_PARAMS, resolve
from .model.stack import to_text
from .present import machine

MAX_SPEC_BYTES = 1 << 20


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, non-zero: scripts read the message, people too
        self.exit(2, f"explorer: error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m explorer", description="See and measure what Grappler's remapper does.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    p = sub.add_parser("presets", help="list the ready models")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p = sub.add_parser("stacks", help="list the ready layer stacks, or print one as JSON to start from")
    p.add_argument("name", nargs="?", help="a ready stack: print its JSON (e.g. `stacks resnet_basic_block > block.json`)")
    p.add_argument("--layers", action="store_true", help="list the layer types and their fields")
    for name, helptext in (("inspect", "show the graph stages, fusions and Grappler's log"),
                           ("bench", "time the fused graph against the unfused one")):
        p = sub.add_parser(name, help=helptext)
        p.add_argument("preset", nargs="?", help="a preset id (see `presets`), or 'chain' with --chain options; "
                       "leave out with --spec")
        p.add_argument("--spec", metavar="FILE.json", help="a layer stack (JSON; `stacks NAME` prints one to start from)")
        p.add_argument("--device", default="cpu", metavar="cpu|gpu|gpu-sim[:PROFILE]",
                       help="where to run; gpu-sim simulates Grappler's GPU decisions (profiles: volta, ampere, hopper)")
        p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="an environment flag")
        p.add_argument("--set", action="append", default=[], metavar="PARAM=VALUE", help="a model parameter")
        p.add_argument("--grappler", action="append", default=[], metavar="SWITCH=on|off", help="a Grappler switch")
        p.add_argument("--chain", action="append", default=[], metavar="FIELD=VALUE",
                       help="with PRESET 'chain': contraction, bias, norm, activation, squeeze, side_add")
        p.add_argument("--no-cache", action="store_true", help="run even if this configuration was run before")
        if name == "inspect":
            p.add_argument("--export", metavar="DIR", help="also write repro.py, the three graphs as pbtxt and a "
                           "summary.json into DIR (for a bug report)")
        p.add_argument("--json", action="store_true", help="machine-readable output")
        if name == "bench":
            p.add_argument("--reps", type=int, default=60, help="timed repetitions of each variant (default 60)")
            p.add_argument("--warmup", type=int, default=5, help="untimed calls first (default 5)")
            p.add_argument("--max-seconds", type=float, default=60.0, help="time budget of the timed loop")
    return parser


def spec_from_args(args) -> dict:
    if getattr(args, "spec", None) is not None or args.preset is None:
        return _stack_from_args(args)
    params = dict(parse_assignment(a, "--set") for a in args.set)
    if args.preset == "chain":
        chain = {}
        for item in args.chain:
            key, value = parse_assignment(item, "--chain")
            chain[key] = {"true": True, "false": False}.get(value.lower(), value) if key in ("squeeze", "side_add") else value
        return {"chain": chain, "params": params}
    if args.chain:
        raise SpecError("--chain", "only applies with PRESET 'chain'")
    return {"preset": args.preset, "params": params}


def _stack_from_args(args) -> dict:
    if args.spec is None:
        raise SpecError("PRESET", "required: a preset id (see `presets`), 'chain', or --spec FILE.json")
    if args.preset is not None:
        raise SpecError("--spec", f"give either PRESET ({args.preset}) or --spec FILE.json, not both")
    if args.set or args.chain:
        raise SpecError("--set" if args.set else "--chain", "does not apply to a layer stack; edit its JSON instead")
    try:
        with open(args.spec, encoding="utf-8") as handle:
            text = handle.read(MAX_SPEC_BYTES + 1)
    except (OSError, UnicodeDecodeError) as exc:
        raise SpecError("--spec", f"cannot read {args.spec}: {getattr(exc, 'strerror', None) or exc}") from None
    if len(text) > MAX_SPEC_BYTES:
        raise SpecError("--spec", f"{args.spec} is over {MAX_SPEC_BYTES >> 10} KiB; a layer stack is a short JSON file")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SpecError("--spec", f"{args.spec} is not valid JSON: {exc}") from None
    # The file holds the stack itself (what `stacks NAME` prints), or the engine's {"stack": {...}}.
    return data if isinstance(data, dict) and set(data) == {"stack"} else {"stack": data}


def _print_stacks(name: str | None, layers: bool) -> int:
    if layers:
        for kind, fields in field_help().items():
            print(kind + ("" if fields else "  (no fields)"))
            for f in fields:
                default = "required" if f["required"] or f["default"] is None and f["kind"] != "int_or_tuple" \
                    else f"default {json.dumps(f['default'])}"
                choices = f"; one of {', '.join(f['choices'])}" if f["choices"] else ""
                print(f"  {f['name']:<16} {f['help']} ({default}{choices})")
        print("Block  (fields: repeat 1..64, layers: a list of layers; repeated as a unit)")
        return 0
    if name is None:
        width = max(map(len, stack_examples.NAMES))
        for key in stack_examples.NAMES:
            print(f"{key:<{width}}  {stack_examples.describe(key)}")
        print("\nPrint one to start from:  python -m explorer stacks resnet_basic_block > block.json\n"
              "then:                     python -m explorer inspect --spec block.json")
        return 0
    if name not in stack_examples.NAMES:
        print(f"explorer: error: stacks: no ready stack {name!r}; one of {', '.join(stack_examples.NAMES)}",
              file=sys.stderr)
        return 2
    print(to_text(stack_examples.example(name)))
    return 0


def config_from_args(args) -> Config:
    env = dict(parse_assignment(a, "--env") for a in args.env)
    grappler = dict(parse_assignment(a, "--grappler") for a in args.grappler)
    return Config.make(args.device, env, grappler)


def command_line(spec: dict, config: Config, command: str = "inspect") -> str:
    """The exact command that reproduces a run, with its environment."""
    resolved = resolve(spec)
    if resolved.preset:
        head = [resolved.preset]
        defaults = resolve({"preset": resolved.preset}).p
        params = {k: v for k, v in resolved.params if defaults.get(k) != v}  # only what differs
    else:
        plain = Chain().to_dict()
        fields = {k: v for k, v in resolved.chain.to_dict().items() if k == "contraction" or plain[k] != v}
        head = ["chain"] + [a for k, v in fields.items() for a in ("--chain", f"{k}={v}")]
        params = {k: v for k, v in resolved.params if DEFAULT_PARAMS.get(k) != v}
    parts = ["python", "-m", "explorer", command] + head
    for key, value in params.items():
        parts += ["--set", f"{key}={value}"]
    parts += config.cli_args()
    return " ".join(parts)


def _print_presets(as_json: bool) -> None:
    from .model import coverage

    data = coverage.load()
    if as_json:
        presets = [dict(p.to_dict(), coverage=(data or {}).get("table", {}).get(p.id)) for p in PRESETS.values()]
        cover = None if data is None else {"measured": data["measured"], "rows_fused": coverage.summary(data),
                                           "total_rows": coverage.TOTAL_ROWS, "modes": list(coverage.MODES)}
        print(json.dumps({"presets": presets, "coverage": cover}, indent=2))
        return
    width = max(len(p) for p in PRESETS)
    for preset in PRESETS.values():
        rows = ", ".join(str(r) for r in preset.rows)
        print(f"{preset.id:<{width}}  {preset.title}  (catalogue row {rows})")
        print(f"{'':<{width}}  -> {preset.fused_op}; fuses on: {preset.where}")
        if data and preset.id in data["table"]:
            print(f"{'':<{width}}  measured: " + ", ".join(f"{m} {st}" for m, st in data["table"][preset.id].items()))
    if data:
        counts = coverage.summary(data)
        print(f"\nCoverage of the remapper catalogue ({coverage.TOTAL_ROWS} rows), measured {data['measured']} "
              "by benchmarks/coverage.py: rows with a preset that fuses as catalogued")
        for mode, (device, env) in coverage.MODES.items():
            flags = " ".join(f"{k}={v}" for k, v in env.items())
            print(f"  {mode:<11} {counts[mode]:>2}/{coverage.TOTAL_ROWS}   ({device}; {flags})")


def _print_inspect(result: dict) -> None:
    fp = result["fingerprint"]
    print(f"{machine.describe(fp)} | flags {fp['flags'] or 'defaults'}")
    if result.get("simulated"):
        print(f"SIMULATED on a virtual {result['profile']['label']}: nothing ran. What the simulation cannot check:")
        for limit in result.get("limits", []):
            print(f"  - {limit}")
    for stage, graph in graphs_of(result).items():
        print(f"\n{STAGES[stage]} ({len(graph)} nodes): {' '.join(graph.compute_ops())}")
    print("\nFusions (traced -> after Grappler):")
    for fusion in result.get("fusions", []) or []:
        print(f"  {fusion['description']}")
    if not result.get("fusions"):
        print("  none")
    renames = result.get("renames_by_pair", {}).get("optimized->executed", [])
    if renames:
        print("Renamed when executed: " + ", ".join(f"{old} -> {new}" for _, old, new in renames))
    grappler = result["grappler"]
    print("\nRemapper log:" + ("" if grappler["remapper_log"] else " (nothing logged)"))
    for line in grappler["remapper_log"]:
        print(f"  {line}")
    run = main_run(grappler)
    if run:
        print("\nGrappler passes that changed the graph:")
        for iteration in run["iterations"]:
            for p in iteration["passes"]:
                if p.get("changed"):
                    print(f"  iteration {iteration['index']}: {p['pass']:<28} nodes {p['nodes']} ({p['nodes_delta']:+d}), "
                          f"edges {p['edges']} ({p['edges_delta']:+d}), {p['time_ms']:.2f} ms")
    explanation = result.get("explanation")
    if explanation:
        print(f"\nVerdict for {explanation['pattern']}: {explanation['verdict'].upper()} - {explanation['why']}")
        for check in explanation["checks"]:
            mark = {True: "ok", False: "NO", None: "??"}[check["ok"]]
            fix = f"  -> {check['fix']}" if check["fix"] and check["ok"] is False else ""
            print(f"  [{mark}] {check['name']}: {check['detail']}{fix}")
        for note in explanation["notes"]:
            print(f"  note: {note}")
    for warning in result.get("warnings", []):
        print(f"\nWARNING: {warning}")


def _print_bench(result: dict) -> None:
    s = result["summary"]
    fp = result["fingerprint"]
    print(f"{machine.describe(fp)} | flags {fp['flags'] or 'defaults'} | "
          f"{result['reps_done']} interleaved reps after {result['warmup']} warm-up")
    for name in ("fused", "unfused"):
        v = s[name]
        print(f"  {name:<8} median {v['median_ms']:.4f} ms   p10 {v['p10_ms']:.4f}   p90 {v['p90_ms']:.4f}   "
              f"n={v['n']}")
    sp = s["speedup"]
    ci = "" if sp.get("ci_low") is None else f" (95% CI {sp['ci_low']:.2f}–{sp['ci_high']:.2f})"
    print(f"  speedup  {sp['estimate']:.2f}x{ci}: {sp['verdict']}")
    a = result["agreement"]
    print(f"  outputs  max abs diff {a['max_abs']:.3g}, max rel diff {a['max_rel']:.3g} "
          f"({'within' if a['within_tolerance'] else 'OUTSIDE'} tolerance {a['tolerance']:g}"
          f"{', float32 ran as TF32' if a.get('tf32') else ''})")
    proof = result["proof_summary"]
    print(f"  fused ran:   {' '.join(proof['fused_executed'])}")
    print(f"  unfused ran: {' '.join(proof['unfused_executed'])}")
    print(f"  proof: {'verified (no re-instantiation while timing)' if proof['verified'] else 'NOT verified'}")
    for problem in proof["problems"]:
        print(f"  WARNING: {problem}")


def _export(result: dict, directory: str) -> None:
    import io
    import zipfile
    from pathlib import Path

    from .present.repro import bundle

    target = Path(directory)
    try:
        target.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(io.BytesIO(bundle(result))) as archive:
            archive.extractall(target)
    except OSError as exc:
        raise ExplorerError(f"--export: cannot write to {directory}: {exc.strerror}") from None
    print(f"exported to {target}: " + ", ".join(sorted(p.name for p in target.iterdir())), file=sys.stderr)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "presets":
        _print_presets(args.json)
        return 0
    if args.command == "stacks":
        return _print_stacks(args.name, args.layers)
    from .engine.cache import DEFAULT_CACHE_DIR
    from .engine.engine import Engine

    engine = None
    try:
        spec = spec_from_args(args)
        config = config_from_args(args)
        resolve(spec)  # checked before any process starts
        engine = Engine(cache_dir=None if args.no_cache else DEFAULT_CACHE_DIR)
        if args.command == "inspect":
            result = engine.inspect(spec, config, use_cache=not args.no_cache)
            print(json.dumps(result, indent=1)) if args.json else _print_inspect(result)
            if args.export:
                _export(result, args.export)
        else:
            result = engine.bench(spec, config, reps=args.reps, warmup=args.warmup, max_seconds=args.max_seconds)
            print(json.dumps(result, indent=1)) if args.json else _print_bench(result)
        return 0
    except ExplorerError as exc:
        print(f"explorer: error: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, SpecError) else 1
    finally:
        if engine is not None:
            engine.close()
