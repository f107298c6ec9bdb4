"""The command line: the same engine as the page, for scripts and for people without a browser.

    python -m explorer presets [--json]
    python -m explorer inspect PRESET [--device cpu|gpu] [--env NAME=VALUE ...] [--set PARAM=VALUE ...]
                                      [--grappler SWITCH=on|off ...] [--json]
    python -m explorer bench PRESET [same options] [--reps N] [--warmup N] [--max-seconds S] [--json]
    python -m explorer inspect --spec FILE.json [...]   (bench too: a layer stack instead of PRESET)
    python -m explorer stacks [NAME] [--layers]          (the ready layer stacks; NAME prints one as JSON)
    python -m explorer inspect|bench --model PATH [--signature NAME] [--dim N] [--output NODE ...] [same options]
    python -m explorer matrix --presets P1,P2,... --vary NAME=V1,V2 [--vary ...] [--device ...] [--bench]
                              [--ray ADDRESS|local] [--json|--csv]

PRESET is a preset id, or ``chain`` with ``--chain FIELD=VALUE`` options for a custom op chain.
Scripts rely on these names and options: keep them stable.
"""

from __future__ import annotations

import argparse
import json
import sys

from .analysis import xla_fusion
from .analysis.annotate import graphs_of
from .analysis import replicated, traffic
from .analysis.grappler_log import main_run
from .errors import ExplorerError, SpecError, WorkerError
from .model.catalog import PRESETS
from .model.flags import Config, parse_assignment
from .model.graph import STAGES
from .model import stack_examples
from .model.layers import field_help
from .model.limits import PASS_GRAPHS_AUTO_NODES
from .model.results import BenchResult, InspectResult
from .model.spec import resolve
from .model.stack import to_text
from .present import machine

COMPILERS = ("grappler", "xla", "both")


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
                       "leave it out with --spec or --model")
        p.add_argument("--spec", metavar="FILE.json", help="a layer stack (JSON; `stacks NAME` prints one to start from)")
        p.add_argument("--model", metavar="PATH", help="your own model instead of a preset: a SavedModel directory "
                       "(or a .zip of one), a .keras file, or a GraphDef (.pb, .pbtxt); checked against an allow-list "
                       "of pure-compute ops before anything runs")
        p.add_argument("--signature", metavar="NAME", help="with --model, a SavedModel's signature "
                       "(default serving_default)")
        p.add_argument("--dim", type=int, default=1, metavar="N",
                       help="with --model, the value of every unknown input dimension, such as the batch (default 1)")
        p.add_argument("--fix-dims", action="store_true",
                       help="with --model, trace with the unknown dimensions fixed to --dim (default: as served, "
                       "unknown); the result says what fixing them changed")
        p.add_argument("--output", action="append", default=[], metavar="NODE",
                       help="with --model, a GraphDef's output node (repeatable; default: the nodes nothing consumes)")
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
            p.add_argument("--pass-graphs", action="store_true",
                           help=f"with --json, the graph after every Grappler pass even for a model over "
                           f"{PASS_GRAPHS_AUTO_NODES} nodes (left out by default: they slow its first graphs)")
        p.add_argument("--json", action="store_true", help="machine-readable output")
        if name == "bench":
            p.add_argument("--reps", type=int, default=60, help="timed repetitions of each variant (default 60)")
            p.add_argument("--warmup", type=int, default=5, help="untimed calls first (default 5)")
            p.add_argument("--max-seconds", type=float, default=60.0, help="time budget of the timed loop")
            p.add_argument("--processes", type=int, default=1, metavar="N",
                           help="run the benchmark in N fresh worker processes, one after another, for a speedup "
                                "whose interval includes process-to-process variation (default 1: the quick run)")
    p = sub.add_parser("matrix", help="what-if matrix: presets × every combination of varied settings")
    p.add_argument("--presets", required=True, metavar="P1,P2,...", help="preset ids, comma-separated")
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


def _matrix(args) -> int:
    from .engine import matrix
    from .engine.cache import DEFAULT_CACHE_DIR
    from .engine.engine import Engine
    from .present import matrix as table

    axes = [matrix.parse_vary(v) for v in args.vary]
    cells = matrix.plan([p.strip() for p in args.presets.split(",") if p.strip()], axes, device=args.device,
                        env=dict(parse_assignment(a, "--env") for a in args.env),
                        grappler=dict(parse_assignment(a, "--grappler") for a in args.grappler),
                        params=dict(parse_assignment(a, "--set") for a in args.set))
    bench = matrix.BenchOptions(args.reps, args.warmup, args.max_seconds, args.processes) if args.bench else None
    if bench is not None:  # the engine's own bounds, checked before anything runs
        Engine.check_bench_options(bench.reps, bench.warmup, bench.max_seconds, bench.processes)
    engine = Engine(cache_dir=None if args.no_cache else DEFAULT_CACHE_DIR)
    try:
        if args.ray:
            from .engine import ray_backend

            rows = ray_backend.run(engine, cells, args.ray, bench=bench, use_cache=not args.no_cache)
        else:
            rows = matrix.run_local(engine, cells, bench=bench, use_cache=not args.no_cache)
    finally:
        engine.close()
    result = {"axes": [{"name": a.name, "kind": a.kind, "values": list(a.values)} for a in axes],
              "presets": list(dict.fromkeys(c.preset for c in cells)), "summary": matrix.summary(cells),
              "cells": rows}
    if args.json:
        print(table.to_json(result))
    elif args.csv:
        print(table.to_csv(rows), end="")
    else:
        print(table.table(rows))
        print("\n" + "; ".join(f"{n} {status}" for status, n in result["summary"]["status"].items())
              + " | ran on: " + (" / ".join(table.machines(rows)) or "nothing"))
    return 0 if all(r["status"] in ("ok", "n/a", "invalid") for r in rows) else 1


def spec_from_args(args) -> dict:
    if getattr(args, "model", None):
        return _import_spec(args)
    for option, given in (("--signature", args.signature), ("--output", args.output), ("--dim", args.dim != 1),
                          ("--fix-dims", getattr(args, "fix_dims", False))):
        if given:
            raise SpecError(option, "only applies with --model PATH")
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


def _import_spec(args) -> dict:
    from .engine.uploads import spec_for_path

    if args.preset is not None:
        raise SpecError("--model", f"give a preset ({args.preset}) or --model PATH, not both")
    for option, given in (("--set", args.set), ("--chain", args.chain), ("--export", getattr(args, "export", None))):
        if given:
            raise SpecError(option, "does not apply to an imported model (`inspect --json` has its graphs as pbtxt); "
                                    "it takes --signature, --dim and --output")
    spec = spec_for_path(args.model, signature=args.signature, unknown_dim=args.dim, outputs=args.output)
    if getattr(args, "fix_dims", False):
        spec["import"]["fixed_dims"] = True
    return spec


def config_from_args(args) -> Config:
    env = dict(parse_assignment(a, "--env") for a in args.env)
    grappler = dict(parse_assignment(a, "--grappler") for a in args.grappler)
    return Config.make(args.device, env, grappler)


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


def _print_inspect(result: InspectResult) -> None:
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
        print(f"  {fusion['describe']}")
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
    spec = result.get("spec") or {}
    if "preset" not in spec and "chain" not in spec and result.get("report"):
        _print_report(result["report"])
    for warning in result.get("warnings", []):
        print(f"\nWARNING: {warning}")


def _print_report(report: dict) -> None:
    """The whole-model report (analysis.model_report): for models that are neither presets nor op chains."""
    totals = report["totals"]
    saved = totals.get("intermediate_bytes_saved")
    print(f"\nWhole model: {totals.get('ops_traced', '?')} ops traced, {totals.get('ops_optimized', '?')} after Grappler, "
          f"{totals.get('ops_executed', '?')} executed; {totals.get('fused_kernels', 0)} fused kernels"
          + (f"; {saved / 2**20:.2f} MiB of intermediate tensors no longer written" if saved else ""))
    left = totals.get("contractions_unfused") or {}
    if left:
        print("Contractions left unfused: " + ", ".join(f"{op} ×{n}" for op, n in sorted(left.items())))
    for row in report["fusions"]:
        print(f"  {row['count']:>3} × {row['fused']}   layers: {', '.join(row['layers'][:6])}"
              + (" ..." if len(row["layers"]) > 6 else ""))
    if report["near_misses"]:
        print(f"Near-misses ({len(report['near_misses'])}): chains that look like a pattern but did not fuse")
    for miss in report["near_misses"]:
        print(f"  {miss['chain']} at {miss['nodes'][0]}: {miss['form']}; needs {miss['needs']}"
              + (f"  -> {miss['fix']}" if miss["fix"] else ""))


def _print_bench(result: BenchResult) -> None:
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
    if result.get("nothing_to_compare"):
        print(f"  speedup  none: {result['nothing_to_compare']}")
    else:
        print(f"  speedup  {sp['estimate']:.2f}x{ci}: {sp['verdict']}"
              + (f"\n  compared: {result['comparison']}" if result.get("comparison") else ""))
    print(f"  {replicated.run_words(sp)}")
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
    if result.get("traffic"):
        for line in traffic.words(result["traffic"]):
            print(f"  {line}")


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
    if args.command == "stacks":
        return _print_stacks(args.name, args.layers)
    if args.command == "matrix":
        try:
            return _matrix(args)
        except ExplorerError as exc:
            print(f"explorer: error: {exc}", file=sys.stderr)
            return 2 if isinstance(exc, SpecError) else 1
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
            result = engine.inspect(spec, config, use_cache=not args.no_cache, pass_graphs=args.pass_graphs)
            print(json.dumps(result, indent=1)) if args.json else _print_inspect(result)
            if args.export:
                _export(result, args.export)
        else:
            result = engine.bench(spec, config, reps=args.reps, warmup=args.warmup, max_seconds=args.max_seconds,
                                  compiler=args.compiler, processes=args.processes)
            if args.compiler == "grappler":  # the memory-traffic account and estimate (measures the machine once)
                result = engine.traffic(result)
            printer = _print_bench if args.compiler == "grappler" else _print_three_way
            print(json.dumps(result, indent=1)) if args.json else printer(result)
        return 0
    except ExplorerError as exc:
        print(f"explorer: error: {exc}", file=sys.stderr)
        return 2 if isinstance(exc, SpecError) else 1
    finally:
        if engine is not None:
            engine.close()
