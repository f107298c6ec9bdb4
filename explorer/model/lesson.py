"""A lesson: a guided walk through real experiments, as a small checked data file (docs/lessons.md).

Each step is an experiment (``model.experiment``: the state a page link holds, written as that link's query
string), a few sentences, what to look at (the tab to open, the stage pair, the nodes to outline in the
graph), a question for the room, and what the step claims TensorFlow does (``expect``: checked against the
real result each time the step is shown, ``analysis.lesson_check``). The lessons that come with the explorer
are the JSON files in ``lessons/`` at the repository's root; a teacher loads their own from a file, checked
the same way: a wrong field is refused with a SpecError naming it (``steps[2].look.tab: ...``).
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from ..errors import SpecError, shown
from . import json_text
from .compilers import COMPILERS
from .experiment import Experiment
from .experiment_parts import STAGE_PAIRS, check_stages, check_tab
from .schemas import LESSON as LESSON_SCHEMA, STAGE_KEYS

FORMAT = 1  # the lesson file's "lesson" field: its format's version
LESSONS_DIR = Path(__file__).resolve().parents[2] / "lessons"
MAX_FILE_BYTES = 256 << 10
VERDICTS = ("fused", "partly fused", "not fused")
_STEP_FIELD = re.compile(r"steps\[(\d+)\]")  # a field of a step: its index in the file's list, from 0
# The page's tabs a step may open (explorer/ui/tabs.py's ids, in its order; tests/unit/test_lesson_step_words.py
# keeps the two in step): a misspelt tab would open the first tab without a word.
LOOK_TABS = ("graphs", "why", "report", "passes", "bench", "sweep", "log",
             *(c.id for c in COMPILERS if c.page), "matrix")
_ID = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}")  # fullmatch: "$" would take a trailing newline
_NODE = re.compile(r"[A-Za-z0-9_./:-]{1,200}")  # fullmatch: "$" would take a trailing newline
# A step's experiment holds the model and the configuration; the view is the lesson's own (look.tab,
# look.stages) and the presenter view and the step are the page's.
VIEW_IN_LINK = {"tab": "look.tab", "stages": "look.stages", "present": None, "lesson": None, "step": None}


@dataclass(frozen=True)
class Look:
    """What to look at: the tab to open (its id), the stage pair, and nodes (op types or exact names) per stage."""

    tab: str | None = None
    stages: str | None = None
    nodes: dict = field(default_factory=dict)  # stage key -> tuple of op types or node names


@dataclass(frozen=True)
class Expect:
    """What the step says TensorFlow does, checked against the result (None / empty: not claimed)."""

    fusions: int | None = None  # how many fusions Grappler made
    made: tuple[str, ...] = ()  # fused nodes, as the page writes them: "_FusedMatMul [BiasAdd, Relu]"
    has: dict = field(default_factory=dict)  # stage key -> op types the graph has
    lacks: dict = field(default_factory=dict)  # stage key -> op types it has not
    verdict: str | None = None  # the verdict's word, for a model with a checklist (a preset, an op chain)

    @property
    def claims(self) -> bool:
        return bool(self.fusions is not None or self.made or self.has or self.lacks or self.verdict)


@dataclass(frozen=True)
class Step:
    title: str
    experiment: Experiment  # the model and configuration (the view comes from look)
    link: str  # the experiment as written in the file (a link's query string)
    text: str
    ask: str = ""
    look: Look = Look()
    expect: Expect = Expect()


@dataclass(frozen=True)
class Lesson:
    id: str
    title: str
    steps: tuple[Step, ...]
    summary: str = ""
    source: str = ""  # where its story comes from (a seed post)

    def step(self, number: int | None) -> tuple[int, Step]:
        """The step numbered ``number`` (1 is the first), kept within the lesson."""
        number = min(max(int(number or 1), 1), len(self.steps))
        return number, self.steps[number - 1]

    def experiment(self, number: int, present: bool = False) -> Experiment:
        """Step ``number``'s whole experiment, as its link opens it."""
        number, step = self.step(number)
        view = {"tab": step.look.tab, "stages": step.look.stages or STAGE_PAIRS[0]}
        return step.experiment.replace(lesson=self.id, step=number, present=present, **view)

    def configs(self) -> list:
        """The distinct configurations its steps run in (each is a worker process of its own)."""
        return list(dict.fromkeys(step.experiment.config for step in self.steps))


# ---- reading ---------------------------------------------------------------------------------------------

def read_lesson(text) -> Lesson:
    """A lesson file (bytes or text) read and checked; SpecError naming the field that is wrong, and the step
    as the panel counts it (from 1) where the field is in one."""
    data = json_text.load(text, "lesson", "a lesson", MAX_FILE_BYTES)
    try:
        return parse_lesson(data)
    except SpecError as exc:
        index = _STEP_FIELD.match(exc.field)
        if index is None:
            raise
        raise SpecError(exc.field, f"{exc.message} (step {int(index.group(1)) + 1})") from None


def parse_lesson(data) -> Lesson:
    """A lesson's JSON checked: its structure (``schemas.LESSON``), then what each step means."""
    if not isinstance(data, dict) or "lesson" not in data:
        raise SpecError("lesson", 'expected a lesson file: a JSON object with "lesson": 1 (docs/lessons.md)')
    if data["lesson"] != FORMAT:
        raise SpecError("lesson", f"format {shown(data['lesson'], 20)} is not known here; this explorer reads "
                                  f"format {FORMAT}")
    json_text.validate(data, LESSON_SCHEMA, root="lesson")
    lesson_id = data["id"]
    if not isinstance(lesson_id, str) or not _ID.fullmatch(lesson_id):
        raise SpecError("id", f"{shown(lesson_id, 40)!r} is not a lesson id (lower-case letters, digits, - and _)")
    return Lesson(lesson_id, _text(data["title"], "title"),
                  tuple(_step(s, f"steps[{i}]") for i, s in enumerate(data["steps"])),
                  _text(data.get("summary", ""), "summary", empty=True),
                  _text(data.get("source", ""), "source", empty=True))


def _step(data: dict, where: str) -> Step:
    link = data["experiment"]
    return Step(_text(data["title"], f"{where}.title"), _experiment(link, f"{where}.experiment"),
                link.strip(), _text(data["text"], f"{where}.text"), _text(data.get("ask", ""), f"{where}.ask", empty=True),
                _look(data.get("look"), f"{where}.look"), _expect(data.get("expect"), f"{where}.expect"))


def _experiment(link, where: str) -> Experiment:
    """A link's query string (or a whole link: what follows its '?'), read strictly: nothing may be ignored."""
    if not isinstance(link, str) or not link.strip():
        raise SpecError(where, "expected a link's query string, such as "
                               "\"preset=matmul_bias_gelu_approx&TF_ENABLE_ONEDNN_OPTS=0\"")
    query = urlsplit(link.strip()).query if "?" in link else link.strip()
    params = parse_qs(query, keep_blank_values=True)
    for key, moved in VIEW_IN_LINK.items():
        if key in params:
            raise SpecError(where, f"{key}= is the lesson's to set" + (f": write it as {moved}" if moved else ""))
    experiment, ignored = Experiment.from_query(params, Experiment())
    if ignored:
        raise SpecError(where, "; ".join(ignored))
    if not experiment.ready:
        raise SpecError(where, "names no model that can run (an imported model needs its upload)")
    return experiment


def _look(data, where: str) -> Look:
    if data is None:
        return Look()
    tab = _checked(check_tab, data.get("tab"), f"{where}.tab") if data.get("tab") is not None else None
    if tab is not None and tab not in LOOK_TABS:
        raise SpecError(f"{where}.tab", f"{shown(repr(tab), 40)} is not a tab of the page: {', '.join(LOOK_TABS)}")
    stages = _checked(check_stages, data.get("stages"), f"{where}.stages") if data.get("stages") is not None else None
    return Look(tab, stages, _per_stage(data.get("nodes"), f"{where}.nodes", _NODE, "an op type or a node name"))


def _expect(data, where: str) -> Expect:
    if data is None:
        return Expect()
    fusions = data.get("fusions")
    if fusions is not None and (isinstance(fusions, bool) or not isinstance(fusions, int) or not 0 <= fusions <= 10_000):
        raise SpecError(f"{where}.fusions", f"expected a whole number 0..10000, got {shown(fusions, 40)!r}")
    verdict = data.get("verdict")
    if verdict is not None and verdict not in VERDICTS:
        raise SpecError(f"{where}.verdict", f"{shown(verdict, 40)!r} is not one of {', '.join(VERDICTS)}")
    return Expect(fusions, tuple(data.get("made") or ()), _per_stage(data.get("has"), f"{where}.has", _NODE, "an op type"),
                  _per_stage(data.get("lacks"), f"{where}.lacks", _NODE, "an op type"), verdict)


# ---- the parts, checked --------------------------------------------------------------------------------

def _text(value: str, where: str, empty: bool = False) -> str:
    if not empty and not value.strip():
        raise SpecError(where, "expected text (not empty)")
    return value.strip()


def _per_stage(data, where: str, pattern: re.Pattern, what: str) -> dict:
    if data is None:
        return {}
    out = {}
    for stage, names in data.items():
        if stage not in STAGE_KEYS:
            raise SpecError(f"{where}.{shown(stage, 40)}", f"not a stage; one of {', '.join(STAGE_KEYS)}")
        for i, name in enumerate(names):
            if not isinstance(name, str) or not pattern.fullmatch(name):
                raise SpecError(f"{where}.{stage}[{i}]", f"{shown(name, 40)!r} is not {what}")
        out[stage] = tuple(names)
    return out


def _checked(check, value, where: str):
    try:
        return check(value)
    except SpecError as exc:
        raise SpecError(where, exc.message) from None


# ---- the lessons that come with the explorer ------------------------------------------------------------

@functools.cache
def seed_lessons() -> dict[str, Lesson]:
    """Every lesson in ``lessons/``, by id (a file that does not read is an error: the tests read them all)."""
    lessons = {}
    for path in sorted(LESSONS_DIR.glob("*.json")):
        try:
            lesson = read_lesson(path.read_bytes())
        except SpecError as exc:
            raise SpecError(f"lessons/{path.name}", str(exc)) from None
        lessons[lesson.id] = lesson
    return lessons
