"""The hostile-input tally of issue 30: the doors opened after issue 20 (links, experiment files, lesson files,
layer stacks, the command line's file options and --url), by kind of input and by door.

    .venv/bin/python benchmarks/hostile_doors.py [--cli N]

Kinds: *structure* (generated JSON documents, tests/security/hostile_json.py: a value of each field replaced by
a list, an object, '²', 5,000 digits, ..., and documents 5,000 levels deep or 300,000 values broad), *special
files* (a named pipe, /dev/zero, a directory, 5 MiB, 4 MiB and a byte), *output* (terminal escape sequences,
Markdown images, a file named as Markdown, --url/EXPLORER_URL that are not web addresses), *quiet surprises*
(a link past Streamlit's 1,000 parameters, on=X&off=X, a lesson file with a built-in lesson's id).
Doors: *engine* (the readers the page and the command line call, in this process), *cli* (``python -m
explorer``, a process each, for a sample), *page* (the real page in Streamlit's AppTest, for a sample).

Each input ends one of these ways: refused in one line (a SpecError or exit status 2: one line naming a field,
no traceback), fine (read; a link opens with what it left out named in one bounded line), traceback, hung (5 s
in the process, 60 s for a command), leak (an escape sequence reaching the terminal, an image the page would
load). Prints the date, the CPU and the tally; exit status 1 when anything is not refused or fine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SECURITY = ROOT / "tests" / "security"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(SECURITY))
sys.path.insert(0, str(ROOT / "benchmarks"))

import hostile_inputs  # noqa: E402 - its strace reading
import hostile_json as hj  # noqa: E402
from devkit.machine import cpu_model  # noqa: E402

OUTCOMES = ("refused in one line", "fine", "traceback", "hung", "leak")
CLI_VALUES = ("list", "superscript", "digits_text", "escape", "deep")


def _one_line(text: str) -> bool:
    from explorer.errors import MESSAGE_CHARS

    return "\n" not in text and "Traceback" not in text and ": " in text and len(text) <= MESSAGE_CHARS + 200


def engine_door(tally: Counter, odd: list) -> None:
    from explorer.errors import SpecError
    from explorer.model import stack
    from explorer.model.experiment import Experiment, ignored_line
    from explorer.model.lesson import read_lesson

    readers = {"experiment": Experiment.from_json, "lesson": lambda t: read_lesson(t.encode()), "stack": stack.parse}
    for kind, read in readers.items():
        for label, text in hj.documents(kind):
            started = time.monotonic()
            try:
                read(text)
                outcome = "fine"
            except SpecError as exc:
                outcome = "refused in one line" if _one_line(str(exc)) else "traceback"
            except Exception as exc:  # noqa: BLE001 - what the tally counts
                outcome, label = "traceback", f"{label}: {type(exc).__name__}"
            if time.monotonic() - started > 5:
                outcome = "hung"
            _count(tally, odd, "structure", "engine", outcome, label)
    for label, params in hj.link_params():
        try:
            _, ignored = Experiment.from_query(params, Experiment())
            line = ignored_line(ignored)
            outcome = "fine" if "\n" not in line and len(line) <= 2000 else "leak"
        except Exception as exc:  # noqa: BLE001
            outcome, label = "traceback", f"{label}: {type(exc).__name__}"
        kind = "quiet surprises" if label in ("link:on-off-same", "link:many-keys") else "structure"
        _count(tally, odd, kind, "engine", outcome, label)
    from explorer.model import json_text

    for label, path in _special_files():
        try:
            json_text.load(json_text.read_file(path, "file", "an experiment", 4 << 20), "file", "an experiment")
            outcome = "fine"
        except SpecError as exc:
            outcome = "refused in one line" if _one_line(str(exc)) else "traceback"
        _count(tally, odd, "special files", "engine", outcome, label)


_FOLDER = Path(tempfile.mkdtemp(prefix="explorer-doors-"))


def _special_files() -> list[tuple[str, str]]:
    fifo = _FOLDER / "fifo"
    if not fifo.exists():
        os.mkfifo(fifo)
        (_FOLDER / "big.json").write_bytes(b" " * (5 << 20))
        (_FOLDER / "just.json").write_bytes(b" " * ((4 << 20) + 1))
        (_FOLDER / "deep.json").write_text("[" * 5000 + "]" * 5000)
    return [("fifo", str(fifo)), ("dev-zero", "/dev/zero"), ("directory", str(_FOLDER)),
            ("5-MiB", str(_FOLDER / "big.json")), ("4-MiB-and-a-byte", str(_FOLDER / "just.json")),
            ("deep", str(_FOLDER / "deep.json"))]


OUTSIDE: list[tuple[str, str]] = []  # (command, path) of each file a command created outside its folders
STRACE = shutil.which("strace")


def _cli(*args: str, env: dict | None = None) -> tuple[str, subprocess.CompletedProcess | None]:
    """``python -m explorer ARGS`` (traced with strace, when installed, for files created outside the temp
    folder): its outcome."""
    command = [sys.executable, "-m", "explorer", *args]
    trace = Path(tempfile.gettempdir()) / "trace.txt"
    if STRACE:
        command = [STRACE, "-f", "-qq", "-e", f"trace={hostile_inputs.TRACED}", "-o", str(trace)] + command
    try:
        proc = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60,
                              env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", **(env or {})})
    except subprocess.TimeoutExpired:
        return "hung", None
    finally:
        if trace.exists():
            OUTSIDE.extend((" ".join(args)[:80], p) for p in hostile_inputs.written(
                trace.read_text(errors="replace"), Path(tempfile.gettempdir())))
            trace.unlink()
    if "Traceback" in proc.stderr or proc.returncode not in (0, 2):
        return "traceback", proc
    if proc.returncode == 2:
        line = proc.stderr.strip()
        return ("refused in one line" if _one_line(line) and line.startswith("explorer: error: ") else "traceback"), proc
    return ("leak" if "\x1b" in proc.stdout else "fine"), proc


def cli_door(tally: Counter, odd: list, per_kind: int) -> None:
    options = {"experiment": ["inspect", "--experiment"], "stack": ["inspect", "--spec"], "lesson": ["lessons"]}
    for kind, option in options.items():
        sample = [(label, text) for label, text in hj.documents(kind, every_path=False)
                  if not label.endswith(":good")  # a good one would run TensorFlow: the engine door reads them
                  and ("=" not in label or (label.count(".") == 0 and label.rsplit("=", 1)[1] in CLI_VALUES))]
        for label, text in sample[:per_kind]:
            path = _FOLDER / f"{kind}.json"
            path.write_text(text)
            outcome, _ = _cli(*option, str(path))
            _count(tally, odd, "structure", "cli", outcome, label)
        for label, path in _special_files():
            outcome, _ = _cli(*option, path)
            _count(tally, odd, "special files", "cli", outcome, f"{kind}:{label}")
    lesson = hj.good_lesson()
    lesson["steps"][0].update(title="One \x1b]52;c;aGk=\x07", ask="Why \x1b[2J?")
    (_FOLDER / "escapes.json").write_text(json.dumps(lesson))
    outcome, _ = _cli("lessons", str(_FOLDER / "escapes.json"))
    _count(tally, odd, "output", "cli", outcome, "lessons FILE with OSC 52")
    for url in ("javascript:alert(1)", "http://a/\nInjected: line", "http://a/#preset=x", "ftp://a", "http://"):
        outcome, _ = _cli("inspect", "matmul_bias_relu", "--link", "--url", url)
        _count(tally, odd, "output", "cli", outcome, f"--url {url!r}")
    outcome, _ = _cli("inspect", "matmul_bias_relu", "--link", env={"EXPLORER_URL": "javascript:alert(1)//"})
    _count(tally, odd, "output", "cli", outcome, "EXPLORER_URL javascript:")
    from hostile_graphs import good

    (_FOLDER / "m.pbtxt").write_bytes(good())
    outcome, _ = _cli("fix", "--model", str(_FOLDER / "m.pbtxt"), "--out", "/missing/dir/x.pb")
    _count(tally, odd, "special files", "cli", outcome, "fix --out /missing/dir/x.pb")


def page_door(tally: Counter, odd: list) -> None:
    from streamlit.testing.v1 import AppTest

    from explorer.ui import lessons, share

    def page(params=None):
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300)
        for key, value in (params or {}).items():
            at.query_params[key] = value
        return at.run()

    links = [(label, params) for label, params in hj.link_params() if label.endswith(
        ("=list", "=superscript", "=digits_text", "=deep", "=markup", "-same", "many-keys", "list-dtype", "=escape"))]
    quiet = [(label, params) for label, params in links if label in ("link:on-off-same", "link:many-keys")]
    for label, params in [*links[:22], *quiet]:
        at = page(params)
        outcome = ("traceback" if at.exception else "leak" if any("![" in m.value.replace("\\![", "")
                                                                   for m in [*at.warning, *at.markdown]) else "fine")
        kind = "quiet surprises" if label in ("link:on-off-same", "link:many-keys") else "structure"
        _count(tally, odd, kind, "page", outcome, label)
    at = page()
    files = [(label, text) for label, text in hj.documents("experiment", every_path=False) if "=" not in label][:8]
    for label, text in files:
        at.file_uploader(key=share.OPEN_KEY).set_value(("![x](http://example.invalid/x.png).json", text.encode(),
                                                        "application/json"))
        at.run()
        shown = [e.value for e in at.error] + [s.value for s in at.success]
        outcome = ("traceback" if at.exception else "leak" if any("![" in s.replace("\\![", "") for s in shown)
                   else "refused in one line" if at.error and _one_line(at.error[0].value) else "fine")
        _count(tally, odd, "structure", "page", outcome, label)
    for label, text in [*[(lbl, t) for lbl, t in hj.documents("lesson", every_path=False) if "=" not in lbl][:8],
                        ("lesson:image", json.dumps(dict(hj.good_lesson(), steps=[dict(
                            hj.good_lesson()["steps"][0], text="![x](http://example.invalid/x.png)")]))),
                        ("lesson:built-in id", json.dumps(dict(hj.good_lesson(), id="gelu-fusion")))]:
        at.session_state[lessons.CHOICE] = lessons.OWN_FILE
        at.run()
        at.file_uploader(key=lessons.UPLOAD).set_value((f"{label}.json", text.encode(), "application/json"))
        at.run()
        rendered = [m.value for m in at.markdown] + [e.value for e in at.error]
        outcome = ("traceback" if at.exception else "leak" if any("![" in r.replace("\\![", "") for r in rendered)
                   else "leak" if "gelu-fusion" in (at.session_state[lessons.CUSTOM] or {})
                   else "refused in one line" if at.error else "fine")
        kind = "output" if label == "lesson:image" else "quiet surprises" if "built-in" in label else "structure"
        _count(tally, odd, kind, "page", outcome, label)


def _count(tally: Counter, odd: list, kind: str, door: str, outcome: str, label: str) -> None:
    tally[(kind, door, outcome)] += 1
    if outcome not in ("refused in one line", "fine"):
        odd.append((kind, door, outcome, label[:160]))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cli", type=int, default=12, help="generated documents per kind through the command line")
    parser.add_argument("--no-page", action="store_true", help="leave out the page's AppTest pass")
    args = parser.parse_args()
    started = time.strftime("%Y-%m-%d %H:%M")
    temp = Path(tempfile.mkdtemp(prefix="explorer-doors-tmp-"))
    os.environ.update(TMPDIR=str(temp), EXPLORER_UPLOAD_DIR=str(temp / "uploads"),
                      EXPLORER_CACHE_DIR=str(temp / "cache"))
    tempfile.tempdir = str(temp)
    tally, odd, seconds = Counter(), [], {}
    for door, run in (("engine", lambda: engine_door(tally, odd)), ("cli", lambda: cli_door(tally, odd, args.cli)),
                      ("page", None if args.no_page else lambda: page_door(tally, odd))):
        if run is not None:
            t0 = time.perf_counter()
            run()
            seconds[door] = time.perf_counter() - t0
    from explorer.ui import cached

    cached.shutdown()
    left = [p for p in temp.rglob("*") if p.is_file() and "cache" not in p.relative_to(temp).parts]
    print(f"hostile doors, {started}, {cpu_model()} ({os.cpu_count()} cores)")
    print("| kind | door | inputs | " + " | ".join(OUTCOMES) + " |")
    print("|---|---|---|" + "---|" * len(OUTCOMES))
    for kind, door in sorted({(k, d) for k, d, _ in tally}):
        row = [tally[(kind, door, o)] for o in OUTCOMES]
        print(f"| {kind} | {door} | {sum(row)} | " + " | ".join(map(str, row)) + " |")
    total = Counter()
    for (_, _, outcome), n in tally.items():
        total[outcome] += n
    print(f"total {sum(total.values())} inputs: " + ", ".join(f"{total[o]} {o}" for o in OUTCOMES)
          + f"; left in the temp folder: {len(left)} files, {sum(p.stat().st_size for p in left)} bytes; files "
          + f"written outside: {len(OUTSIDE)} ({'strace' if STRACE else 'strace not installed'}); "
          + ", ".join(f"{d} {s:.0f} s" for d, s in seconds.items()))
    for entry in odd[:40] + OUTSIDE[:20]:
        print("   ", " · ".join(entry))
    return 1 if odd or left or OUTSIDE else 0


if __name__ == "__main__":
    sys.exit(main())
