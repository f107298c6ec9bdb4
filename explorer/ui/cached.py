"""What the page keeps between reruns and sessions: one Engine, the machine's fingerprint, drawings.

The Engine is a live object (warm worker processes, one admission queue, its own disk cache of
results), so it is a ``cache_resource`` shared by every session. Drawings are plain strings keyed
by the result's key and the drawing options, so they are ``cache_data`` with a bound.
"""

from __future__ import annotations

import atexit
import os

import streamlit as st

from ..engine.cache import DEFAULT_CACHE_DIR
from ..engine.engine import Engine
from ..model.devices import nvidia_gpus_present
from ..model.experiment import Experiment, server_default
from ..model.flags import Config
from . import state


_engines: list[Engine] = []  # what shutdown() closes: tests, and the server's exit (atexit, below)
_started: list[Engine] = []  # the engine explorer.ui.serve made before the server started, if it did


def likely_next(config: Config, result: dict) -> Config | None:
    """The configuration a person most likely asks for after ``config``: on the CPU, oneDNN the other way
    ("and without oneDNN?"); from an explicit setting the way back is "unset" (TF's default)."""
    if config.device != "cpu":
        return None
    if "TF_ENABLE_ONEDNN_OPTS" in config.env_dict:
        return config.with_env("TF_ENABLE_ONEDNN_OPTS", None)
    return config.with_env("TF_ENABLE_ONEDNN_OPTS", "0" if (result.get("fingerprint") or {}).get("onednn") else "1")


# A TensorFlow import is seconds of both cores here: started at once, the likely next worker would slow the
# browser drawing the page that asked for it. Started this much later, it is ready before the next question.
PRESTART_AFTER_S = 4.0


def prestart_later(engine, config: Config | None, after_s: float = PRESTART_AFTER_S) -> None:
    """Ask the engine to start ``config``'s worker in ``after_s`` seconds (the engine does nothing when it is warm)."""
    if config is not None:
        engine.prestart(config, after_s=after_s)


def start_server_engine(config: Config) -> Engine:
    """Make the server's Engine now and, in the background, what the first visitor would wait for (serve.py
    calls this before Streamlit starts): ``config``'s worker, the default experiment's result (kept in the
    result cache) and its drawing. The first visitor's page then only draws (and starts the likely next
    configuration's worker once it has: ``prestart_later``)."""
    instance = Engine(cache_dir=os.environ.get("EXPLORER_CACHE_DIR") or DEFAULT_CACHE_DIR)
    instance.prepare("the server's first result", [Experiment(config=config)], then=prepare_drawing)
    _started.append(instance)
    return instance


# Drawings made before the page asked for them (the default experiment's, made while the server starts):
# stage_pair and svg look here before they compute. A few entries at most.
_drawings: dict[tuple, dict] = {}
_svgs: dict[str, str] = {}
MAX_PREPARED = 16


def prepare_drawing(result: dict, before: str = "traced", after: str = "optimized") -> None:
    """Draw a result's default stage pair as the page first shows it (DOT and Graphviz's SVG), ahead of time."""
    from ..model.graph import Graph
    from ..present.svg import to_svg

    stages = result.get("stages") or {}
    if before not in stages or after not in stages or len(_drawings) >= MAX_PREPARED:
        return
    fold = bool(state.DEFAULTS[state.FOLD])
    view, depth, opened = state.DEFAULTS[state.GRAPH_VIEW], state.DEFAULTS[state.GRAPH_DEPTH], ()
    drawn = _drawn_pair(Graph.from_dict(stages[before]), Graph.from_dict(stages[after]), fold, view, depth, opened)
    _drawings[(result["key"], before, after, fold, view, depth, opened)] = drawn
    for side in ("before", "after"):
        _svgs[drawn[side]] = to_svg(drawn[side])


def _release(engine: Engine) -> None:
    engine.close()


@st.cache_resource(show_spinner=False, on_release=_release)
def engine() -> Engine:
    """The one Engine of this server: its warm workers and its cache serve every session."""
    instance = _started.pop() if _started else Engine(cache_dir=os.environ.get("EXPLORER_CACHE_DIR") or DEFAULT_CACHE_DIR)
    _engines.append(instance)
    return instance


def shutdown() -> None:
    """Stop every worker process the page's Engine started and remove their folders (their graph dumps): for
    tests, and at the server's exit. Streamlit stops on SIGTERM or Ctrl-C and Python exits normally; before
    this ran then, every worker's folder was left in the temporary folder."""
    while _started:
        _engines.append(_started.pop())
    while _engines:
        _engines.pop().close()


atexit.register(shutdown)


GPU = Config.make("gpu")


def machine_config() -> Config:
    """The configuration the machine's facts are asked of: the server's default one, whose worker serve.py starts
    first. Devices, cores and TensorFlow's build do not depend on the flags; asking a worker of other flags would
    start a second TensorFlow on the first visit (8 s of a fresh server's first page, with TF_ENABLE_ONEDNN_OPTS=1)."""
    return server_default().config


@st.cache_data(show_spinner=False, max_entries=4, ttl=3600)
def fingerprint(engine_name: str, _engine) -> dict:
    """What TensorFlow sees on this machine (devices, GPUs), per engine (``engine_name`` keys it).

    From the server's default CPU worker (machine_config), which hides GPUs; where the NVIDIA driver
    shows one, the GPUs and devices come from a GPU worker (which then serves GPU runs warm). Its
    ``onednn`` is that worker's, not TensorFlow's default.
    """
    fp = dict(_engine.fingerprint(machine_config()))
    fp["nvidia_driver"] = nvidia_gpus_present()
    if fp["nvidia_driver"]:
        gpu = _engine.fingerprint(GPU)
        fp.update(gpus=gpu["gpus"], devices=gpu["devices"], tf32=gpu["tf32"])
    return fp


def fingerprint_is_ready(_engine) -> bool:
    """True when fingerprint() will answer at once (the workers it asks are warm)."""
    return _engine.is_warm(machine_config()) and (not nvidia_gpus_present() or _engine.is_warm(GPU))


def _drawn_pair(g_before, g_after, fold: bool, view: str = "all", depth: int = 1, opened: tuple = ()) -> dict:
    """DOT text of both graphs, coloured by their diff, with the diff's lists.

    ``view`` (present.scope_dot.VIEWS, or "auto"): every node, one box per name scope (``depth``
    levels below the shared prefix, ``opened`` scopes shown one level deeper), or the fused regions only.
    """
    from ..analysis.diff import diff_graphs
    from ..present.dot import to_dot
    from ..present.scope_dot import resolve_view, view_pair

    diff = diff_graphs(g_before, g_after)
    view = resolve_view(view, g_before, g_after, fold)
    if view == "all":
        drawn = {"view": "all", "drawn_of": {"before": {}, "after": {}},
                 "before": to_dot(g_before, diff.overlay("before"), fold_boilerplate=fold,
                                  clusters=diff.clusters("before"), id_prefix="b-"),
                 "after": to_dot(g_after, diff.overlay("after"), fold_boilerplate=fold, clusters=diff.clusters("after"),
                                 id_prefix="a-")}
    else:
        drawn = view_pair(g_before, g_after, diff, view, fold=fold, depth=depth, opened=opened)
    return {
        **drawn,
        "diff": diff.to_dict(),
        "counts": diff.counts(),
        "summary": diff.summary(),
        "nodes": {"before": len(g_before), "after": len(g_after)},
        "names": {"before": {n.name: n.op for n in g_before.nodes}, "after": {n.name: n.op for n in g_after.nodes}},
    }


@st.cache_data(show_spinner=False, max_entries=64)
def stage_pair(result_key: str, before: str, after: str, fold: bool, _result: dict, view: str = "all",
               depth: int = 1, opened: tuple = ()) -> dict:
    """Both stages drawn (see _drawn_pair).

    ``result_key`` (the engine's key of ``_result``) stands for the result in the cache key; the
    result itself is not hashed.
    """
    from ..model.graph import Graph

    prepared = _drawings.get((result_key, before, after, fold, view, depth, opened))
    if prepared is not None:
        return prepared
    stages = _result["stages"]
    return _drawn_pair(Graph.from_dict(stages[before]), Graph.from_dict(stages[after]), fold, view, depth, opened)


@st.cache_data(show_spinner=False, max_entries=16)
def results_pair(key_a: str, key_b: str, stage: str, fold: bool, _a: dict, _b: dict) -> dict:
    """One stage of two results drawn side by side, coloured by their diff (the what-if's pinned and current)."""
    from ..model.graph import Graph

    return _drawn_pair(Graph.from_dict(_a["stages"][stage]), Graph.from_dict(_b["stages"][stage]), fold)


@st.cache_data(show_spinner=False, max_entries=64)
def stage_search(result_key: str, before: str, after: str, query: str, _result: dict) -> dict:
    """The names of each stage's nodes that match ``query`` (analysis.scope.search)."""
    from ..analysis.scope import search
    from ..model.graph import Graph

    stages = _result["stages"]
    return {side: search(Graph.from_dict(stages[s]), query) for side, s in (("before", before), ("after", after))}


@st.cache_data(show_spinner=False, max_entries=64)
def pass_pair(result_key: str, before: str, after: str, fold: bool, _result: dict, view: str = "all",
              depth: int = 1, opened: tuple = ()) -> dict:
    """Like stage_pair, for two of Grappler's per-pass dumps (keys of result["grappler"]["pass_graphs"])."""
    from ..model.graph import Graph

    graphs = (_result.get("grappler") or {}).get("pass_graphs") or {}
    return _drawn_pair(Graph.from_dict(graphs[before]), Graph.from_dict(graphs[after]), fold, view, depth, opened)


@st.cache_data(show_spinner=False, max_entries=64)
def stage_ops(result_key: str, _result: dict) -> dict:
    """Per stage of the result: its node count and compute op types (what-if shows these on every rerun)."""
    from ..analysis.annotate import graphs_of

    return {stage: {"nodes": len(g), "compute_ops": g.compute_ops()} for stage, g in graphs_of(_result).items()}


@st.cache_data(show_spinner=False, max_entries=128)
def svg(dot: str) -> str:
    """Graphviz's SVG of a DOT text (present.svg.to_svg); raises ExplorerError when ``dot`` is missing or fails."""
    from ..present.svg import to_svg

    return _svgs.get(dot) or to_svg(dot)
