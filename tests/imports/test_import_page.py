"""The page's "an imported model": real uploads through AppTest's file uploader, the real engine.

What fuses is compared with TensorFlow run directly on the same file (conftest's oracle); refused
uploads are explained and the session goes on; one session's upload is not another's.
"""

from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path

import pytest

from explorer.engine import uploads
from explorer.ui import state

pytestmark = [pytest.mark.tf, pytest.mark.slow]
APP = str(Path(__file__).resolve().parents[2] / "app.py")


@pytest.fixture(scope="module", autouse=True)
def _page_engine(tmp_path_factory):
    old = {k: os.environ.get(k) for k in ("EXPLORER_CACHE_DIR", "EXPLORER_UPLOAD_DIR")}
    os.environ["EXPLORER_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))
    os.environ["EXPLORER_UPLOAD_DIR"] = str(tmp_path_factory.mktemp("uploads"))
    yield
    from explorer.ui import cached

    cached.shutdown()
    for key, value in old.items():
        os.environ.pop(key) if value is None else os.environ.__setitem__(key, value)


def page(onednn: str = "0"):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=300)
    at.session_state[state.MODE] = "import"
    at.session_state[state.env_key("TF_ENABLE_ONEDNN_OPTS")] = onednn
    return at.run()


def upload(at, name: str, data: bytes):
    at.file_uploader(key=state.UPLOAD).set_value((name, data, "application/octet-stream"))
    return at.run()


def texts(at) -> str:
    return "\n".join([e.value for e in at.error] + [m.value for m in at.markdown] + [i.value for i in at.info])


def fused_total(counts: dict) -> int:
    return sum(n for op, n in counts.items() if op.startswith("_Fused"))


def test_a_graphdef_upload_shows_what_tensorflow_fuses(models, direct_counts):
    at = page("0")
    assert not at.exception and "Upload a model file" in texts(at)
    at = upload(at, "small.pb", (models / "small.pb").read_bytes())
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    fused = fused_total(direct_counts["0"]["small"]["graphdef"])
    assert f"**{fused} fusions** found by Grappler" in texts(at)
    assert "small.pb (GraphDef)" in texts(at)
    # The upload lives in this session's own directory, under its content digest.
    directory = at.session_state[state.UPLOAD_DIR]
    assert Path(directory).parent == Path(os.environ["EXPLORER_UPLOAD_DIR"])
    assert [p.suffix for p in Path(directory).iterdir()] == [".pb"]
    other = page("0")
    other = upload(other, "small.pb", (models / "small.pb").read_bytes())
    assert other.session_state[state.UPLOAD_DIR] != directory  # another session, another directory


def test_refused_uploads_are_explained_and_the_session_goes_on(models):
    at = page("0")
    saved_model = io.BytesIO()
    with zipfile.ZipFile(saved_model, "w") as archive:
        for path in (models / "small_savedmodel").rglob("*"):
            if path.is_file():
                archive.write(path, str(path.relative_to(models)))
    at = upload(at, "model.zip", saved_model.getvalue())
    assert not at.exception
    assert f"{uploads.ALLOW_SETTING}=1" in texts(at) and "The upload was refused" in texts(at)
    for name, data, words in (
        ("empty.pb", b"", "the file is empty (0 bytes)"),
        ("notes.pb", b"just some notes\n" * 10, "a text file, but not a GraphDef"),
        ("writefile.pb", (models / "writefile.pb").read_bytes(), "op WriteFile (node 'WriteFile' in graph)"),
    ):
        at = upload(at, name, data)
        assert not at.exception
        assert words in texts(at), texts(at)
    assert at.session_state[state.MODE] == "import"
    # The server keeps serving: the next upload in the same session runs.
    at = upload(at, "small.pb", (models / "small.pb").read_bytes())
    assert not at.error and "fusions** found by Grappler" in texts(at)


def test_savedmodel_and_keras_uploads_when_the_server_allows_them(models, direct_counts, monkeypatch):
    monkeypatch.setenv(uploads.ALLOW_SETTING, "1")
    at = page("1")
    at = upload(at, "small.keras", (models / "small.keras").read_bytes())
    assert not at.exception and not at.error, [e.value for e in at.error]
    fused = fused_total(direct_counts["1"]["small"]["keras"])
    assert f"**{fused} fusions** found by Grappler" in texts(at) and "oneDNN on" in texts(at)
    at = upload(at, "lambda.keras", (models / "lambda.keras").read_bytes())
    assert "layer Lambda (named 'doubler' in config.json)" in texts(at)
