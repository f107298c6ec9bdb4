"""inspect's and bench's options as the model's JSON spec and the configuration.

Each model source (``model.sources.SOURCES``) adds its options to the parser and reads them back
(``cli_read``); ``spec_from_args`` asks every source, and exactly one must recognise the arguments as
its own. The readers of the built-in sources are here; another source's reader lives with it.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

from ..errors import SpecError, shown
from ..model import json_text
from ..model.experiment import MAX_FILE_BYTES as EXPERIMENT_MAX_BYTES
from ..model.flags import Config, parse_assignment
from ..model.hooks import hook
from ..model.sources import sources
from ..model.stack import MAX_STACK_BYTES


def add_model_options(parser) -> None:
    """Every model source's own options (a preset, ``chain``, ``--spec``, ``--model`` ...), read back by ``spec_from_args``."""
    for source in sources().values():
        for option in source.cli_options:
            parser.add_argument(*option.flags, **option.kwargs)


def spec_from_args(args) -> dict:
    """The JSON spec of the model the arguments name; SpecError naming the option that is wrong."""
    picked = []
    for source in sources().values():
        data = hook(source.cli_read)(args)
        if data is not None:
            picked.append((source, data))
    if not picked:
        raise SpecError("PRESET", "required: a preset id (see `presets`), 'chain', or --spec FILE.json")
    if len(picked) > 1:
        (first, _), (second, _) = picked[:2]
        raise SpecError(second.cli_picked_by.split()[0], f"give {first.cli_picked_by} or {second.cli_picked_by}, "
                                                         "not both")
    chosen, data = picked[0]
    for source in sources().values():  # options that mean something only with a source not chosen
        for option in source.cli_options:
            if source is not chosen and option.own and option.given(args):
                raise SpecError(option.flags[0], f"only applies with {source.cli_picked_by}")
    return data


def config_from_args(args) -> Config:
    env = dict(parse_assignment(a, "--env") for a in args.env)
    grappler = dict(parse_assignment(a, "--grappler") for a in args.grappler)
    return Config.make(args.device, env, grappler)


def _params(args) -> dict:
    return dict(parse_assignment(a, "--set") for a in args.set)


def read_preset(args) -> dict | None:
    if args.preset in (None, "chain"):
        return None
    return {"preset": args.preset, "params": _params(args)}


def read_chain(args) -> dict | None:
    if args.preset != "chain":
        return None
    params = _params(args)
    chain = {}
    for item in args.chain:
        key, value = parse_assignment(item, "--chain")
        chain[key] = {"true": True, "false": False}.get(value.lower(), value) if key in ("squeeze", "side_add") else value
    return {"chain": chain, "params": params}


def read_stack(args) -> dict | None:
    if args.spec is None:
        return None
    if args.preset is not None:
        raise SpecError("--spec", f"give either PRESET ({args.preset}) or --spec FILE.json, not both")
    if args.set or args.chain:
        raise SpecError("--set" if args.set else "--chain", "does not apply to a layer stack; edit its JSON instead")
    text = json_text.read_file(args.spec, "--spec", "a layer stack", MAX_STACK_BYTES)
    try:
        data = json_text.load(text, "--spec", "a layer stack")
    except SpecError as exc:
        raise SpecError("--spec", f"{shown(args.spec, 300)} is {exc.message}") from None
    # The file holds the stack itself (what `stacks NAME` prints), or the engine's {"stack": {...}}.
    return data if isinstance(data, dict) and set(data) == {"stack"} else {"stack": data}


def read_import(args) -> dict | None:
    if not args.model:
        return None
    if args.preset is not None:
        raise SpecError("--model", f"give a preset ({args.preset}) or --model PATH, not both")
    for option, given in (("--set", args.set), ("--chain", args.chain), ("--export", getattr(args, "export", None))):
        if given:
            raise SpecError(option, "does not apply to an imported model (`inspect --json` has its graphs as pbtxt); "
                                    "it takes --signature, --dim and --output")
    return _import_spec(args)


def _import_spec(args) -> dict:
    from ..engine.uploads import spec_for_path

    spec = spec_for_path(args.model, signature=args.signature, unknown_dim=args.dim, outputs=args.output)
    if args.fix_dims:
        spec["import"]["fixed_dims"] = True
    return spec


def matrix_models(args) -> dict[str, dict]:
    """The matrix's row of your own model (--model PATH, with --signature, --dim, --fix-dims and --output), named
    by its file; {} without --model (its options then say they need it)."""
    if not args.model:
        for option in sources()["import"].cli_options:
            if option.own and option.given(args):
                raise SpecError(option.flags[0], "only applies with --model PATH")
        return {}
    spec = _import_spec(args)
    return {spec["import"].get("name") or args.model: spec}


# ---- an experiment file (docs/experiments.md) --------------------------------------------------------------

LINK_URL_VARIABLE = "EXPLORER_URL"  # where --link's page lives, unless --url says
DEFAULT_URL = "http://localhost:8501"
MODEL_OPTIONS = ("preset", "spec", "chain", "set")  # what names a model besides --model


def page_url(args) -> str:
    """Where --link's page lives (--url, else EXPLORER_URL, else the local default), checked as a web address:
    http or https, a host, nothing a terminal or the printed link would read otherwise (a newline, a space,
    ``javascript:``), and no query or ``#`` (the link's own query follows it: a ``#`` would hide it)."""
    given, field = (args.url, "--url") if getattr(args, "url", None) else (os.environ.get(LINK_URL_VARIABLE), LINK_URL_VARIABLE)
    if not given:
        return DEFAULT_URL
    if not given.isprintable() or any(c.isspace() for c in given) or len(given) > 2000:
        raise SpecError(field, f"{shown(repr(given), 80)} is not a web address: it holds a space, a control character "
                               "or is over 2,000 characters")
    parts = urlsplit(given)
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise SpecError(field, f"{shown(repr(given), 80)} is not an http(s) address of the explorer, such as "
                               f"{DEFAULT_URL}")
    if parts.query or parts.fragment or "#" in given or "?" in given:
        raise SpecError(field, f"{shown(repr(given), 80)} has a query or a '#'; give the page's address alone "
                               "(the link adds the experiment's query)")
    return given


def experiment_from_args(args):
    """``--experiment FILE`` read and checked (an Experiment), or None without it. Its model comes from the file (an
    imported model's file from ``--model PATH``, whose digest must be the experiment's); SpecError naming what
    is wrong."""
    from ..model.experiment import Experiment

    path = getattr(args, "experiment", None)
    if not path:
        return None
    data = json_text.read_file(path, "--experiment", "an experiment", EXPERIMENT_MAX_BYTES)
    try:
        exp = Experiment.from_json(data)
    except SpecError as exc:
        raise SpecError("--experiment", f"{path}: {exc}") from None
    given = [name for name in MODEL_OPTIONS if getattr(args, name, None)]
    if given:
        option = "PRESET" if given[0] == "preset" else f"--{given[0]}"
        raise SpecError("--experiment", f"the experiment names its model; leave out {option}")
    if not exp.ready:
        raise SpecError("--experiment", f"{path} chose {exp.source.label} with nothing in it yet")
    return exp


def experiment_spec(args, exp) -> dict:
    """The model of an experiment as the engine takes it; an imported model from ``--model PATH``."""
    inner = exp.model.get("import")
    if inner is None:
        if args.model:
            raise SpecError("--model", "the experiment's model is not an imported one; leave --model out")
        return exp.model
    if not args.model:
        raise SpecError("--experiment", f"its model is an imported file ({inner.get('name') or 'a model'}, sha256 "
                                        f"{inner['digest'][:12]}…): give that file with --model PATH")
    from ..engine.uploads import spec_for_path

    spec = spec_for_path(args.model, signature=inner.get("signature"), unknown_dim=inner.get("unknown_dim", 1),
                         outputs=inner.get("outputs") or ())
    if spec["import"]["digest"] != inner["digest"]:
        raise SpecError("--model", f"{args.model} is not the experiment's model: its sha256 is "
                                   f"{spec['import']['digest'][:12]}…, the experiment's {inner['digest'][:12]}…")
    if inner.get("fixed_dims"):
        spec["import"]["fixed_dims"] = True
    return spec


def experiment_config(args, exp) -> Config:
    """The experiment's configuration, with --device, --env and --grappler given beside it on top."""
    config = exp.config
    if args.device != "cpu":
        config = Config.make(args.device, config.env_dict, config.grappler_dict)
    for name, value in (parse_assignment(a, "--env") for a in args.env):
        config = config.with_env(name, value)
    for name, value in (parse_assignment(a, "--grappler") for a in args.grappler):
        config = config.with_switch(name, value)
    return config
