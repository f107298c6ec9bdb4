"""Model sources: where a model comes from (a preset, an op chain, a layer stack, an imported file), one table.

Each source is one line of ``SOURCES``: how its spec is read (from JSON, the command line and the page),
which worker module builds it, what writes the files that rebuild it elsewhere, its label, and what
the page offers for it. Nothing else in the explorer asks which kind of spec it holds: it asks the
spec's source here (``source_of``), or the spec itself (every spec has ``to_dict``, ``identity``,
``public_dict``, ``label``, ``cli_args``, ``sizes``, ``model_key``, ``p``, ``params``, ``check_size``).

Hooks in other layers are named "module:attribute" and imported by the layer that calls them (the
worker its builder, the CLI its reader, the page its input), so this table imports none of them:

    parse     (data: dict) -> spec                 the JSON spec ({"<id>": ...}) checked, or SpecError naming the field
    cli_read  (args) -> dict | None                inspect/bench's options as the JSON spec; None when they pick
                                                   another source (SpecError for options that contradict)
    builder   module with build(spec, tf) -> (body, input names) and make_inputs(spec, tf); input_dtype(spec,
              name, tf) for a source the simulated GPU builds; optionally describe(spec, tf) (what the user
              may choose, e.g. signatures) and unknown_dims(spec, tf) (inputs with a dimension left open)
    repro     (spec, config) -> [ReproFile]        the files that rebuild the model elsewhere (None: none)
    page      () -> (data | None, [problem])       the sidebar's input for it (None: not offered in the page)
    page_load (data) -> None                       put a model of this source into the sidebar's session state
                                                   (a link, an experiment file, a matrix cell: ``ui.link``)
    link      object with keys, to_query, from_query   how the model is written in a page link (``links.py``;
                                                   None: as its JSON, ``<id>={...}``)

Adding a source: one module with its spec class and hooks, and one line here. ``EXPLORER_SOURCES``
("module:attribute,..." naming more ``Source`` objects) adds sources without editing this file; it is
read once per process, and worker processes inherit it (a test adds a toy source that way).
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field

from ..errors import SpecError
from .hooks import hook

# What the page offers for a model (tabs are the page's ui.tabs; the rest are actions):
# "graphs", "why" (the pattern's checklist or the whole-model report), "report" (a tab of its own),
# "passes", "bench", "sweep", "log", "matrix" and each compiler's tab; "export" (repro files and a
# bug-report bundle), "pin" (what-if), "fix" (the near-misses' fixes as rewrites of its graph: engine.fix).
EVERYTHING = frozenset({"graphs", "why", "passes", "bench", "sweep", "log", "matrix", "compilers", "export", "pin"})


@dataclass(frozen=True)
class CliOption:
    """An option of ``inspect`` and ``bench`` (argparse's flags and keywords). ``own``: it means
    something only with its source, so given without it, it is refused ("only applies with ...")."""

    flags: tuple[str, ...]
    kwargs: dict = field(default_factory=dict)
    own: bool = False

    @property
    def dest(self) -> str:
        return self.kwargs.get("dest") or self.flags[0].lstrip("-").replace("-", "_")

    def given(self, args) -> bool:
        value = getattr(args, self.dest, None)
        return value not in (None, [], False, self.kwargs.get("default"))


@dataclass(frozen=True)
class Source:
    id: str  # the key of its JSON spec ({"preset": ...}), its name in results and on the page
    label: str  # the page's "Start from" choice
    help: str  # one sentence: what it is
    spec_type: str  # "module:Class" of the checked spec
    parse: str  # "module:function", see above
    builder: str  # a worker module, see above
    cli_read: str  # "module:function", see above
    cli_picked_by: str  # how the command line names it, for messages: "--model PATH"
    cli_options: tuple[CliOption, ...] = ()
    repro: str | None = None
    page: str | None = None
    page_load: str | None = None
    link: str | None = None
    offers: frozenset = EVERYTHING
    checklist: bool = False  # the verdict's checklist reads it (one op chain); else the whole-model report
    simulated: bool = True  # the simulated GPU builds it

    def stem(self, data: dict) -> str:
        """A short name for files made of a model of this source: the JSON's value where it is a name (a
        preset's id), the model's own file name where it has one (an imported model's "name", without its
        extension: ``resnet.experiment.json``, not ``import.experiment.json``), else the source's id ("chain",
        "stack")."""
        value = data.get(self.id) if isinstance(data, dict) else None
        if isinstance(value, dict) and isinstance(value.get("name"), str):
            value = _file_stem(value["name"])
        return value if isinstance(value, str) and value else self.id


def _file_stem(name: str) -> str:
    """A file name as a safe stem: its last part, without the model-file extensions, in [A-Za-z0-9._-]."""
    name = name.replace("\\", "/").rsplit("/", 1)[-1]
    for suffix in (".zip", ".pbtxt", ".pb", ".keras"):
        name = name.removesuffix(suffix)
    return "".join(c if c.isalnum() and c.isascii() or c in "-_." else "_" for c in name).strip("._")[:60]


PARAMS_OPTION = CliOption(("--set",), {"action": "append", "default": [], "metavar": "PARAM=VALUE",
                                       "help": "a model parameter"})

SOURCES: tuple[Source, ...] = (
    Source("preset", "a preset", "a ready model for one fusion pattern",
           "explorer.model.spec:ModelSpec", "explorer.model.spec:parse_model", "explorer.worker.models.chain",
           "explorer.cli.model_args:read_preset", "PRESET",
           (CliOption(("preset",), {"nargs": "?", "help": "a preset id (see `presets`), or 'chain' with --chain "
                                    "options; leave it out with --spec or --model"}), PARAMS_OPTION),
           repro="explorer.present.repro:chain_files", page="explorer.ui.model_input:preset_input",
           page_load="explorer.ui.model_input:load_preset", link="explorer.model.links:PRESET", checklist=True),
    Source("chain", "my own op chain", "a chain built from parts: contraction, bias, norm, activation",
           "explorer.model.spec:ModelSpec", "explorer.model.spec:parse_model", "explorer.worker.models.chain",
           "explorer.cli.model_args:read_chain", "PRESET 'chain'",
           (CliOption(("--chain",), {"action": "append", "default": [], "metavar": "FIELD=VALUE",
                                     "help": "with PRESET 'chain': contraction, bias, norm, activation, squeeze, "
                                             "side_add"}, own=True),),
           repro="explorer.present.repro:chain_files", page="explorer.ui.model_input:chain_input",
           page_load="explorer.ui.model_input:load_chain", link="explorer.model.links:CHAIN", checklist=True),
    Source("stack", "a layer stack", "a small Keras model written as JSON (ResNet, MobileNet and Transformer "
           "blocks ready)", "explorer.model.stack:StackSpec", "explorer.model.stack:parse_stack",
           "explorer.worker.models.stack", "explorer.cli.model_args:read_stack", "--spec FILE.json",
           (CliOption(("--spec",), {"metavar": "FILE.json",
                                    "help": "a layer stack (JSON; `stacks NAME` prints one to start from)"}),),
           repro="explorer.present.repro:stack_files", page="explorer.ui.stack_editor:editor",
           page_load="explorer.ui.stack_editor:load", link="explorer.model.links:STACK"),
    Source("import", "an imported model", "your own file: a GraphDef, a SavedModel or a .keras model",
           "explorer.model.imported:ImportSpec", "explorer.model.imported:parse_import",
           "explorer.worker.models.imported", "explorer.cli.model_args:read_import", "--model PATH",
           (CliOption(("--model",), {"metavar": "PATH", "help": "your own model instead of a preset: a SavedModel "
                                     "directory (or a .zip of one), a .keras file, or a GraphDef (.pb, .pbtxt); "
                                     "checked against an allow-list of pure-compute ops before anything runs"}),
            CliOption(("--signature",), {"metavar": "NAME", "help": "with --model, a SavedModel's signature "
                                         "(default serving_default)"}, own=True),
            CliOption(("--dim",), {"type": int, "default": 1, "metavar": "N", "help": "with --model, the value of "
                                   "every unknown input dimension, such as the batch (default 1)"}, own=True),
            CliOption(("--fix-dims",), {"action": "store_true", "help": "with --model, trace with the unknown "
                                        "dimensions fixed to --dim (default: as served, unknown); the result says "
                                        "what fixing them changed"}, own=True),
            CliOption(("--output",), {"action": "append", "default": [], "metavar": "NODE", "help": "with --model, "
                                      "a GraphDef's output node (repeatable; default: the nodes nothing consumes)"},
                      own=True)),
           page="explorer.ui.upload:model_input", page_load="explorer.ui.upload:load",
           link="explorer.model.links:IMPORT",
           offers=frozenset({"graphs", "report", "passes", "bench", "log", "compilers", "fix", "pin", "matrix"}),
           simulated=False),
)

ENV_VARIABLE = "EXPLORER_SOURCES"


@functools.cache
def sources() -> dict[str, Source]:
    """Every source by id: the table, then those EXPLORER_SOURCES names."""
    table = {s.id: s for s in SOURCES}
    for path in filter(None, (p.strip() for p in os.environ.get(ENV_VARIABLE, "").split(","))):
        extra = hook(path)
        if not isinstance(extra, Source) or extra.id in table:
            raise SpecError(ENV_VARIABLE, f"{path} is not a new model source")
        table[extra.id] = extra
    return table


def source_of(spec) -> Source:
    """The source of a checked spec (every spec says its ``source_id``)."""
    return sources()[spec.source_id]


def source_for_data(data) -> Source | None:
    """The source a JSON spec belongs to: the first whose id is one of its keys."""
    if isinstance(data, dict):
        for source in sources().values():
            if source.id in data:
                return source
    return None


def is_spec(value) -> bool:
    """A checked spec of some source (what ``resolve`` returns), as opposed to JSON data."""
    source = sources().get(getattr(value, "source_id", ""))
    return source is not None and isinstance(value, hook(source.spec_type))
