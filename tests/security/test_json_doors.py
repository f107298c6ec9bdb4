"""Issue 30: the small-document doors (experiment files, lesson files, layer stacks, links) take generated hostile
JSON (hostile_json.py) and refuse each in one line naming the field, never a traceback or a hang; the command
line's file options refuse special files without blocking; the page refuses them through its own uploaders."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from hostile_json import documents, good_experiment, good_lesson, link_params
from security_support import cli, one_line_refusal

from explorer.errors import MESSAGE_CHARS, SpecError
from explorer.model import json_text, stack
from explorer.model.experiment import Experiment, ignored_line
from explorer.model.lesson import read_lesson

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
READERS = {
    "experiment": Experiment.from_json,
    "lesson": lambda text: read_lesson(text.encode()),
    "stack": lambda text: stack.parse(text),
}


def _refusal_or_fine(door, text: str) -> str:
    started = time.monotonic()
    try:
        door(text)
        said = ""
    except SpecError as exc:
        said = str(exc)
        assert "\n" not in said and len(said) <= MESSAGE_CHARS + 100, said[:300]
        assert ": " in said  # the field, then what is wrong
    assert time.monotonic() - started < 5
    return said


@pytest.mark.parametrize("kind", READERS)
def test_every_generated_document_is_read_or_refused_in_one_line(kind):
    refused = 0
    for label, text in documents(kind):
        said = _refusal_or_fine(READERS[kind], text)
        refused += bool(said)
        if label.endswith((":deep", ":deep-object")):
            assert "nested more than" in said, said
        if label.endswith("=list") and ("dtype" in label or label.endswith(".type=list")):
            assert "expected" in said, (label, said)
    assert refused > 100


def test_every_generated_link_opens_with_what_was_wrong_named_in_a_bounded_line():
    for label, params in link_params():
        exp, ignored = Experiment.from_query(params, Experiment())
        line = ignored_line(ignored)
        assert "\n" not in line and len(line) <= 2000, (label, len(line))
        if label in ("link:step=superscript", "link:step=digits"):
            assert "step=" in line and "expected a step number 1..999" in line, line
        if label == "link:on-off-same":
            assert "both on and off" in line and exp.config.grappler_dict == {}, line
        if label == "link:many-keys":
            assert "more." in line


def test_numbers_are_read_as_numbers_with_bounds():
    for text in ("²", "٣", "9" * 5000, "-1", "1.5", ""):
        with pytest.raises(SpecError, match=r"^step: expected a step number 1\.\.999"):
            json_text.whole_number(text, "step", 1, 999, "a step number")
    assert json_text.whole_number(" 12 ", "step", 1, 999) == 12
    with pytest.raises(SpecError, match="at most 18"):
        json_text.load("[" + "9" * 5000 + "]", "x", "a thing")
    with pytest.raises(SpecError, match="no NaN"):
        json_text.load('{"a": NaN}', "x", "a thing")


def test_the_stated_size_is_the_files_own(tmp_path):
    big = tmp_path / "big.json"
    big.write_bytes(b" " * (5 << 20))
    with pytest.raises(SpecError, match=r"is 5 MiB; an experiment file is at most 4 MiB"):
        json_text.read_file(big, "--experiment", "an experiment", 4 << 20)
    just = tmp_path / "just.json"
    just.write_bytes(b" " * ((4 << 20) + 1))
    with pytest.raises(SpecError, match=r"is 4,194,305 bytes; an experiment file is at most 4 MiB"):
        json_text.read_file(just, "--experiment", "an experiment", 4 << 20)
    with pytest.raises(SpecError, match=r"/dev/zero is a character device, not a regular file"):
        json_text.read_file("/dev/zero", "--experiment", "an experiment", 4 << 20)


@pytest.fixture(scope="module")
def special(tmp_path_factory):
    folder = tmp_path_factory.mktemp("special")
    os.mkfifo(folder / "fifo")
    (folder / "big.json").write_bytes(b" " * (5 << 20))
    (folder / "deep.json").write_text("[" * 5000 + "]" * 5000)
    return folder


@pytest.mark.parametrize("args,words", [
    (["inspect", "--spec", "{fifo}"], "--spec: {fifo} is a named pipe, not a regular file"),
    (["inspect", "--experiment", "{fifo}"], "--experiment: {fifo} is a named pipe"),
    (["bench", "--experiment", "/dev/zero"], "/dev/zero is a character device"),
    (["inspect", "--experiment", "{big}"], "is 5 MiB; an experiment file is at most 4 MiB"),
    (["inspect", "--spec", "{dir}"], "is a directory, not a regular file"),
    (["inspect", "--spec", "{deep}"], "is nested more than 32 levels deep"),
    (["lessons", "{fifo}"], "lesson: {fifo} is a named pipe"),
    (["lessons", "/dev/zero"], "/dev/zero is a character device"),
    (["lessons", "{deep}"], "lesson: nested more than 32 levels deep"),
])
def test_the_command_lines_json_files_are_refused_without_blocking(special, args, words):
    names = {"fifo": str(special / "fifo"), "big": str(special / "big.json"), "dir": str(special),
             "deep": str(special / "deep.json")}
    started = time.monotonic()
    line = one_line_refusal(cli(*(a.format(**names) for a in args), timeout=60))
    assert words.format(**names) in line, line
    assert time.monotonic() - started < 60


def _page():
    from streamlit.testing.v1 import AppTest

    return AppTest.from_file(APP, default_timeout=300)


def test_the_pages_doors_refuse_hostile_documents_in_one_line(page_server):
    """Links with hostile parameters, and hostile experiment and lesson files, through the real page."""
    from explorer.ui import lessons, share, state

    for label, params in [("deep", {"stack": "{" + '"a":{' * 5000 + "}" * 5000 + "}"}),
                          ("dtype", {"stack": '{"input": {"shape": [1, 4], "dtype": [1]}, "layers": [{"type": "Dense", '
                                              '"units": 2}]}'}),
                          ("step", {"lesson": "gelu-fusion", "step": "²"}), ("dim", {"import": "a" * 64, "dim": "²"})]:
        at = _page()
        for key, value in params.items():
            at.query_params[key] = value
        at.run()
        assert not at.exception, (label, at.exception)
        said = " ".join(w.value for w in at.warning) + " ".join(c.value for c in at.caption)
        assert "Ignored from the link" in said or "from the link" in said, (label, said[:500])

    at = _page().run()
    for name, text in (("deep.json", "[" * 5000 + "]" * 5000),
                       ("step.json", str(good_experiment()).replace("'", '"').replace('"step": 2', '"step": "²"')),
                       ("huge.json", " " * (5 << 20))):
        at.file_uploader(key=share.OPEN_KEY).set_value((name, text.encode(), "application/json"))
        at.run()
        assert not at.exception, (name, at.exception)
        errors = [e.value for e in at.error]
        assert len(errors) == 1 and "\n" not in errors[0] and "experiment" in errors[0], (name, errors)
    at.session_state[lessons.CHOICE] = lessons.OWN_FILE
    at.run()
    lesson = dict(good_lesson(), steps=[dict(good_lesson()["steps"][0], look={"tab": [1]})])
    import json

    for name, data in (("deep.json", "[" * 5000 + "]" * 5000), ("tab.json", json.dumps(lesson))):
        at.file_uploader(key=lessons.UPLOAD).set_value((name, data.encode(), "application/json"))
        at.run()
        assert not at.exception, (name, at.exception)
        errors = [e.value for e in at.error]
        assert errors and "\n" not in errors[-1], (name, errors)
    assert state.LESSON not in at.session_state or at.session_state[state.LESSON] is None
