"""An experiment: everything one look at the explorer is made of, as plain data that travels as a link or a file.

The model (one model source's JSON spec, ``sources``), the configuration (device, environment flags, Grappler
switches), the compilers shown, what the page shows (the open tab, the stage pair, folded constants, the graph
view, the presenter view, a lesson step) and the benchmark settings. It is written two ways (docs/experiments.md):

- a page link's query parameters: ``Experiment.to_query(base)`` writes only what differs from ``base`` (the
  server's defaults), in short words (``?preset=conv2d_bias_relu&TF_ENABLE_ONEDNN_OPTS=0&off=remapping``);
  ``Experiment.from_query(params, base) -> (experiment, ignored)`` reads a link and never refuses it: each
  part that is wrong keeps ``base``'s value and is named in ``ignored`` (one short phrase per part);
- an experiment file: ``to_json(results)`` / ``from_json(text)``, strict: a wrong field is a SpecError
  naming it, like any other input of the explorer.

The model part goes through the model sources' table (each source's ``link`` words, ``links.py``), never
through a branch on the kind of spec. A model is kept as its source's public JSON: an imported model by
its content digest, never by a path of the machine that ran it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from urllib.parse import urlencode

from ..errors import SpecError, shown
from .compilers import FIRST as FIRST_COMPILER
from .experiment_parts import (GRAPH_VIEWS, MAX_STEP, STAGE_PAIRS, Bench, check_compiler,  # noqa: F401
                               check_graph_view, check_lesson, check_stages, check_step, check_tab,
                               last_of, phrase, short, values_of)
from .flags import ENV_FLAGS, GRAPPLER_SWITCHES, UNSET, Config, server_env_defaults
from . import json_text
from .hooks import hook
from .schemas import EXPERIMENT as EXPERIMENT_SCHEMA
from .links import JsonLink, Link
from .sources import Source, source_for_data, sources
from .spec import resolve

FORMAT = 1  # the experiment file's "experiment" field: its format's version
MAX_FILE_BYTES = 4 << 20  # an experiment file, results included
DEFAULT_MODEL = {"preset": "matmul_bias_gelu_approx"}  # shows a fusion on load: MatMul+BiasAdd+GELU
# Keys of a link besides the model's (its source's ``link.keys``) and the env flags (their own names).
KEYS = ("device", "on", "off", "compiler", "tab", "stages", "fold", "view", "reps", "warmup", "seconds",
        "processes", "present", "lesson", "step")
LIST_KEYS = ("on", "off", "out")  # keys a link may repeat, read as one comma-separated list


@dataclass(frozen=True)
class Experiment:
    """One experiment (see the module's doc). ``model`` is a source's public JSON spec, or ``{source id: None}``
    for a source chosen with nothing to run yet (an imported model before its upload). ``tab`` is a page tab's
    id (``ui.tabs``; None: the first); ``lesson``/``step`` a lesson and its step (1 is the first)."""

    model: dict = field(default_factory=lambda: dict(DEFAULT_MODEL))
    config: Config = Config()
    compiler: str = FIRST_COMPILER.id
    tab: str | None = None
    stages: str = STAGE_PAIRS[0]
    fold: bool = False
    graph_view: str = GRAPH_VIEWS[0]
    bench: Bench = Bench()
    present: bool = False
    lesson: str | None = None
    step: int | None = None

    def __post_init__(self) -> None:  # one form of each model, so that equal experiments compare equal
        object.__setattr__(self, "model", canonical_model(self.model))
        check_view(self)

    # ---- the model -------------------------------------------------------------------------------
    @property
    def source(self) -> Source:
        return model_source(self.model)

    @property
    def ready(self) -> bool:
        """Whether the model can run (not a source chosen with nothing in it yet)."""
        return self.model.get(self.source.id) is not None

    def spec(self):
        """The model's checked spec (``spec.resolve``); an imported model's without its path."""
        return resolve(self.model)

    def replace(self, **changes) -> "Experiment":
        return replace(self, **changes)

    def with_setting(self, kind: str, name: str, value: object) -> "Experiment":
        """This experiment with one setting changed (a fix's: ``kind`` env, grappler, device, param or chain; a
        ``value`` of None leaves TensorFlow's default). SpecError when the result is not a valid experiment."""
        config = self.config
        if kind == "env":
            return replace(self, config=config.with_env(name, value))
        if kind == "grappler":
            return replace(self, config=config.with_switch(name, value))
        if kind == "device":
            return replace(self, config=Config.make(value, config.env_dict, config.grappler_dict))
        if kind == "param":
            return replace(self, model=dict(self.model, params=dict(self.model.get("params") or {}, **{name: value})))
        if kind == "chain" and isinstance(self.model.get("chain"), dict):
            return replace(self, model=dict(self.model, chain=dict(self.model["chain"], **{name: value})))
        raise SpecError(kind, f"not a setting this experiment can change ({name})")

    # ---- links -----------------------------------------------------------------------------------
    def to_query(self, base: "Experiment | None" = None) -> dict[str, str | list[str]]:
        """Query parameters of a page link: what differs from ``base`` (the server's defaults), in a fixed order;
        a list is a key repeated (``off=remapping&off=constant_folding``)."""
        base = base or Experiment()
        out: dict[str, str | list[str]] = {}
        if self.model != base.model:
            out.update(link_of(self.source).to_query(self.model) if self.ready else {self.source.id: ""})
        if self.config.device != base.config.device:
            out["device"] = self.config.device
        env, base_env = self.config.env_dict, base.config.env_dict
        for name in ENV_FLAGS:
            if env.get(name) != base_env.get(name):
                out[name] = env.get(name, UNSET)
        if self.config.grappler != base.config.grappler:
            for value in ("on", "off"):
                names = [k for k, v in self.config.grappler if v == value]
                if names or (value == "off" and not self.config.grappler):  # off= (empty): no switch set
                    out[value] = names or ""
        if self.compiler != base.compiler:
            out["compiler"] = self.compiler
        if self.tab != base.tab and self.tab:
            out["tab"] = self.tab
        if self.stages != base.stages:
            out["stages"] = self.stages.replace("->", "-")
        if self.fold != base.fold:
            out["fold"] = "1" if self.fold else "0"
        if self.graph_view != base.graph_view:
            out["view"] = self.graph_view
        for name, value in self.bench.to_dict().items():
            if value != getattr(base.bench, name):
                out[name] = str(value)
        if self.present:
            out["present"] = "1"
        if self.lesson:
            out["lesson"] = self.lesson
            if self.step and self.step != 1:
                out["step"] = str(self.step)
        return out

    def link(self, url: str, base: "Experiment | None" = None) -> str:
        """The page link of this experiment on the explorer at ``url`` (its address, such as http://localhost:8501),
        written as the page writes its own (``urlencode``, a list as the key repeated)."""
        query = urlencode(self.to_query(base), doseq=True)
        return url.rstrip("/") + "/" + (f"?{query}" if query else "")

    @staticmethod
    def from_query(params: Mapping[str, object] | None,
                   base: "Experiment | None" = None) -> tuple["Experiment", list[str]]:
        """The experiment a link's query parameters describe, on top of ``base``; each part that is wrong keeps
        ``base``'s value and is named in the returned list ("TF_USE_CUBLASLT=7 (value '7' not accepted ...)")."""
        base = base or Experiment()
        texts = {str(k): ",".join(values_of(v)) if k in LIST_KEYS else last_of(v) for k, v in dict(params or {}).items()}
        ignored: list[str] = []
        used: set[str] = set()
        model = _model_from_query(texts, base, used, ignored)
        config = _config_from_query(texts, base.config, used, ignored)
        changes: dict = {"model": model, "config": config}
        for name, field_name, check in (("compiler", "compiler", check_compiler), ("tab", "tab", check_tab),
                                        ("stages", "stages", check_stages), ("view", "graph_view", check_graph_view),
                                        ("lesson", "lesson", check_lesson)):
            if name in texts:
                used.add(name)
                try:
                    changes[field_name] = check(texts[name])
                except SpecError as exc:
                    ignored.append(phrase(name, texts[name], exc))
        bench = base.bench.to_dict()
        for name in bench:
            if name in texts:
                used.add(name)
                try:
                    bench[name] = Bench.checked(name, texts[name])
                except SpecError as exc:
                    ignored.append(phrase(name, texts[name], exc))
        changes["bench"] = Bench(**bench)
        for name in ("present", "fold"):
            if name in texts:
                used.add(name)
                changes[name] = texts[name].lower() in ("1", "true", "yes", "on")
        if "step" in texts:
            used.add("step")
            if changes.get("lesson", base.lesson) is None:
                ignored.append(f"step={short(texts['step'])} (no lesson named)")
            else:
                try:
                    changes["step"] = check_step(texts["step"])
                except SpecError as exc:
                    ignored.append(phrase("step", texts["step"], exc))
        if changes.get("lesson") and "step" not in changes:
            changes["step"] = 1
        for key in texts:
            if key not in used:
                ignored.append(f"{short(key)} (not a setting of the explorer)")
        return replace(base, **changes), ignored

    # ---- files -----------------------------------------------------------------------------------
    def to_dict(self) -> dict:
        return {"experiment": FORMAT, "model": self.model, "config": self.config.to_dict(),
                "compiler": self.compiler,
                "view": {"tab": self.tab, "stages": self.stages, "fold": self.fold, "graph": self.graph_view,
                         "present": self.present},
                "bench": self.bench.to_dict(),
                "lesson": {"id": self.lesson, "step": self.step} if self.lesson else None}

    def to_json(self, results: dict | None = None, link: str | None = None) -> str:
        """The experiment file; ``results`` (what was measured, for a reader) and ``link`` ride along and are
        not read back."""
        data = self.to_dict()
        if link:
            data["link"] = link
        if results:
            data["results"] = results
        return json.dumps(data, indent=1, sort_keys=False) + "\n"

    @staticmethod
    def from_json(text: str | bytes) -> "Experiment":
        """An experiment file read and checked; SpecError naming the field that is wrong."""
        return Experiment.from_dict(json_text.load(text, "experiment", "an experiment", MAX_FILE_BYTES))

    @staticmethod
    def from_dict(data: object) -> "Experiment":
        """An experiment file's JSON checked: its structure (``schemas.EXPERIMENT``), then each part's meaning."""
        if isinstance(data, dict) and "experiment" in data and data["experiment"] != FORMAT:
            raise SpecError("experiment", f"format {shown(data['experiment'], 20)} is not known here; this "
                                          f"explorer reads format {FORMAT}")
        json_text.validate(data, EXPERIMENT_SCHEMA, root="experiment")
        assert isinstance(data, dict)  # the schema's root is an object
        view, bench, lesson = (data.get(name) or {} for name in ("view", "bench", "lesson"))
        if "model" not in data:
            raise SpecError("model", "missing: the model's JSON spec, such as {\"preset\": \"matmul_bias_relu\"}")
        return Experiment(
            model=_file_model(data["model"]), config=Config.from_dict(data.get("config") or {}),
            compiler=check_compiler(data.get("compiler", FIRST_COMPILER.id)),
            tab=None if view.get("tab") is None else check_tab(view["tab"]),
            stages=check_stages(view.get("stages", STAGE_PAIRS[0])), fold=view.get("fold", False),
            graph_view=check_graph_view(view.get("graph", GRAPH_VIEWS[0])),
            bench=Bench(**{k: Bench.checked(k, v) for k, v in bench.items()}), present=view.get("present", False),
            lesson=None if lesson.get("id") is None else check_lesson(lesson["id"]),
            step=None if lesson.get("id") is None else check_step(lesson.get("step", 1)))


# ---- the parts, checked ------------------------------------------------------------------------------

def server_default() -> Experiment:
    """The experiment a new session of the page opens: the defaults, with the server's default flags
    (``EXPLORER_DEFAULT_ENV``; a setting that cannot be read leaves TensorFlow's defaults, the page says why)."""
    env, _ = server_env_defaults()
    return Experiment(config=Config.make("cpu", env))


def link_of(source: Source) -> Link:
    """A source's link words (``links.py``), or its JSON for a source that names none."""
    return hook(source.link) if source.link else JsonLink(source.id)


def model_source(data: object) -> Source:
    """The source a model's JSON spec belongs to; SpecError when it is not one source's JSON spec."""
    source = source_for_data(data)
    if source is None:
        names = " or ".join(f'"{sid}"' for sid in sources())
        raise SpecError("model", f"expected one model source's JSON spec: {{{names}: ...}}")
    return source


def canonical_model(data: object) -> dict:
    """A model's JSON spec in one form: its source's public JSON (an imported model without its path), or
    {source id: None} for a source with nothing chosen yet. SpecError when it is wrong."""
    source = model_source(data)
    assert isinstance(data, dict)  # a source's spec is a dict (source_for_data)
    if data.get(source.id) is None:
        if set(data) != {source.id}:
            raise SpecError("model", f"{source.id} is null: nothing else may be given")
        return {source.id: None}
    return resolve(data).public_dict()


def _file_model(data: object) -> dict:
    source = source_for_data(data)  # None unless a dict
    inner = data.get(source.id) if source is not None and isinstance(data, dict) else None
    if isinstance(inner, dict) and "path" in inner:  # a path on someone's machine: never followed from a file
        raise SpecError("model.import.path", "an experiment names a model by its content (digest), never by a path; "
                                             "give the file itself (--model PATH, or the page's upload)")
    return canonical_model(data)


def check_view(exp: Experiment) -> None:
    if not isinstance(exp.config, Config):
        raise SpecError("config", "expected a Config")
    check_compiler(exp.compiler)
    if exp.tab is not None:
        check_tab(exp.tab)
    check_stages(exp.stages)
    check_graph_view(exp.graph_view)
    if not isinstance(exp.fold, bool):
        raise SpecError("fold", "expected true or false")
    if exp.lesson is not None:
        check_lesson(exp.lesson)
    if exp.step is not None:
        check_step(exp.step)


def _model_from_query(params: dict, base: Experiment, used: set, ignored: list) -> dict:
    """The model a link names: the first source (in the table's order) whose id is a key."""
    named = [s for s in sources().values() if s.id in params]
    for source in named:
        used.update(k for k in link_of(source).keys if k in params)
    if not named:
        return base.model
    source = named[0]
    for other in named[1:]:
        ignored.append(f"{other.id}={short(params[other.id])} (the link already names a {source.id})")
    if params[source.id] == "":
        return {source.id: None}
    try:
        data, dropped = link_of(source).from_query(params)
        ignored.extend(dropped)
        return canonical_model(data)
    except SpecError as exc:
        ignored.append(phrase(source.id, params[source.id], exc) + "; the default model instead")
        return base.model


def _config_from_query(params: dict, base: Config, used: set, ignored: list) -> Config:
    config = base
    if "device" in params:
        used.add("device")
        try:
            config = Config.make(params["device"], config.env_dict, config.grappler_dict)
        except SpecError as exc:
            ignored.append(phrase("device", params["device"], exc))
    for name in ENV_FLAGS:
        if name in params:
            used.add(name)
            try:
                config = config.with_env(name, None if params[name] in (UNSET, "") else params[name])
            except SpecError as exc:
                ignored.append(phrase(name, params[name], exc))
    if "on" in params or "off" in params:
        switches: dict[str, str] = {}
        named = {value: [n.strip() for n in params.get(value, "").split(",") if n.strip()] for value in ("on", "off")}
        both = set(named["on"]) & set(named["off"])
        for value in ("on", "off"):
            if value not in params:
                continue
            used.add(value)
            for name in named[value]:
                if name not in GRAPPLER_SWITCHES:
                    ignored.append(f"{value}={short(name)} (not a Grappler switch)")
                elif name in both:  # a switch the link both turns on and off: neither, and said once
                    if value == "on":
                        ignored.append(f"on={short(name)}&off={short(name)} (both on and off; left at Grappler's "
                                       "default)")
                else:
                    switches[name] = value
        config = Config.make(config.device, config.env_dict, switches)
    return config


MAX_IGNORED_CHARS = 1500  # the "Ignored from the link" line: the first parts, then how many more


def ignored_line(ignored: list[str]) -> str:
    """What a link left out, in one line for the page, at most about MAX_IGNORED_CHARS characters."""
    if not ignored:
        return ""
    shown_parts: list[str] = []
    for part in ignored:
        if shown_parts and sum(len(p) + 2 for p in shown_parts) + len(part) > MAX_IGNORED_CHARS:
            break
        shown_parts.append(short(part, 300))
    more = len(ignored) - len(shown_parts)
    return ("Ignored from the link: " + "; ".join(shown_parts) + (f"; and {more:,} more" if more else "") + ".")

