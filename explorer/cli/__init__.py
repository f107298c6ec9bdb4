"""The command line: the same engine as the page, for scripts and for people without a browser.

    python -m explorer presets [--json]
    python -m explorer inspect PRESET [--device cpu|gpu] [--env NAME=VALUE ...] [--set PARAM=VALUE ...]
                                      [--grappler SWITCH=on|off ...] [--json]
    python -m explorer bench PRESET [same options] [--reps N] [--warmup N] [--max-seconds S] [--json]
    python -m explorer inspect --spec FILE.json [...]   (bench too: a layer stack instead of PRESET)
    python -m explorer stacks [NAME] [--layers]          (the ready layer stacks; NAME prints one as JSON)
    python -m explorer inspect|bench --model PATH [--signature NAME] [--dim N] [--output NODE ...] [same options]
    python -m explorer compare MODEL [--env ...] --b NAME=VALUE [--processes N] [--json]   (A against B)
    python -m explorer inspect|bench --experiment FILE [--model PATH] [--link [--url URL]]   (an experiment file)
    python -m explorer matrix --presets P1,P2,... [--model PATH] --vary NAME=V1,V2 [--vary ...] [--device ...]
                              [--bench] [--ray ADDRESS|local] [--json|--csv]
    python -m explorer fix --model PATH [--apply NAME,...] [--env ...] [--processes N] [--out PATH] [--json]
    python -m explorer lessons [ID|FILE] [--check] [--json]   (the lessons; a lesson's steps; do they hold here)

PRESET is a preset id, or ``chain`` with ``--chain FIELD=VALUE`` options for a custom op chain.
Scripts rely on these names and options: keep them stable.

``parser`` makes the parser (the model options come from the model sources), ``model_args`` reads the
model and the configuration back, ``present.text`` writes what is printed.
"""

from __future__ import annotations

import json
import sys

from ..analysis import gpu_roofline
from ..analysis.agreement import broken
from ..errors import ExplorerError, SpecError, WorkerError
from ..model import compilers
from ..model.devices import is_simulated
from ..model.hooks import hook
from ..model.flags import Config, parse_assignment
from ..model.spec import resolve
from ..model.stack import to_text
from ..model import stack_examples
from ..present import text
from .model_args import (config_from_args, experiment_config, experiment_from_args, experiment_spec, matrix_models,
                         page_url, spec_from_args)
from . import command, compare, diagnose, fix, lessons
from .parser import make_parser

__all__ = ["config_from_args", "main", "make_parser", "spec_from_args"]


def _matrix(args, open_engine) -> int:
    from ..engine import matrix
    from ..engine.cache import DEFAULT_CACHE_DIR
    from ..engine.engine import Engine
    from ..present import matrix as table

    axes = [matrix.parse_vary(v) for v in args.vary]
    cells = matrix.plan([p.strip() for p in (args.presets or "").split(",") if p.strip()], axes, device=args.device,
                        env=dict(parse_assignment(a, "--env") for a in args.env),
                        grappler=dict(parse_assignment(a, "--grappler") for a in args.grappler),
                        params=dict(parse_assignment(a, "--set") for a in args.set), models=matrix_models(args))
    bench = matrix.BenchOptions(args.reps, args.warmup, args.max_seconds, args.processes) if args.bench else None
    if bench is not None:  # the engine's own bounds, checked before anything runs
        Engine.check_bench_options(bench.reps, bench.warmup, bench.max_seconds, bench.processes)
    engine = open_engine(None if args.no_cache else DEFAULT_CACHE_DIR)
    if args.ray:
        from ..engine import ray_backend

        rows = ray_backend.run(engine, cells, args.ray, bench=bench, use_cache=not args.no_cache)
    else:
        rows = matrix.run_local(engine, cells, bench=bench, use_cache=not args.no_cache)
    result = {"axes": [{"name": a.name, "kind": a.kind, "values": list(a.values)} for a in axes],
              "presets": [p for p in dict.fromkeys(c.preset for c in cells) if p],
              **({"models": list(dict.fromkeys(c.model for c in cells if not c.preset))} if args.model else {}),
              "summary": matrix.summary(cells),
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


def _stacks(name: str | None, layers: bool) -> int:
    if layers:
        print(text.layer_types_text(), end="")
        return 0
    if name is None:
        print(text.stacks_text(), end="")
        return 0
    if name not in stack_examples.NAMES:
        print(f"explorer: error: stacks: no ready stack {name!r}; one of {', '.join(stack_examples.NAMES)}",
              file=sys.stderr)
        return 2
    print(to_text(stack_examples.example(name)))
    return 0


def _inspect_compilers(engine, spec: dict, config: Config, args, page_link: str | None = None) -> None:
    """--compiler other than the first (model.compilers): each chosen compiler's view. With several, one that
    refuses the model (XLA: an op it cannot compile) leaves the others' views, and says why."""
    chosen = compilers.chosen(args.compiler)
    results = {}
    for compiler in chosen:
        try:
            results[compiler.id] = getattr(engine, compiler.inspect)(spec, config, use_cache=not args.no_cache)
        except (WorkerError, SpecError) as exc:  # refused the model, or has no view on this device
            if compiler is chosen[0] or getattr(exc, "kind", "tensorflow") != "tensorflow":
                raise
            results[compiler.id] = {"compiler": compiler.id, "error": exc.to_dict() if isinstance(exc, WorkerError) else
                                    {"kind": "spec", "message": str(exc), "detail": ""}}
    if "error" not in results.get(compilers.FIRST.id, {"error": None}):  # its fusion report's near-misses, settled
        results[compilers.FIRST.id] = engine.check_fixes(spec, config, results[compilers.FIRST.id])
    if args.json:
        first, *others = chosen
        extra = {"link": page_link} if page_link else {}
        print(json.dumps(dict(results[first.id], **{c.id: results[c.id] for c in others}, **extra), indent=1))
        return
    for i, compiler in enumerate(chosen):
        if i:
            print("\n" + "=" * 72 + "\n")
        print(hook(compiler.text)(results[compiler.id]), end="")
    if page_link:
        print(f"\nPage link: {page_link}")
    if args.export and compilers.FIRST.id in results:
        _export(results[compilers.FIRST.id], args.export)


def _export(result: dict, directory: str) -> None:
    import io
    import zipfile
    from pathlib import Path

    from ..present.repro import bundle

    target = Path(directory)
    try:
        target.mkdir(parents=True, exist_ok=True)
        with zipfile.ZipFile(io.BytesIO(bundle(result))) as archive:
            archive.extractall(target)
    except OSError as exc:
        raise ExplorerError(f"--export: cannot write to {directory}: {exc.strerror}") from None
    print(f"exported to {target}: " + ", ".join(sorted(p.name for p in target.iterdir())), file=sys.stderr)


def _given(argv: list[str], option: str) -> bool:
    """Whether the command line names ``option`` itself (``--processes 1`` given equals the default, and still wins
    over an experiment's; argparse takes an unambiguous prefix, ``--proc 1``, as well)."""
    return any(arg == option or arg.startswith(option + "=")
               or (len(arg) > 3 and "=" not in arg and option.startswith(arg)) for arg in argv if arg.startswith("--"))


def _settings_from(exp, args, argv: list[str]) -> None:
    """An experiment's compiler and benchmark settings, where the command line did not give its own.

    One rule for the page and the command line: the file's ``bench`` section is the page's benchmark form, which
    times Grappler's fused against unfused in ``processes`` processes whatever the compilers shown; ``bench``
    times XLA's three-way benchmark (one process) only when ``--compiler`` says so beside the file."""
    if not _given(argv, "--compiler"):
        args.shown = exp.compiler  # the compilers the page shows: the link keeps them
        if args.command == "inspect":
            args.compiler = exp.compiler
    if args.command == "bench":
        three_way = compilers.timed(args.compiler) is not compilers.FIRST
        for name, value in (("reps", exp.bench.reps), ("warmup", exp.bench.warmup),
                            ("max_seconds", float(exp.bench.seconds)),
                            ("processes", 1 if three_way else exp.bench.processes)):
            if not _given(argv, "--" + name.replace("_", "-")):
                setattr(args, name, value)


def _link(args, spec, config: Config, exp) -> str | None:
    """The page link of this run (--link): its model, configuration, compiler and benchmark settings."""
    if not args.link:
        return None
    from ..model.experiment import Bench, Experiment, server_default

    run = Experiment(model=spec, config=config, compiler=getattr(args, "shown", None) or args.compiler,
                     tab=exp.tab if exp is not None else ("bench" if args.command == "bench" else None),
                     stages=exp.stages if exp is not None else Experiment().stages)
    if args.command == "bench":
        run = run.replace(bench=Bench(args.reps, args.warmup, int(round(args.max_seconds)), args.processes))
    elif exp is not None:
        run = run.replace(bench=exp.bench)
    # Written against the server's defaults (EXPLORER_DEFAULT_ENV, read here as the server reads it), so that a
    # flag this run leaves unset is written "unset" where that server would set it.
    return run.link(page_url(args), server_default())


def _predicted(engine, spec, config: Config, args) -> dict:
    """bench on a simulated GPU: nothing runs, so the answer is the roofline prediction from the simulated graphs
    (analysis.gpu_roofline), labelled as one. A result cached before graphs carried their tensors is made again."""
    result = engine.inspect(spec, config, use_cache=not args.no_cache)
    if not result.get("tensors"):
        result = engine.inspect(spec, config, use_cache=False)
    return gpu_roofline.answer(result)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    args = make_parser().parse_args(argv)
    if args.command == "presets":
        print(text.presets_text(args.json), end="")
        return 0
    if args.command == "stacks":
        return _stacks(args.name, args.layers)
    body = {"fix": fix.run, "compare": compare.run, "diagnose": diagnose.run, "lessons": lessons.run,
            "matrix": _matrix}.get(args.command)
    if body is not None:
        return command.run(lambda open_engine: body(args, open_engine))
    return command.run(lambda open_engine: _model_command(args, argv, open_engine))


def _model_command(args, argv: list[str], open_engine) -> int:
    """inspect and bench: a model (a preset, a chain, a stack, an imported file or an experiment) and a
    configuration, run by the engine."""
    from ..engine.cache import DEFAULT_CACHE_DIR
    from ..engine.runner import Limits

    exp = experiment_from_args(args)
    if exp is not None:
        spec, config = experiment_spec(args, exp), experiment_config(args, exp)
        _settings_from(exp, args, argv)
    else:
        spec, config = spec_from_args(args), config_from_args(args)
    resolve(spec)  # checked before any process starts
    page_link = _link(args, spec, config, exp)
    # One command, one model: a second worker for the check's reference would start only as it ends.
    engine = open_engine(None if args.no_cache else DEFAULT_CACHE_DIR, Limits(beside_after_s=None))
    if args.command == "inspect" and args.compiler != compilers.FIRST.id:
        _inspect_compilers(engine, spec, config, args, page_link)
    elif args.command == "inspect":
        result = engine.inspect(spec, config, use_cache=not args.no_cache, pass_graphs=args.pass_graphs)
        result = engine.check_fixes(spec, config, result)  # the fusion report's near-misses, settled
        command.show(result, args.json, lambda r: text.inspect_text(r, getattr(args, "model", None)), page_link)
        if args.export:
            _export(result, args.export)
        if broken(result.get("agreement")):  # the fused run failed, as TensorFlow's error did before
            return 1
    elif is_simulated(config.device) and args.compiler == compilers.FIRST.id:
        command.show(_predicted(engine, spec, config, args), args.json, gpu_roofline.answer_words, page_link)
    else:
        result = engine.bench(spec, config, reps=args.reps, warmup=args.warmup, max_seconds=args.max_seconds,
                              compiler=args.compiler, processes=args.processes)
        timed = compilers.timed(args.compiler)
        if timed is compilers.FIRST:  # the memory-traffic account and estimate (measures the machine once)
            result = engine.traffic(result)
        command.show(result, args.json, hook(timed.bench_text), page_link)
    return 0
