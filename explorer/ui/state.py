"""The page's session-state keys that more than one module reads, and their defaults (a panel's own keys live in its
module: ``VALUE_WIDGETS``).

Widgets take their value from these keys (never from a ``value=`` argument as well), so a test
can jump to any state by setting ``at.session_state[KEY]`` before ``at.run()``.

The page's experiment (model/experiment.py) is what these widgets hold: its model in the model source's inputs
(MODE, PRESET, the chain's and parameters' keys, the stack's text, an import's options), the rest in
``experiment_keys``; ``ui.experiment`` reads it (``current``, once per run) and changes it (``apply``). Outside it:
the uploader's file and this session's copies of it (UPLOAD, UPLOAD_DIR, IMPORT_*), the stack editor's draft while
invalid and its undo (STACK_TEXT, STACK_SAVED, STACK_UNDO), results kept, and the panels' own widgets.
"""

from __future__ import annotations

import streamlit as st

from ..model.catalog import PRESETS
from ..model.devices import Device
from ..model.experiment import DEFAULT_MODEL, Experiment, server_default
from ..model.flags import ENV_FLAGS, GRAPPLER_SWITCHES, UNSET, server_env_defaults as server_env_defaults
from ..model.spec import DEFAULT_PARAMS
from ..model.stack import to_text
from ..model.stack_examples import example

DEFAULT_PRESET = DEFAULT_MODEL["preset"]

# The model (sidebar).
MODE = "model.mode"  # "preset", "chain", "stack" or "import"
UPLOAD = "model.upload"  # the file uploader of an imported model
UPLOAD_DIR = "model.upload_dir"  # this session's own temporary directory for uploads
SIGNATURE = "model.import.signature"  # a SavedModel's signature (None: the one the model is run with by default)
IMPORT_INFO = "model.import.info"  # {content digest: the worker's model_info (inputs, signatures)} of this session
UNKNOWN_DIM = "model.import.unknown_dim"  # the value of the model's unknown dimensions
# The session's imported model, kept apart from the uploader's widget (whose state Streamlit drops on a run that
# does not draw it, such as a look at a preset): {"digest", "format", "name", "path", options}, or None.
IMPORT_KEPT = "model.import.kept"
# A model a link or an experiment file names by digest that this session does not hold yet: its public JSON, or None.
IMPORT_WANTED = "model.import.wanted"
IMPORT_SEEN = "model.import.upload_seen"  # the uploader's file last taken (its file_id): a new one replaces the kept
PRESET = "model.preset"
STACK_EXAMPLE = "model.stack.example"  # the ready stack "Start from it" loads
STACK_TEXT = "model.stack.text"  # the stack's JSON as the user typed it (kept as typed, even when invalid)
STACK_UNDO = "model.stack.undo"  # the text a load replaced, or None
# A copy of the text outside the widget: Streamlit drops a widget's state on a run that does not draw it
# (another "Start from" mode), and the user's stack must survive a look at a preset.
STACK_SAVED = "model.stack.saved"
DEFAULT_STACK = "layout_fp32"  # small, and it fuses: Conv2D + BiasAdd + Relu twice
CHAIN_FIELDS = ("contraction", "squeeze", "bias", "norm", "side_add", "activation")


def chain_key(field: str) -> str:
    return f"model.chain.{field}"


def param_key(model_id: str, name: str) -> str:
    """Key of a size/type widget; ``model_id`` is a preset id or "chain" (each keeps its own values)."""
    return f"model.param.{model_id}.{name}"


# The configuration (sidebar).
DEVICE = "config.device"  # "cpu", "gpu" or "gpu-sim" (the profile is GPU_PROFILE)
GPU_PROFILE = "config.gpu_profile"


def env_key(name: str) -> str:
    return f"config.env.{name}"


def switch_key(name: str) -> str:
    return f"config.grappler.{name}"


# What the page shows (ui/link.py reads and writes them with the link; model/experiment.py is their format).
MODEL_SPEC = "view.model_spec"  # the model's JSON spec as the sidebar last built it
EXPERIMENT = "link.experiment"  # the Experiment on screen, made once per run from the sidebar (ui/link.py: sync)
TAB = "view.tab"  # the open tab's id (ui/tabs.py: "graphs", "bench" ...); None: the first
TAB_TITLE = "view.tab.title"  # st.tabs' own key: the open tab's title (set from TAB before the tabs draw)
PRESENT = "view.present"  # the presenter view (a link's present=1)
LESSON = "lesson.id"  # the open lesson's id (a link's lesson=ID), or None
LESSON_STEP = "lesson.step"  # its step, 1 being the first (a link's step=N), or None

# The graph panel.
STAGE_PAIR = "graphs.pair"  # "traced->optimized", "optimized->executed" or "traced->executed"
FOLD = "graphs.fold"  # fold constants, argument and identity nodes away
GRAPH_VIEW = "graphs.view"  # the graph panel's view of big graphs (ui/graph_views.py): "auto", "all", "scopes", "fused"
# The graph panel's scope depth, the scopes opened one level deeper, and the search text.
GRAPH_DEPTH = "graphs.depth"
GRAPH_OPEN = "graphs.open"
GRAPH_SEARCH = "graphs.search"

# The pass pipeline.
PASS = "passes.selected"  # "<result key>|<iteration>:<position>" of the pass whose graphs are shown, or None
PASS_FOLD = "passes.fold"

# Fused against unfused, and the size sweep.
BENCH_REPS = "bench.reps"
BENCH_WARMUP = "bench.warmup"
BENCH_SECONDS = "bench.max_seconds"
BENCH_RESULTS = "bench.results"  # run key -> bench result, the last few of this session
BENCH_MODE = "bench.mode"  # "quick" (one worker process) or "repeatable" (BENCH_PROCESSES fresh ones)
BENCH_PROCESSES = "bench.processes"
SWEEP_PARAM = "sweep.param"
SWEEP_VALUES = "sweep.values"  # text: "512, 1024, 2048"
SWEEP_REPS = "sweep.reps"
SWEEP_RESULTS = "sweep.results"  # run key -> {"param", "rows"}

# What-if.
PINNED = "whatif.pinned"  # a pinned result's summary, or None

# The engine this page uses (page.render's argument: the server's live Engine, or a test's ReplayEngine).
ENGINE = "engine"

# How the result on screen was obtained (new worker, warm worker, cache), kept across reruns.
SHOWN = "inspect.shown"  # {"key", "provenance"}

KEEP_RESULTS = 8  # benchmark and sweep results kept per session
XLA_ON = "xla.on"  # XLA beside Grappler (the experiment's compiler): off until asked, so no page waits for XLA
XLA_BENCH_REPS = "xla.bench.reps"
XLA_BENCH_RESULTS = "xla.bench.results"  # run key -> three-way bench result, the last few of this session


def experiment_keys(exp: Experiment) -> dict[str, object]:
    """The keys of the widgets that hold ``exp``'s configuration, compiler, view and benchmark form, with its values
    (its model is held by its source's widgets: ``Source.page_load``). ``ui.experiment.current`` reads them back."""
    device = Device.of(exp.config.device)
    env, switches = exp.config.env_dict, exp.config.grappler_dict
    return {DEVICE: device.kind, **({GPU_PROFILE: device.profile} if device.profile else {}),
            **{env_key(name): env.get(name, UNSET) for name in ENV_FLAGS},
            **{switch_key(name): switches.get(name, UNSET) for name in GRAPPLER_SWITCHES},
            XLA_ON: exp.compiler != "grappler", TAB: exp.tab, STAGE_PAIR: exp.stages, FOLD: exp.fold,
            GRAPH_VIEW: exp.graph_view, BENCH_REPS: exp.bench.reps, BENCH_WARMUP: exp.bench.warmup,
            BENCH_SECONDS: exp.bench.seconds, BENCH_MODE: "repeatable" if exp.bench.processes > 1 else "quick",
            **({BENCH_PROCESSES: exp.bench.processes} if exp.bench.processes > 1 else {}),
            PRESENT: exp.present, LESSON: exp.lesson, LESSON_STEP: exp.step}


DEFAULTS: dict[str, object] = {
    MODE: "preset",
    PRESET: DEFAULT_PRESET,
    chain_key("contraction"): "MatMul",
    chain_key("squeeze"): False,
    chain_key("bias"): "BiasAdd",
    chain_key("norm"): "none",
    chain_key("side_add"): False,
    chain_key("activation"): "Relu",
    STACK_EXAMPLE: DEFAULT_STACK,
    STACK_SAVED: to_text(example(DEFAULT_STACK)),
    STACK_UNDO: None,
    SIGNATURE: None,
    IMPORT_INFO: {},
    IMPORT_KEPT: None,
    IMPORT_WANTED: None,
    IMPORT_SEEN: None,
    UNKNOWN_DIM: 1,
    GPU_PROFILE: None,  # the simulated GPU's: the sidebar picks model.devices.DEFAULT_PROFILE
    **experiment_keys(Experiment()),  # the defaults' one home: model/experiment.py
    MODEL_SPEC: None,
    PASS: None,
    PASS_FOLD: False,
    BENCH_RESULTS: {},
    BENCH_PROCESSES: 4,  # the repeatable run's processes, as the form offers it
    SWEEP_PARAM: None,
    SWEEP_VALUES: "",
    SWEEP_REPS: 20,
    SWEEP_RESULTS: {},
    PINNED: None,
    SHOWN: None,
    XLA_BENCH_REPS: 30,
    XLA_BENCH_RESULTS: {},
    GRAPH_DEPTH: 1,
    GRAPH_OPEN: [],
    GRAPH_SEARCH: "",
}


def init() -> None:
    """Give every key its default once; values already set (by the user or a test) stay."""
    for key, value in dict(DEFAULTS, **experiment_keys(server_default())).items():
        if key not in st.session_state:
            # A session's own copy of a dict or list default (GRAPH_OPEN, BENCH_RESULTS ...): one shared object
            # would carry one session's choices into every other.
            st.session_state[key] = value.copy() if isinstance(value, (dict, list)) else value


# Given to every widget of a tab's panel (``persist_state=KEEP_HIDDEN``): only the open tab's panel runs, and
# Streamlit forgets the value of a widget that a run does not draw, so without it a tab switched away from and back
# would come back with its form, its folding or its search reset (and with a default of DEFAULTS, the link too).
KEEP_HIDDEN = "page"

# Keys of value widgets that live outside DEFAULTS (a panel adds its own: ``VALUE_WIDGETS.update(...)``); with
# DEFAULTS and the model's parameters they are what ``begin_run`` sends to the browser again.
VALUE_WIDGETS: set[str] = set()
RUN_DONE = "page.run_done"  # False from the start of a full run of the page until its end


def begin_run() -> None:
    """The start of a full run, after ``init``. When the last full run did not reach its end (an uncaught exception,
    the toolbar's Stop), Streamlit kept the values of the widgets that run did not draw (it skips its cleanup of
    widgets after a run that stops early) while the browser dropped them (it clears what a finished run did not
    draw). The next run then drew them from the server's value without sending it, and the browser showed each
    widget's own default: for a number_input with no ``value=``, its min_value (the benchmark form at 3 calls,
    0 warm-up, 1 s, 2 processes). Assigning each value again makes Streamlit send it with the widget."""
    ss = st.session_state
    if ss.get(RUN_DONE) is False:
        for key in [k for k in ss if k in DEFAULTS or k in VALUE_WIDGETS or str(k).startswith("model.param.")]:
            ss[key] = ss[key]
    ss[RUN_DONE] = False


def end_run() -> None:
    st.session_state[RUN_DONE] = True


def default_param(model_id: str, name: str):
    preset = PRESETS.get(model_id)
    if preset is not None and name in preset.defaults:
        return preset.defaults[name]
    return DEFAULT_PARAMS[name]


def ensure_param(model_id: str, name: str) -> str:
    """The widget key of a parameter, with its default filled in if the widget is new."""
    key = param_key(model_id, name)
    if key not in st.session_state:
        st.session_state[key] = default_param(model_id, name)
    return key


def remember(store_key: str, run_key: str, value) -> None:
    """Keep ``value`` under ``run_key`` in a per-session dict, dropping the oldest beyond KEEP_RESULTS."""
    store = dict(st.session_state.get(store_key) or {})
    store.pop(run_key, None)
    store[run_key] = value
    while len(store) > KEEP_RESULTS:
        store.pop(next(iter(store)))
    st.session_state[store_key] = store


def recall(store_key: str, run_key: str):
    return (st.session_state.get(store_key) or {}).get(run_key)


def form_processes() -> int:
    """The benchmark form's processes, kept while its run is the quick one: a repeatable run's, and the rounds of an
    A-against-B timing (at least 2)."""
    return max(2, int(st.session_state.get(BENCH_PROCESSES) or DEFAULTS[BENCH_PROCESSES]))


def presenting() -> bool:
    """The presenter view (ui/presenter.py) is on: present=1 in the link, or the toggle at the top of the page."""
    return bool(st.session_state.get(PRESENT))
