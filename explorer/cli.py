"""The command line: the same engine as the page, for scripts and for people without a browser.

    python -m explorer presets [--json]
    python -m explorer inspect PRESET [--device cpu|gpu] [--env NAME=VALUE ...] [--set PARAM=VALUE ...]
                                      [--grappler SWITCH=on|off ...] [--json]
    python -m explorer bench PRESET [same options] [--reps N] [--warmup N] [--max-seconds S] [--json]

PRESET is a preset id, or ``chain`` with ``--chain FIELD=VALUE`` options for a custom op chain.
Scripts rely on these names and options: keep them stable.
"""

from __future__ import annotations

import argparse
import json
import sys

from .analysis import xla_fusion
from .analysis.annotate import graphs_of
from .analysis.grappler_log import main_run
from .errors import ExplorerError, SpecError, WorkerError
from .model.catalog import PRESETS
from .model.chain import Chain
from .model.flags import Config, parse_assignment
from .model.graph import STAGES
from .model.spec import DEFAULT_PARAMS, resolve
from .present import machine

COMPILERS = ("grappler", "xla", "both")


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, non-zero: scripts read the message, people too
        self.exit(2, f"explorer: error: {message}\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m explorer", description="See and measure what Grappler's remapper does.")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    p = sub.add_parser("presets", help="list the ready models")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    for name, helptext in (("inspect", "show the graph stages, fusions and Grappler's log"),
                           ("bench", "time the fused graph against the unfused one")):
        p = sub.add_parser(name, help=helptext)
        p.add_argument("preset", help="a preset id (see `presets`), or 'chain' with --chain options")
        p.add_argument("--device", default="cpu", metavar="cpu|gpu|gpu-sim[:PROFILE]",
                       help="where to run; gpu-sim simulates Grappler's GPU decisions (profiles: volta, ampere, hopper)")
        p.add_argument("--env", action="append", default=[], metavar="NAME=VALUE", help="an environment flag")
        p.add_argument("--set", action="append", default=[], metavar="PARAM=VALUE", help="a model parameter")
        p.add_argument("--grappler", action="append", default=[], metavar="SWITCH=on|off", help="a Grappler switch")
        p.add_argument("--chain", action="append", default=[], metavar="FIELD=VALUE",
                       help="with PRESET 'chain': contraction, bias, norm, activation, squeeze, side_add")
        p.add_argument("--no-cache", action="store_true", help="run even if this configuration was run before")
        p.add_argument("--compiler", default="grappler", choices=COMPILERS,
                       help="grappler (default), xla (tf.function(jit_compile=True)), or both side by side")
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
    if result.get("xla_clusters"):
        print("XLA auto-clustering (TF_XLA_FLAGS): these ops left the graph for XLA clusters, which XLA compiles:")
        for line in xla_fusion.cluster_lines(result["xla_clusters"]):
            print(f"  {line}")
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


def _inspect_xla(engine, spec: dict, config: Config, args) -> None:
    """--compiler xla|both. With both, a model XLA refuses still gets its Grappler view (and the refusal)."""
    grappler = engine.inspect(spec, config, use_cache=not args.no_cache) if args.compiler == "both" else None
    try:
        xla = engine.xla(spec, config, use_cache=not args.no_cache)
    except (WorkerError, SpecError) as exc:  # XLA refused the model, or has no view on this device
        if grappler is None or getattr(exc, "kind", "tensorflow") != "tensorflow":
            raise
        xla = {"compiler": "xla", "error": exc.to_dict() if isinstance(exc, WorkerError) else
               {"kind": "spec", "message": str(exc), "detail": ""}}
    if args.json:
        print(json.dumps(xla if grappler is None else dict(grappler, xla=xla), indent=1))
        return
    if grappler is not None:
        _print_inspect(grappler)
        print("\n" + "=" * 72 + "\n")
    _print_xla(xla)
    if args.export and grappler is not None:
        _export(grappler, args.export)


def _print_xla(result: dict) -> None:
    if "error" in result:
        print(f"XLA: {result['error']['message']}")
        return
    fp, times, ran = result["fingerprint"], result["timings"], result["executed"]
    print(f"XLA (tf.function(jit_compile=True)) | {machine.describe(fp)} | flags {fp['flags'] or 'defaults'}")
    print(f"Module shown: {result['module']['name']}, from {result['source']}")
    print(f"  compile {times['compile_s']:.3f} s (optimised module); first call {times['first_call_s']:.3f} s "
          "(trace + compile of the module a call runs)")
    if ran["xla_executable_ran"]:
        print(f"  a profiled call ran XLA module {', '.join(ran['modules'])}: {' '.join(ran['hlo_instructions'])}")
        same = result.get("executed_vs_shown") or {}
        print("  its instructions are the shown module's" if same.get("same") else
              f"  its instructions differ from the shown module's: ran only {same.get('only_ran')}, "
              f"shown only {same.get('only_shown')}")
    else:
        print("  WARNING: the profiled call shows no XLA executable: " + " ".join(ran["tf_kernels"][:12]))
    print(f"\nXLA made: {result['summary']}")
    print("XLA fusions (optimised HLO -> the traced TF ops its metadata names):")
    for group in result["fusions"]:
        print(f"  {group['node']:<28} {group['description']}")
    print("\nEvery traced TF op:")
    for words, ops in xla_fusion.status_lines(result["accounting"]):
        print(f"  {words}: {', '.join(ops)}")
    table, counts = result.get("pass_table") or [], result.get("pass_summary")
    if counts:
        print(f"\nXLA's pass pipeline on {result['module']['name']}: {counts['passes']} passes ran, "
              f"{counts['changed']} changed the module:")
        for row in table:
            if row["changed"] and not row["is_pipeline"]:
                print(f"  {row['pipeline'] or '':<40} {row['pass']:<30} instructions {row['instructions_before']} -> "
                      f"{row['instructions_after']}, {(row['time_us'] or 0) / 1e3:.2f} ms")
    if result["fingerprint"].get("gpus") in (None, []):
        print(f"\n{xla_fusion.GPU_NOT_MEASURED}")


def _print_three_way(result: dict) -> None:
    from .analysis.xla_bench import VARIANTS, WORDS

    s, fp = result["summary"], result["fingerprint"]
    print(f"{machine.describe(fp)} | flags {fp['flags'] or 'defaults'} | {result['reps_done']} interleaved reps "
          f"after {result['warmup']} warm-up, three variants")
    for name in VARIANTS:
        v = s["variants"][name]
        print(f"  {WORDS[name]:<24} median {v['median_ms']:.4f} ms   p10 {v['p10_ms']:.4f}   p90 {v['p90_ms']:.4f}")
    print(f"  XLA's first call (trace + compile): {s['xla_first_call_ms']:.1f} ms, not in the medians")
    for pair, sp in s["speedups"].items():
        a, b = pair.split("/")
        ci = "" if sp.get("ci_low") is None else f" (95% CI {sp['ci_low']:.2f}–{sp['ci_high']:.2f})"
        print(f"  {WORDS[a]} vs {WORDS[b]}: {sp['estimate']:.2f}x{ci}")
    for pair, a in result["agreement"].items():
        print(f"  outputs {pair:<14} max abs diff {a['max_abs']:.3g} ({a['elements_differing']} of {a['elements']} "
              f"elements differ; {'within' if a['within_tolerance'] else 'OUTSIDE'} tolerance {a['tolerance']:g})")
    proof = result["proof_summary"]
    print(f"  unfused ran: {' '.join(proof['unfused_executed'])}")
    print(f"  fused ran:   {' '.join(proof['fused_executed'])}")
    print(f"  XLA ran:     module {proof['xla_module']}: {' '.join(proof['xla_instructions'])}")
    print(f"  proof: {'verified' if proof['verified'] else 'NOT verified'}")
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
    from .engine.cache import DEFAULT_CACHE_DIR
    from .engine.engine import Engine

    engine = None
    try:
        spec = spec_from_args(args)
        config = config_from_args(args)
        resolve(spec)  # checked before any process starts
        engine = Engine(cache_dir=None if args.no_cache else DEFAULT_CACHE_DIR)
        if args.command == "inspect" and args.compiler != "grappler":
            _inspect_xla(engine, spec, config, args)
        elif args.command == "inspect":
            result = engine.inspect(spec, config, use_cache=not args.no_cache)
            print(json.dumps(result, indent=1)) if args.json else _print_inspect(result)
            if args.export:
                _export(result, args.export)
        else:
            result = engine.bench(spec, config, reps=args.reps, warmup=args.warmup, max_seconds=args.max_seconds,
                                  compiler=args.compiler)
            printer = _print_bench if args.compiler == "grappler" else _print_three_way
            print(json.dumps(result, indent=1)) if args.json else printer(result)
        return 0
    except ExplorerError as exc:
        print(f"explorer: error: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, SpecError) else 1
    finally:
        if engine is not None:
            engine.close()
