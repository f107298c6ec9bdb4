"""The parts of an experiment (``experiment.py``) besides its model, each checked: the benchmark form, the compiler,
the tab, the stage pair, the graph view and a lesson step; and the words a link's checks are reported in."""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import SpecError, shown
from .compilers import CHOICES as COMPILER_CHOICES
from .json_text import whole_number
from .limits import MAX_BENCH_SECONDS, MAX_PROCESSES, MAX_REPS, MAX_WARMUP

STAGE_PAIRS = ("traced->optimized", "optimized->executed", "traced->executed")
GRAPH_VIEWS = ("auto", "all", "scopes", "fused")  # how the graph panel draws: ui.graph_views names them
MAX_STEP = 999
_TAB = re.compile(r"[a-z][a-z0-9_]{0,31}")  # fullmatch: "$" would take a trailing newline
_LESSON = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")  # fullmatch: "$" would take a trailing newline


@dataclass(frozen=True)
class Bench:
    """The benchmark form: timed calls per variant, warm-up calls, time budget (s), processes (1: the quick
    run; more: the repeatable run in that many fresh processes). Its defaults are every benchmark's: the page's
    form, ``Engine.bench`` and the command line's ``bench`` take them from here."""

    reps: int = 60
    warmup: int = 5
    seconds: int = 60
    processes: int = 1

    BOUNDS = {"reps": (3, MAX_REPS), "warmup": (0, MAX_WARMUP), "seconds": (1, int(MAX_BENCH_SECONDS)),
              "processes": (1, MAX_PROCESSES)}

    @staticmethod
    def checked(name: str, value) -> int:
        low, high = Bench.BOUNDS[name]
        return whole_number(value, f"bench.{name}", low, high)

    def to_dict(self) -> dict:
        return {"reps": self.reps, "warmup": self.warmup, "seconds": self.seconds, "processes": self.processes}


def check_compiler(value) -> str:
    if value not in COMPILER_CHOICES:
        raise SpecError("compiler", f"{shown(repr(value), 40)} is not one of {', '.join(COMPILER_CHOICES)}")
    return value


def check_tab(value) -> str:
    if not isinstance(value, str) or not _TAB.fullmatch(value):
        raise SpecError("tab", f"{shown(repr(value), 40)} is not a tab's id (such as graphs, bench, matrix)")
    return value


def check_stages(value) -> str:
    text = value.replace("->", "-") if isinstance(value, str) else ""
    for pair in STAGE_PAIRS:
        if text == pair.replace("->", "-"):
            return pair
    raise SpecError("stages", f"{shown(repr(value), 40)} is not one of "
                              f"{', '.join(p.replace('->', '-') for p in STAGE_PAIRS)}")


def check_graph_view(value) -> str:
    if value not in GRAPH_VIEWS:
        raise SpecError("view", f"{shown(repr(value), 40)} is not one of {', '.join(GRAPH_VIEWS)}")
    return value


def check_lesson(value) -> str:
    if not isinstance(value, str) or not _LESSON.fullmatch(value):
        raise SpecError("lesson", f"{shown(repr(value), 40)} is not a lesson id (lower-case letters, digits, - and _)")
    return value


def check_step(value) -> int:
    return whole_number(value, "step", 1, MAX_STEP, "a step number")


def values_of(value) -> list[str]:
    return [str(v) for v in value] if isinstance(value, (list, tuple)) else [str(value)]


def last_of(value) -> str:
    values = values_of(value)
    return values[-1] if values else ""


def short(text, limit: int = 60) -> str:
    return shown(text, limit)


def phrase(key: str, value, exc: SpecError) -> str:
    return f"{short(key)}={short(value)} ({short(exc.message, 200)})"
