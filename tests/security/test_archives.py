"""One archive policy for every format, checked before anything unpacks; directories read as regular files only.

Findings 3, 5 and 6 of issue 20: a .keras file skipped the archive limits (Keras unpacked it into the
temp folder), the command line hung on a SavedModel directory holding a named pipe or a link to
/dev/zero, and zips that break Python's reader (a name marked UTF-8 that is not, a newer zip version)
raised tracebacks in the page's upload and the command line.
"""

from __future__ import annotations

import os
import shutil
import zipfile

import pytest
import hostile_zips as zips
from security_support import cli, leftovers, one_line_refusal

from explorer.engine.uploads import ModelFileError, save_upload, spec_for_path
from explorer.errors import SpecError
from explorer.model.flags import Config

pytestmark = pytest.mark.tf  # every test reads models TensorFlow made (the bases fixture)
CPU = Config.make("cpu", {})
MiB = 1 << 20


def keras_members(bases) -> list[tuple[str, bytes]]:
    with zipfile.ZipFile(bases / "tiny.keras") as archive:
        return [(name, archive.read(name)) for name in archive.namelist()]


def keras_variants(bases) -> dict[str, tuple[bytes, str]]:
    """name -> (.keras bytes, words the refusal must hold)."""
    members = keras_members(bases)
    weights = dict(members)["model.weights.h5"]
    lying = zips.patch(zips.make(members), "model.weights.h5", file_size=600 * MiB)
    return {
        "junk member": (zips.make(members + [("junk.bin", bytes(64 * MiB))]),
                        "member 'junk.bin' is not part of a .keras file"),
        "bomb weights": (zips.make([(n, d if n != "model.weights.h5" else weights + bytes(64 * MiB))
                                    for n, d in members]), "looks like a zip bomb"),
        "lying size": (lying, "member 'model.weights.h5' expands to 600 MiB; at most 512 MiB per member"),
        "zip slip": (zips.make(members + [("../escaped.txt", b"x")]), "'..' in a path is refused"),
        "link": (zips.make(members + [(zips.link("assets/link"), b"/etc/passwd")]), "a symbolic link is refused"),
    }


def worker_spec(path, fmt: str) -> dict:
    """A spec straight to the worker, past the parent's checks: the worker must hold the line by itself."""
    return {"import": {"path": str(path), "format": fmt, "digest": "e" * 64, "name": path.name}}


def test_keras_files_are_held_to_the_archive_policy_before_anything_unpacks(engine, bases, temp_root, tmp_path):
    for case, (data, words) in keras_variants(bases).items():
        with pytest.raises(ModelFileError, match=words.replace("(", r"\(").replace(")", r"\)")):
            save_upload(str(tmp_path), f"{case}.keras", data, allow_programs=True)  # the page's upload
        path = tmp_path / "model.keras"
        path.write_bytes(data)
        with pytest.raises(ModelFileError) as refused:  # the command line's check
            spec_for_path(str(path))
        assert words in str(refused.value), (case, str(refused.value))
        with pytest.raises(SpecError) as refused:  # the worker's own, given the file directly
            engine.inspect(worker_spec(path, "keras"), CPU, use_cache=False)
        assert words in str(refused.value), (case, str(refused.value))
        assert leftovers(temp_root) == [], case
        assert not [p for p in temp_root.rglob("*") if p.name in ("junk.bin", "model.weights.h5", "escaped.txt")]
    assert not (tmp_path.parent / "escaped.txt").exists()
    assert os.listdir(tmp_path) == ["model.keras"]  # the page kept nothing it refused


def savedmodel_copy(bases, tmp_path, name: str):
    directory = tmp_path / name
    shutil.copytree(bases / "tiny_savedmodel", directory)
    return directory


@pytest.mark.parametrize("case", ["named pipe", "link to /dev/zero", "link outside"])
def test_the_command_line_refuses_a_savedmodel_directory_holding_a_pipe_or_link(bases, tmp_path, case):
    directory = savedmodel_copy(bases, tmp_path, "sm")
    data = next((directory / "variables").glob("variables.data-*"))
    data.unlink()
    if case == "named pipe":
        os.mkfifo(data)
    else:
        os.symlink("/dev/zero" if case == "link to /dev/zero" else "/etc/passwd", data)
    line = one_line_refusal(cli("inspect", "--model", str(directory), "--no-cache"), 2)
    kind = "a named pipe" if case == "named pipe" else "a symbolic link"
    assert f"member 'variables/{data.name}': {kind} is refused" in line, line


def test_the_worker_copies_only_regular_files_of_a_savedmodel_directory(engine, bases, temp_root, tmp_path):
    directory = savedmodel_copy(bases, tmp_path, "sm")
    os.mkfifo(directory / "variables" / "extra.fifo")
    with pytest.raises(SpecError, match="member 'variables/extra.fifo': a named pipe is refused"):
        engine.inspect(worker_spec(directory, "savedmodel"), CPU, use_cache=False)
    assert leftovers(temp_root) == []
    os.unlink(directory / "variables" / "extra.fifo")
    assert engine.inspect(spec_for_path(str(directory)), CPU, use_cache=False)["output_shapes"] == [[1, 2]]


def broken_zips(bases) -> dict[str, tuple[bytes, str]]:
    members = zips.of_directory(bases / "tiny_savedmodel")
    good = zips.make(members)
    pb = "model/saved_model.pb"
    damaged = bytearray(zips.make(members, zipfile.ZIP_DEFLATED))
    start = damaged.index(b"saved_model.pb") + len("saved_model.pb") + 40
    damaged[start:start + 8] = b"\xff" * 8
    return {
        "name marked UTF-8, not UTF-8": (zips.rename(good, pb, b"model/saved_model\xff\xfe\xfd"),
                                         "marked as UTF-8 but is not valid UTF-8"),
        "zip version 9.9": (zips.patch(good, pb, extract_version=99), "needs a newer zip reader (zip file version 9.9)"),
        "zip version 6.3": (zips.patch(good, pb, extract_version=63), "needs zip version 6.3 to extract"),
        "compression 14": (zips.patch(good, pb, compress_type=14), "compression method 14 is refused"),
        "encrypted": (zips.patch(good, pb, flag_bits=1), "an encrypted member is refused"),
        "pipe member": (zips.make(members + [(zips.fifo("model/pipe"), b"")]), "a named pipe is refused"),
        "newline in name": (zips.make(members + [("model/a\nb", b"x")]), r"member 'model/a\nb': a control character"),
        "2001 members": (zips.make(members + [(f"model/x{i}", b"") for i in range(2001)]), "at most 2,000 are taken"),
        "truncated": (good[: len(good) // 2], "a damaged or truncated zip file"),
        "damaged data": (bytes(damaged), "is damaged"),
    }


def test_zips_that_break_the_reader_get_one_line_from_the_page_and_the_command_line(bases, tmp_path):
    (tmp_path / "session").mkdir()
    for case, (data, words) in broken_zips(bases).items():
        path = tmp_path / "model.zip"
        path.write_bytes(data)
        try:
            save_upload(str(tmp_path / "session"), "model.zip", data, allow_programs=True)
            page = None
        except ModelFileError as exc:
            page = str(exc)
        if case == "damaged data":  # its directory is sound: the worker finds the damage as it unpacks (below)
            assert page is None, page
            continue
        assert page is not None and words in page and "\n" not in page, (case, page)
        line = one_line_refusal(cli("inspect", "--model", str(path), "--no-cache"), 2)
        assert words in line, (case, line)


def test_the_worker_finds_damage_a_zips_directory_hides(engine, bases, temp_root, tmp_path):
    data, words = broken_zips(bases)["damaged data"]
    path = tmp_path / "damaged.zip"
    path.write_bytes(data)
    with pytest.raises(SpecError, match=words):
        engine.inspect(worker_spec(path, "savedmodel"), CPU, use_cache=False)
    assert leftovers(temp_root) == []
