"""Issue 30: every file the explorer writes for a session counts against its quota and goes with it; a server's
sessions see only that server's uploads; a clean shutdown (SIGTERM) leaves nothing in the temporary folder; a
digest with a trailing newline is malformed, not "no longer kept"."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from hostile_graphs import good

from explorer.engine import uploads
from explorer.errors import SpecError
from explorer.model.imported import resolve_import

ROOT = Path(__file__).resolve().parents[2]


def _fixed_folder(session: Path, name: str, size: int) -> Path:
    """What Try the fixes writes: a folder in the session's folder holding the fixed model."""
    folder = session / name
    folder.mkdir()
    (folder / "model-fixed.pb").write_bytes(b"#" * size)
    return folder


def test_a_fixed_model_counts_against_the_sessions_quota(tmp_path, monkeypatch):
    session = tmp_path / "session"
    session.mkdir()
    for i in range(uploads.SESSION_MAX_FILES):
        uploads.save_upload(str(session), f"m{i}.pbtxt", good(float(i + 2)))
        time.sleep(0.01)
    for i in range(3):  # three clicks of Try the fixes
        uploads.keep_written(session, _fixed_folder(session, f"fixed-{i}", 1000))
        time.sleep(0.01)
    entries = sorted(session.iterdir(), key=lambda p: p.stat().st_mtime)
    assert len(entries) == uploads.SESSION_MAX_FILES
    assert [p.name for p in entries[-3:]] == ["fixed-0", "fixed-1", "fixed-2"]  # the oldest uploads went
    monkeypatch.setattr(uploads, "SESSION_MAX_BYTES", 1 << 20)
    big = _fixed_folder(session, "fixed-big", 2 << 20)
    with pytest.raises(uploads.ModelFileError, match="2 MiB; a session keeps at most 1 MiB"):
        uploads.keep_written(session, big)
    assert not big.exists()
    uploads.keep_written(session, _fixed_folder(session, "fixed-half", 600 << 10))
    assert sum(f.stat().st_size for f in session.rglob("*") if f.is_file()) <= 1 << 20


def test_a_digest_with_a_trailing_newline_is_malformed():
    digest = "a" * 64
    with pytest.raises(SpecError, match="64 hex digits"):
        resolve_import({"format": "graphdef", "digest": digest + "\n"})
    assert uploads.kept_upload("/nonexistent", digest + "\n") is None


SERVER = textwrap.dedent("""
    import sys, time
    from explorer.engine import uploads
    from tests.security.hostile_graphs import good
    folder = uploads.SessionFolder()
    spec = uploads.save_upload(folder.path, "m.pbtxt", good(7.0))
    print(spec["import"]["digest"], flush=True)
    sys.stdin.readline()
""")


def test_a_servers_sessions_see_only_its_own_uploads(tmp_path, monkeypatch):
    """Two servers of one user (two processes sharing EXPLORER_UPLOAD_DIR): a link's digest is found only among
    the sessions of the server that was asked."""
    monkeypatch.setenv("EXPLORER_UPLOAD_DIR", str(tmp_path))
    other = subprocess.Popen([sys.executable, "-c", SERVER], cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        digest = other.stdout.readline().strip()
        assert len(digest) == 64
        mine = uploads.SessionFolder()
        assert uploads.adopt_upload(mine.path, digest) is None  # another server's upload: not found here
        neighbour = uploads.SessionFolder()  # a session of this server finds what this server keeps
        uploads.save_upload(neighbour.path, "m.pbtxt", good(7.0))
        assert uploads.adopt_upload(mine.path, digest)["import"]["digest"] == digest
    finally:
        other.stdin.close()
        other.wait(timeout=30)
    servers = [p.name for p in tmp_path.iterdir()]
    assert servers == [uploads.server_root().name], servers  # the other server's folder went with it


@pytest.mark.tf
def test_sigterm_leaves_nothing_in_the_temporary_folder(tmp_path):
    """The server as ./dev.sh app starts it: its engine's worker writes graph dumps; SIGTERM stops it cleanly."""
    temp, uploads_dir = tmp_path / "tmp", tmp_path / "uploads"
    temp.mkdir()
    env = {**os.environ, "TMPDIR": str(temp), "EXPLORER_UPLOAD_DIR": str(uploads_dir),
           "EXPLORER_CACHE_DIR": str(tmp_path / "cache")}
    server = subprocess.Popen([sys.executable, "-m", "explorer.ui.serve", "--server.headless", "true",
                               "--server.port", "0"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while not list(temp.glob("explorer-worker-*/dumps/*.pb")) and time.monotonic() < deadline:
            time.sleep(1)
        assert list(temp.glob("explorer-worker-*/dumps/*.pb")), "the server's worker wrote no graph dump"
        server.send_signal(signal.SIGTERM)
        server.wait(timeout=60)
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGKILL)
    left = [str(p.relative_to(temp)) for p in temp.rglob("*")]
    assert left == [], left
    assert not uploads_dir.exists() or not list(uploads_dir.rglob("*"))
