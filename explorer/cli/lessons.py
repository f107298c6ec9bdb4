"""``python -m explorer lessons [ID|FILE] [--check] [--json]``: the lessons, one lesson's steps, and whether what
each step says holds on this machine.

Without an argument it lists the lessons that come with the explorer (``lessons/``). With a lesson's id or a
lesson file it prints the steps (the link each opens, the question); ``--check`` runs every step through the
engine, as the page would, and says for each whether TensorFlow did what the step claims
(``analysis.lesson_check``): exit status 1 when one does not, 2 when the file is refused (the field named).
A teacher runs this on the class's machine before the class.
"""

from __future__ import annotations

import json
import os

from ..analysis.lesson_check import made_words, mismatches
from ..errors import ExplorerError, SpecError, shown
from ..model import json_text
from ..model.lesson import MAX_FILE_BYTES, read_lesson, seed_lessons


def add_parser(sub) -> None:
    p = sub.add_parser("lessons", help="the lessons; a lesson's steps; --check: whether each step holds here")
    p.add_argument("lesson", nargs="?", help="a lesson's id (see `lessons`) or a lesson file (.json)")
    p.add_argument("--check", action="store_true", help="run every step and check what it says against TensorFlow")
    p.add_argument("--no-cache", action="store_true", help="run even if a step's configuration ran before")
    p.add_argument("--json", action="store_true", help="machine-readable output")


def _lesson(name: str):
    if name in seed_lessons():
        return seed_lessons()[name]
    if not os.path.lexists(name):
        raise SpecError("lesson", f"no lesson {shown(repr(name), 80)}: one of {', '.join(seed_lessons())}, or a lesson file")
    return read_lesson(json_text.read_file(name, "lesson", "a lesson", MAX_FILE_BYTES))


def run(args, open_engine) -> int:
    if not args.lesson:
        rows = [{"id": lesson.id, "steps": len(lesson.steps), "title": lesson.title}
                for lesson in seed_lessons().values()]
        if args.json:
            print(json.dumps(rows, indent=1))
        else:
            width = max(len(r["id"]) for r in rows)
            for r in rows:
                print(f"{r['id']:<{width}}  {r['steps']:>2} steps  {r['title']}")
            print("\nOpen one in the page: http://localhost:8501/?lesson=ID (&step=N, &present=1 for a projector)")
        return 0
    lesson = _lesson(args.lesson)
    steps = [{"step": n, "title": step.title, "link": step.link, "ask": step.ask}
             for n, step in enumerate(lesson.steps, 1)]
    if args.check:
        _check(lesson, steps, args.no_cache, open_engine)
    if args.json:
        print(json.dumps({"id": lesson.id, "title": lesson.title, "steps": steps}, indent=1))
    else:
        # A lesson file's text is printed as text: a terminal escape sequence in it (OSC 52 writes the
        # clipboard) is shown escaped, never sent to the terminal.
        print(f"{lesson.id}: {printable(lesson.title)}")
        for row in steps:
            print(f"\n{row['step']}. {printable(row['title'])}\n   {printable(row['link'])}")
            if row["ask"]:
                print(f"   ask: {printable(row['ask'])}")
            if "holds" in row:
                print("   made: " + (", ".join(row["made"]) or "nothing fused"))
                print("   holds here" if row["holds"] else "   DOES NOT HOLD: " + printable("; ".join(row["problems"])))
    return 0 if all(row.get("holds", True) for row in steps) else 1


def printable(text) -> str:
    """Text from a file as the terminal gets it: control characters (escape sequences) escaped, never cut."""
    return shown(text, 1 << 20)


def _check(lesson, rows: list[dict], no_cache: bool, open_engine) -> None:
    """Each step run as the page runs it; its row gets ``made``, ``holds`` and ``problems``."""
    from ..engine.cache import DEFAULT_CACHE_DIR

    # The server's result cache (its EXPLORER_CACHE_DIR when it sets one): a check run on the server before a
    # class leaves every step's result where the page finds it.
    engine = open_engine(None if no_cache else os.environ.get("EXPLORER_CACHE_DIR") or DEFAULT_CACHE_DIR)
    for row, step in zip(rows, lesson.steps):
        try:
            result = engine.inspect(step.experiment.model, step.experiment.config, use_cache=not no_cache)
        except ExplorerError as exc:  # a step that cannot run does not hold
            row.update(made=[], holds=False, problems=[f"it did not run: {exc}"])
            continue
        problems = mismatches(step.expect, result)
        row.update(made=[made_words(f) for f in result.get("fusions") or []], holds=not problems,
                   problems=problems)
