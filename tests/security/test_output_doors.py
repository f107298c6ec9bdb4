"""Issue 30: what the page and the command line show from a user's file, link or option is text. A lesson's
Markdown image and an uploaded file's name never become markup that loads something; the command line prints a
file's escape sequences escaped; --url and EXPLORER_URL are web addresses; a link Streamlit cut short is said;
a lesson file may not replace a lesson of the explorer; fix --out is checked before any work."""

from __future__ import annotations

import json
from pathlib import Path

from hostile_graphs import good
from hostile_json import good_lesson
from security_support import cli, one_line_refusal

from explorer.present.markdown import escaped, without_images

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")
IMAGE = "![pixel](http://example.invalid/pixel.png)"
OSC52 = "\x1b]52;c;aGVsbG8=\x07"


def test_markdown_from_a_user_is_text():
    assert without_images(f"see {IMAGE} and ![b][ref]") == "see \\![pixel](http://example.invalid/pixel.png) and \\![b][ref]"
    assert without_images("**bold** and `code`") == "**bold** and `code`"
    name = escaped(f"{IMAGE}.json")
    assert "![" not in name and "](" not in name and name.endswith(".json")
    assert escaped("a\x1b[31mred") == "a\\\\x1b\\[31mred"  # shown as a\x1b[31mred


def _lesson_file(tmp_path, **fields) -> Path:
    data = good_lesson()
    data["steps"][0].update(fields)
    path = tmp_path / "lesson.json"
    path.write_text(json.dumps(data))
    return path


def test_the_command_line_prints_a_lesson_files_escape_sequences_escaped(tmp_path):
    path = _lesson_file(tmp_path, title=f"One {OSC52}", ask=f"Why {OSC52}?")
    out = cli("lessons", str(path), timeout=60)
    assert out.returncode == 0, out.stderr
    assert "\x1b" not in out.stdout and "\\x1b]52;c;aGVsbG8=\\x07" in out.stdout


def test_the_page_address_is_checked_as_an_http_url():
    for url, words in (("javascript:alert(1)", "is not an http(s) address"), ("http://a/\nx", "control character"),
                       ("http://a/#preset=x", "has a query or a '#'"), ("ftp://a", "is not an http(s) address")):
        line = one_line_refusal(cli("inspect", "matmul_bias_relu", "--link", "--url", url, timeout=60))
        assert "--url: " in line and words in line, line
    line = one_line_refusal(cli("inspect", "matmul_bias_relu", "--link", timeout=60,
                                env={"EXPLORER_URL": "javascript:alert(1)//"}))
    assert "EXPLORER_URL: " in line


def test_fix_out_in_a_missing_folder_is_refused_before_the_work(tmp_path):
    model = tmp_path / "m.pbtxt"
    model.write_bytes(good())
    line = one_line_refusal(cli("fix", "--model", str(model), "--out", "/missing/dir/x.pb", timeout=60))
    assert "--out: /missing/dir/x.pb: there is no folder /missing/dir" in line


def _page():
    from streamlit.testing.v1 import AppTest

    return AppTest.from_file(APP, default_timeout=300)


def test_the_page_shows_a_lessons_image_as_text_and_keeps_its_own_lessons(page_server):
    from explorer.ui import lessons

    at = _page().run()
    at.session_state[lessons.CHOICE] = lessons.OWN_FILE
    at.run()
    data = good_lesson()
    data["steps"][0].update(text=f"Look: {IMAGE}", ask=f"And {IMAGE}?")
    at.file_uploader(key=lessons.UPLOAD).set_value((f"{IMAGE}.json", json.dumps(data).encode(), "application/json"))
    at.run()
    assert not at.exception, at.exception
    rendered = [m.value for m in at.markdown]
    assert any("Look: \\![pixel]" in m for m in rendered), rendered
    assert not any("![pixel]" in m.replace("\\![", "") for m in rendered)

    seed = dict(data, id="gelu-fusion")
    at.session_state[lessons.CHOICE] = lessons.OWN_FILE
    at.run()
    at.file_uploader(key=lessons.UPLOAD).set_value((f"{IMAGE}.json", json.dumps(seed).encode(), "application/json"))
    at.run()
    errors = [e.value for e in at.error]
    assert any("'gelu-fusion' is a lesson that comes with the explorer" in e for e in errors), errors
    assert all("![" not in e.replace("\\![", "") for e in errors), errors
    assert "gelu-fusion" not in at.session_state[lessons.CUSTOM]


def test_a_link_streamlit_cut_short_is_said_on_the_page(page_server):
    at = _page()
    for i in range(1200):
        at.query_params[f"k{i}"] = "1"
    at.run()
    assert not at.exception
    said = [w.value for w in at.warning]
    assert any("did not read this link (1,200 parameters; Streamlit reads at most 1,000)" in w for w in said), said


def test_an_uploaded_files_name_is_shown_as_text(page_server):
    from explorer.ui import state

    at = _page()
    at.session_state[state.MODE] = "import"
    at.run()
    # a file's name holds no '/': its image loads from the page's own server
    at.file_uploader(key=state.UPLOAD).set_value(("![x](pixel.png).pb", b"\x00not a model\x00", "application/octet-stream"))
    at.run()
    assert not at.exception, at.exception
    said = [e.value for e in at.error] + [w.value for w in at.warning] + [c.value for c in at.caption]
    assert any("pixel" in s for s in said), said  # the refusal names the file
    assert not any("![" in s.replace("\\![", "") for s in said), said
