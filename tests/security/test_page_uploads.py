"""The page's uploads on a shared server: a refusal shown once, a quota per session, nothing kept for long.

Findings 7 (the page's half) and 8 of issue 20: the page printed a .keras refusal twice ("a Keras is a
program"), one session kept 159 files (97 MB) in its upload folder and nothing removed them, and
Streamlit's upload limit was its default, not pinned to the explorer's 200 MiB. The page runs in
Streamlit's AppTest on the real engine; the quota is that of the upload function the page calls.
"""

from __future__ import annotations

import gc
import os
import time
import tomllib
from pathlib import Path

import pytest
from hostile_graphs import good

from explorer.engine import uploads
from explorer.model.imported import MAX_UPLOAD_BYTES
from explorer.ui import state

ROOT = Path(__file__).resolve().parents[2]
APP = str(ROOT / "app.py")


@pytest.fixture
def upload_root(page_server):
    return page_server


def page():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=300)
    at.session_state[state.MODE] = "import"
    return at.run()


def upload(at, name: str, data: bytes):
    at.file_uploader(key=state.UPLOAD).set_value((name, data, "application/octet-stream"))
    return at.run()


def shown(at) -> list[str]:
    """Every message the page shows, sidebar included."""
    return [e.value for e in at.error] + [w.value for w in at.warning] + [c.value for c in at.caption]


@pytest.mark.tf
def test_a_refused_upload_is_shown_once_in_one_line(upload_root, bases, monkeypatch):
    monkeypatch.delenv(uploads.ALLOW_SETTING, raising=False)
    at = upload(page(), "tiny.keras", (bases / "tiny.keras").read_bytes())
    assert not at.exception
    refusals = [m for m in shown(at) if "is a program" in m]
    assert len(refusals) == 1, refusals
    assert "a Keras .keras file is a program" in refusals[0] and "a Keras is" not in refusals[0]
    assert "\n" not in refusals[0]
    assert not list(Path(at.session_state[state.UPLOAD_DIR]).iterdir())  # nothing kept of it
    at = upload(at, "good.pbtxt", good())  # the session goes on
    assert not at.exception and not at.error, [e.value for e in at.error]


def test_a_session_keeps_at_most_its_quota_oldest_first(tmp_path, monkeypatch):
    session = tmp_path / "session"
    session.mkdir()
    kept = []
    for i in range(uploads.SESSION_MAX_FILES + 5):
        spec = uploads.save_upload(str(session), f"m{i}.pbtxt", good(float(i + 2)) + b"#" * (i + 1))
        kept.append(Path(spec["import"]["path"]))
        time.sleep(0.01)  # distinct modification times, oldest first
    files = sorted(session.iterdir())
    assert len(files) == uploads.SESSION_MAX_FILES
    assert set(files) == set(kept[-uploads.SESSION_MAX_FILES:])  # the newest kept, the oldest evicted
    # Bytes count as well as files: big uploads push the older ones out (a 1 MiB quota keeps the test light).
    monkeypatch.setattr(uploads, "SESSION_MAX_BYTES", 1 << 20)
    big = good() + b"#" * (300 << 10)
    for i in range(4):
        uploads.save_upload(str(session), f"big{i}.pbtxt", big + b"#" * i)
        time.sleep(0.01)
    assert sum(p.stat().st_size for p in session.iterdir()) <= 1 << 20
    assert len(list(session.iterdir())) == 3


def test_session_folders_are_removed_by_age(upload_root):
    old = uploads.SessionFolder()
    young = uploads.SessionFolder()
    (Path(old.path) / "x.pb").write_bytes(b"x")
    stale = time.time() - uploads.SESSION_MAX_AGE_S - 60
    os.utime(old.path, (stale, stale))
    fresh = uploads.SessionFolder()  # a new session sweeps the folders of sessions long gone
    assert not os.path.exists(old.path) and os.path.isdir(young.path) and os.path.isdir(fresh.path)


@pytest.mark.tf
def test_a_sessions_folder_goes_when_the_session_ends(upload_root):
    at = upload(page(), "good.pbtxt", good())
    assert not at.exception and not at.error, [e.value for e in at.error]
    directory = Path(at.session_state[state.UPLOAD_DIR])
    assert [p.suffix for p in directory.iterdir()] == [".pbtxt"]
    del at
    gc.collect()  # Streamlit drops a closed session's state; its folder goes with it
    assert not directory.exists()


def test_streamlits_upload_limit_is_the_explorers():
    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["maxUploadSize"] == MAX_UPLOAD_BYTES >> 20  # Streamlit's megabytes are MiB


@pytest.mark.tf
def test_a_server_on_loopback_takes_every_format_and_one_others_reach_graphdef_only(upload_root, bases, monkeypatch):
    """`./dev.sh app` refused SavedModel and .keras uploads on the developer's own machine. The rule: a server
    that listens on loopback only takes all three formats; beyond it, GraphDef only, unless its starter says."""
    from streamlit import config

    monkeypatch.delenv(uploads.ALLOW_SETTING, raising=False)
    before = config.get_option("server.address")
    try:
        config.set_option("server.address", "127.0.0.1")
        at = upload(page(), "tiny.keras", (bases / "tiny.keras").read_bytes())
        assert not at.exception
        assert not [m for m in shown(at) if "is a program" in m], shown(at)
        assert at.session_state[state.IMPORT_KEPT]["format"] == "keras"
        monkeypatch.setenv(uploads.ALLOW_SETTING, "0")  # the starter's word wins, even on loopback
        at = upload(page(), "tiny.keras", (bases / "tiny.keras").read_bytes())
        assert [m for m in shown(at) if "is a program" in m]
        monkeypatch.delenv(uploads.ALLOW_SETTING)
        config.set_option("server.address", "0.0.0.0")  # others can reach it
        at = upload(page(), "tiny.keras", (bases / "tiny.keras").read_bytes())
        assert [m for m in shown(at) if "is a program" in m]
        assert any("which others can reach" in m for m in shown(at))
    finally:
        config.set_option("server.address", before)


@pytest.mark.parametrize("address,loopback", [("127.0.0.1", True), ("::1", True), ("[::1]", True),
                                              ("localhost", True), ("127.1.2.3", True), ("0.0.0.0", False),
                                              ("", False), (None, False), ("10.0.0.5", False), ("example.org", False)])
def test_which_addresses_are_loopback(address, loopback):
    assert uploads.listens_on_loopback(address) is loopback
