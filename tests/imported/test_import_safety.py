"""Malicious and broken models are refused with a clear message, nothing escapes, and serving goes on.

Models that write or read files (in the graph, hidden in a library function, in a SavedModel's
signature or in a function it calls), a .keras file with a Lambda layer, zips with '..' or a
symbolic link, a truncated, an empty and a text file called .pb, and a SavedModel uploaded to a
server that does not take them.
"""

from __future__ import annotations

import io
import os
import stat
import tempfile
import zipfile

import pytest

from explorer.engine import uploads
from explorer.engine.uploads import ModelFileError, save_upload, spec_for_path
from explorer.errors import SpecError
from explorer.model.flags import Config

pytestmark = pytest.mark.tf
CPU = Config.make("cpu", {"TF_ENABLE_ONEDNN_OPTS": "0"})


def zip_of(directory) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for root, _, files in os.walk(directory):
            for name in files:
                full = os.path.join(root, name)
                archive.write(full, os.path.relpath(full, os.path.dirname(directory)))
    return buffer.getvalue()


@pytest.mark.parametrize("name,words", [
    ("writefile.pb", ["op WriteFile (node 'WriteFile' in graph)", "writes files"]),
    ("readfile_in_function.pb", ["op ReadFile (node 'ReadFile' in function __inference_inner_", "reads files"]),
    ("writefile_savedmodel", ["op WriteFile (node 'WriteFile' in function __inference_serve_"]),
    ("readfile_savedmodel", ["op ReadFile (node 'ReadFile' in function __inference_inner_"]),
    ("lambda.keras", ["layer Lambda (named 'doubler' in config.json)"]),
])
def test_a_model_that_touches_files_or_runs_python_is_refused_before_it_runs(engine, models, name, words):
    with pytest.raises(SpecError) as refused:
        engine.inspect(spec_for_path(str(models / name)), CPU)
    message = str(refused.value)
    assert "refused before anything ran" in message
    for word in words:
        assert word in message
    assert sorted(os.listdir(models / "victim")) == ["secret.txt"]  # nothing written
    # The worker keeps serving: the next request on the same configuration works.
    assert engine.inspect(spec_for_path(str(models / "small.pb")), CPU)["fusions"]


@pytest.mark.parametrize("name", ["text_savedmodel", "text.keras"])
def test_a_text_model_is_refused_in_one_line_that_says_how_to_bring_its_numeric_part(engine, models, name):
    with pytest.raises(SpecError) as refused:
        engine.inspect(spec_for_path(str(models / name)), CPU)
    message = str(refused.value)
    assert "\n" not in message and "Traceback" not in message
    assert "The model holds text preprocessing" in message and "keras.Model(the vectorizer's output" in message
    if name == "text_savedmodel":  # each kind of problem once: the text ops by name after the first, not fifteen times
        assert message.count("text preprocessing (strings, lookup tables)") == 1, message
        assert "StringSplitV2" in message and "LookupTableFindV2" in message


def test_uploads_of_programs_are_off_unless_the_server_allows_them(models, tmp_path):
    data = zip_of(models / "small_savedmodel")
    with pytest.raises(ModelFileError, match=f"{uploads.ALLOW_SETTING}=1"):
        save_upload(str(tmp_path), "model.zip", data, allow_programs=False)
    with pytest.raises(ModelFileError, match="only GraphDef uploads"):
        save_upload(str(tmp_path), "m.keras", (models / "small.keras").read_bytes(), allow_programs=False)
    assert os.listdir(tmp_path) == []
    spec = save_upload(str(tmp_path), "model.zip", data, allow_programs=True)
    assert spec["import"]["format"] == "savedmodel" and os.listdir(tmp_path) == [spec["import"]["digest"] + ".zip"]


def _evil_zip(models, member: zipfile.ZipInfo, payload: bytes) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr("model/saved_model.pb", (models / "small_savedmodel" / "saved_model.pb").read_bytes())
        archive.writestr(member, payload)
    return buffer.getvalue()


def test_zips_with_dotdot_or_a_symlink_are_refused_and_write_nothing(engine, models, tmp_path):
    session = tmp_path / "session"
    session.mkdir()
    dotdot = _evil_zip(models, zipfile.ZipInfo("model/../../escaped.txt"), b"x")
    link = zipfile.ZipInfo("model/variables")
    link.create_system = 3
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    symlink = _evil_zip(models, link, b"/etc")
    absolute = _evil_zip(models, zipfile.ZipInfo("/tmp/escaped.txt"), b"x")
    for data, words in ((dotdot, "'..' in a path is refused"), (symlink, "a symbolic link is refused"),
                        (absolute, "an absolute path is refused")):
        with pytest.raises(ModelFileError, match=words):
            save_upload(str(session), "evil.zip", data, allow_programs=True)
    assert os.listdir(session) == [] and not (tmp_path / "escaped.txt").exists()
    # The worker's own extraction refuses them too, whatever reached it (a path given on the command line).
    (tmp_path / "evil.zip").write_bytes(dotdot)
    spec = {"import": {"path": str(tmp_path / "evil.zip"), "format": "savedmodel", "digest": "0" * 64}}
    with pytest.raises(SpecError, match="'..' in a path is refused"):
        engine.inspect(spec, CPU)
    assert not (tmp_path / "escaped.txt").exists()
    assert engine.inspect(spec_for_path(str(models / "small.pb")), CPU)["fusions"]


def test_broken_files_get_a_message_naming_what_was_expected(engine, models, tmp_path):
    good = (models / "small.pb").read_bytes()
    with pytest.raises(ModelFileError, match=r"empty \(0 bytes\).*expected a GraphDef"):
        save_upload(str(tmp_path), "empty.pb", b"")
    with pytest.raises(ModelFileError, match="a text file, but not a GraphDef in text format"):
        save_upload(str(tmp_path), "notes.pb", b"These are my notes, not a model.\n" * 20)
    # A truncated GraphDef still starts like one: the worker's parser finds out, and says so.
    truncated = save_upload(str(tmp_path), "truncated.pb", good[: len(good) // 2])
    with pytest.raises(SpecError, match="truncated or not a binary protobuf.*expected a GraphDef"):
        engine.inspect(truncated, CPU)
    pbtxt = tmp_path / "text.pbtxt"
    pbtxt.write_text("node { name: 'x' op: 'Placeholder' attr { key: 'dtype' value { type: DT_FLOAT } } "
                     "attr { key: 'shape' value { shape { dim { size: -1 } dim { size: 3 } } } } }\n"
                     "node { name: 'y' op: 'Relu' input: 'x' attr { key: 'T' value { type: DT_FLOAT } } }\n")
    result = engine.inspect(spec_for_path(str(pbtxt), unknown_dim=5), CPU)
    assert result["output_shapes"] == [[5, 3]]


def test_the_workers_temporary_directory_is_removed(engine, models):
    """The worker loads each model in a directory of its own under the temp dir, and removes it."""
    temp = tempfile.gettempdir()  # the worker inherits TMPDIR from this process
    before = {p for p in os.listdir(temp) if p.startswith("explorer-model-")}
    spec = spec_for_path(str(models / "small.keras"), unknown_dim=3)  # a new identity: loaded afresh
    engine.inspect(dict(spec, **{"import": dict(spec["import"], digest="1" * 64)}), CPU)
    after = {p for p in os.listdir(temp) if p.startswith("explorer-model-")}
    assert after <= before
