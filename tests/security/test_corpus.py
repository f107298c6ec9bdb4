"""The hostile-input corpus (hostile_corpus.py, about a hundred inputs) through the page's upload path, the engine and
the command line.

For every input: the answer expected (a refusal holding its words, or a result for the good models),
one line, no traceback; afterwards nothing written where a hostile model aimed, the temp folder empty,
and the same warm worker still serving a good model. Every input goes through the upload function the
page calls (or, for a directory, the command line's path function) and one warm engine; a
representative subset goes through the command line as a process of its own and through the page in
Streamlit's AppTest.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import hostile_corpus as corpus
import pytest
from security_support import cli, leftovers, one_line_refusal

from explorer.engine import uploads
from explorer.errors import SpecError, WorkerError
from explorer.model.flags import Config
from explorer.ui import state

pytestmark = pytest.mark.tf
CPU = Config.make("cpu", {})
MESSAGE_CHARS = 2500
PAGE_CASES = ("bad_utf8_name.zip", "writefile_direct.pbtxt", "const_1e12.pbtxt", "name_newline.pbtxt",
              "bomb_weights.keras", "good.pbtxt")


@pytest.fixture(scope="module")
def cases(bases, tmp_path_factory) -> dict[str, corpus.Case]:
    return {case.name: case for case in corpus.build(tmp_path_factory.mktemp("corpus"), bases)}


def answer(engine, case: corpus.Case, session: str) -> tuple[str, str]:
    """What the page (a file) or the command line's path function (a directory) and the engine make of it."""
    try:
        if case.page:
            spec = uploads.save_upload(session, case.name, case.path.read_bytes(), allow_programs=True)
        else:
            spec = uploads.spec_for_path(str(case.path))
        engine.inspect(spec, CPU, use_cache=False)
        return "ok", ""
    except SpecError as exc:
        return "refused", str(exc)
    except WorkerError as exc:
        return f"worker {exc.kind}", str(exc)


def wrong(case: corpus.Case, got: str, message: str) -> bool:
    return (got != case.expect or case.words not in message or "\n" in message or "Traceback" in message
            or len(message) > MESSAGE_CHARS)


def test_every_input_is_answered_in_one_line_and_leaves_nothing(engine, cases, temp_root, tmp_path):
    session = tmp_path / "session"
    session.mkdir()
    assert answer(engine, cases["good.pbtxt"], str(session)) == ("ok", "")
    pid = next(w.pid for w in engine.pool.workers() if w.alive())
    answers = {name: answer(engine, case, str(session)) for name, case in cases.items()}
    problems = [(name, got, message[:300]) for name, (got, message) in answers.items()
                if wrong(cases[name], got, message)]
    assert not problems, problems
    assert len(cases) >= 100 and sum(c.expect == "refused" for c in cases.values()) >= 95
    assert not os.path.exists(corpus.VICTIM)
    assert leftovers(temp_root) == []
    assert not [p for p in temp_root.rglob("*") if p.name.startswith(("request-", "explorer-model-", "__autograph"))]
    # The same warm worker served every input and still serves a good model.
    assert answer(engine, cases["tiny.keras"], str(session)) == ("ok", "")
    assert [w.pid for w in engine.pool.workers() if w.alive()] == [pid]


def test_a_representative_subset_through_the_command_line(cases, tmp_path):
    temp = tmp_path / "tmp"
    temp.mkdir()
    def run(name):
        return cli("inspect", "--model", str(cases[name].path), "--no-cache", env={"TMPDIR": str(temp)}, timeout=300)
    with ThreadPoolExecutor(2) as pool:  # two commands at once: each is mostly one core's interpreter start
        procs = dict(zip(corpus.CLI_SUBSET, pool.map(run, corpus.CLI_SUBSET)))
    for name, proc in procs.items():
        case = cases[name]
        if case.expect == "ok":
            assert proc.returncode == 0 and "Traceback" not in proc.stderr, (name, proc.stderr[-2000:])
        else:
            line = one_line_refusal(proc, 2)
            assert case.words in line and len(line) <= MESSAGE_CHARS, (name, line[:400])
    assert list(temp.iterdir()) == [] and not os.path.exists(corpus.VICTIM)


def test_a_subset_through_the_page(cases, page_server, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv(uploads.ALLOW_SETTING, "1")
    at = AppTest.from_file(str(corpus.Path(__file__).resolve().parents[2] / "app.py"), default_timeout=300)
    at.session_state[state.MODE] = "import"
    at = at.run()
    for name in PAGE_CASES:
        case = cases[name]
        at.file_uploader(key=state.UPLOAD).set_value((name, case.path.read_bytes(), "application/octet-stream"))
        at = at.run()
        assert not at.exception, (name, at.exception)
        errors = [e.value for e in at.error]
        if case.expect == "ok":
            assert not errors, (name, errors)
        else:
            assert len([e for e in errors if case.words in e]) == 1 and len(errors) == 1, (name, errors)
            assert "\n" not in errors[0] and "Traceback" not in errors[0]
