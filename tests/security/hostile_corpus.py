"""The hostile-input corpus: about a hundred broken and malicious models, generated (no binary blob committed).

``build(directory, bases)`` writes every case under ``directory`` from hand-written GraphDefs (hostile_graphs.py),
forged zips (hostile_zips.py) and the real models make_bases.py exported, and returns the cases. A case names
what it is, where it lies, whether the page can take it (a file; the command line also takes
directories) and what must come of it: ``ok`` (the good models, run before and after the hostile ones)
or a refusal holding ``words``. Every hostile file that would touch the disk aims at ``VICTIM``.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

import hostile_zips as zips
from hostile_graphs import (binary, call, const, function, good, graph, node, placeholder, q, unary, write_file)

VICTIM = "/tmp/explorer-hostile-written"
MiB = 1 << 20
# What the tests run through the command line, a process each (a TensorFlow import each for those that
# reach a worker): a refusal of each kind, before and in the worker, and a good model.
CLI_SUBSET = ("good.pbtxt", "writefile_partitioned.pbtxt", "twice_bad_first.pbtxt", "const_1e12.pbtxt",
              "nested_text.pbtxt", "bad_utf8_name.zip", "version_9_9.zip", "slip.zip", "junk_member.keras",
              "fifo_dir", "dev_zero_dir", "empty.pb")


@dataclass(frozen=True)
class Case:
    name: str
    path: Path
    expect: str  # "ok" or "refused"
    words: str = ""  # what the refusal must say
    page: bool = True  # a file the page's upload takes (directories go through the command line only)


def _harmless(name: str = "f") -> str:
    return function(name, [unary("r", "Relu", "x")], "r:activations:0")


def _writing(name: str = "f") -> str:
    return function(name, write_file("w", VICTIM) + [unary("r", "Relu", "x")], "r:activations:0")


def _called(op: str = "PartitionedCall", name: str = "f") -> list[str]:
    return [placeholder(), call("c", name, "x", op=op), unary("y", "Relu", "c")]


def _while(name: str, body: str) -> str:
    attrs = ('attr { key: "T" value { list { type: DT_FLOAT } } } '
             'attr { key: "cond" value { func { name: "cond" } } } '
             f'attr {{ key: "body" value {{ func {{ name: {q(body)} }} }} }}')
    return node(name, "While", "x", attrs=attrs)


def _branching(op: str, condition: str) -> str:
    """An If (then f, else g) or a Case (branches g, f) over x."""
    if op == "If":
        funcs = ('attr { key: "then_branch" value { func { name: "f" } } } '
                 'attr { key: "else_branch" value { func { name: "g" } } }')
    else:
        funcs = 'attr { key: "branches" value { list { func { name: "g" } func { name: "f" } } } }'
    types = ('attr { key: "Tin" value { list { type: DT_FLOAT } } } '
             'attr { key: "Tout" value { list { type: DT_FLOAT } } }'
             + (' attr { key: "Tcond" value { type: DT_FLOAT } }' if op == "If" else ""))
    return node("y", op, condition, "x", attrs=f"{types} {funcs}")


def _binary_noops(count: int) -> bytes:
    """A binary GraphDef of ``count`` NoOp nodes, encoded by hand (field 1: NodeDef{1: name, 2: op})."""
    def field(number: int, payload: bytes) -> bytes:
        size, varint = len(payload), b""
        while True:
            varint += bytes([(size & 0x7F) | (0x80 if size > 0x7F else 0)])
            size >>= 7
            if not size:
                break
        return bytes([number << 3 | 2]) + varint + payload
    return b"".join(field(1, field(1, f"n{i}".encode()) + field(2, b"NoOp")) for i in range(count))


def graphdefs(bases: Path) -> dict[str, tuple[bytes, str]]:
    """name -> (file content, words of the refusal; "" for a model that must run)."""
    sizes = const("shape", [100000, 100000], kind="DT_INT64")
    f32 = 'attr { key: "dtype" value { type: DT_FLOAT } } attr { key: "T" value { type: DT_INT64 } }'
    deep = [function(f"f{i}", [call("c", f"f{i + 1}", "x")], "c:output:0") for i in range(199)] + [_harmless("f199")]
    doubling = [function(f"d{i}", [call("a", f"d{i + 1}", "x"), call("b", f"d{i + 1}", "a:output:0")],
                         "b:output:0") for i in range(40)] + [_harmless("d40")]
    nested = 'attr { key: "k" value { func { name: "f" ' * 5000 + "} } }" * 5000
    tiny = (bases / "tiny.pb").read_bytes()
    return {
        "good.pbtxt": (good(), ""),
        "good_called.pbtxt": (graph(_called(), [_harmless()]), ""),
        "tiny.pb": (tiny, ""),
        "writefile.pbtxt": (graph([placeholder()] + write_file("w", VICTIM) + [unary("y", "Relu", "x")]),
                            "op WriteFile (node 'w' in graph): writes files"),
        "readfile.pbtxt": (graph([placeholder(), const("p", ["/etc/passwd"], dims=[], kind="DT_STRING"),
                                  node("r", "ReadFile", "p"), unary("y", "Relu", "x")]), "op ReadFile (node 'r'"),
        "writefile_partitioned.pbtxt": (graph(_called(), [_writing()]), "op WriteFile (node 'w' in function f)"),
        "writefile_stateful.pbtxt": (graph(_called("StatefulPartitionedCall"), [_writing()]), "op WriteFile"),
        "writefile_direct.pbtxt": (graph(_called("f"), [_writing()]), "op WriteFile (node 'w' in function f)"),
        "writefile_nested.pbtxt": (graph(_called(name="outer"), [function("outer", [call("c", "f", "x")],
                                                                          "c:output:0"), _writing()]), "op WriteFile"),
        "writefile_while_body.pbtxt": (graph([placeholder(), _while("w", "f"), unary("y", "Relu", "w")],
                                             [_writing(), function("cond", [const("t", [1.0], dims=[])],
                                                                   "t:output:0")]), "op WriteFile"),
        "writefile_uncalled.pbtxt": (graph([placeholder(), unary("y", "Relu", "x")], [_writing("never")]),
                                     "op WriteFile (node 'w' in function never)"),
        "pyfunc.pbtxt": (graph([placeholder(), node("p", "PyFunc", "x"), unary("y", "Relu", "x")]), "calls Python"),
        "custom_op.pbtxt": (graph([placeholder(), node("p", "MyCustomKernel", "x"), unary("y", "Relu", "x")]),
                            "an unknown op"),
        "matching_files.pbtxt": (graph([placeholder(), const("g", ["/*"], dims=[], kind="DT_STRING"),
                                        node("m", "MatchingFiles", "g"), unary("y", "Relu", "x")]), "reads files"),
        "missing_function.pbtxt": (graph(_called(name="absent")), "op PartitionedCall (node 'c' in graph): names "
                                                                  "function 'absent'"),
        "twice_bad_first.pbtxt": (graph(_called(), [_writing(), _harmless()]), "function 'f' twice"),
        "twice_good_first.pbtxt": (graph(_called(), [_harmless(), _writing()]), "function 'f' twice"),
        "recursive.pbtxt": (graph(_called(), [function("f", [call("c", "f", "x")], "c:output:0")]), "calls itself"),
        "mutual.pbtxt": (graph(_called(), [function("f", [call("c", "g", "x")], "c:output:0"),
                                           function("g", [call("c", "f", "x")], "c:output:0")]), "in a cycle"),
        "while_itself.pbtxt": (graph([placeholder(), _while("w", "body"), unary("y", "Relu", "w")],
                                     [function("body", [_while("inner", "body")], "inner:output:0"),
                                      function("cond", [const("t", [1.0], dims=[])], "t:output:0")]), "calls itself"),
        "deep_calls.pbtxt": (graph(_called(name="f0"), deep), "calls nest 200 deep"),
        "doubling_calls.pbtxt": (graph(_called(name="d0"), doubling), "once its function calls are inlined"),
        "writefile_if_branch.pbtxt": (graph([placeholder(), const("p", [1.0], dims=[]), _branching("If", "p")],
                                            [_writing(), _harmless("g")]), "op WriteFile (node 'w' in function f)"),
        "writefile_case_branch.pbtxt": (graph([placeholder(), const("i", [0], dims=[], kind="DT_INT32"),
                                               _branching("Case", "i")], [_harmless("g"), _writing()]), "op WriteFile"),
        "writefile_in_attr_of_attr.pbtxt": (graph([placeholder(), node("y", "Identity", "x", attrs=(
            'attr { key: "T" value { type: DT_FLOAT } } attr { key: "hidden" value { func { name: "g" attr { key: '
            '"inner" value { func { name: "f" } } } } } }'))], [_writing(), _harmless("g")]), "op WriteFile"),
        "gradient_missing.pbtxt": (graph(_called(), [_harmless()]).replace(
            b"\n}\nversions", b'\ngradient { function_name: "f" gradient_func: "nowhere" }\n}\nversions'),
                                   "gradient entry names function 'nowhere'"),
        "nameless_function.pbtxt": (graph(_called(), [_harmless(), _harmless("")]), "a function with no name"),
        "tile_2e8.pbtxt": (graph([placeholder(), const("m", [100000000], kind="DT_INT64"),
                                  node("big", "Tile", "x", "m", attrs='attr { key: "T" value { type: DT_FLOAT } }'),
                                  unary("y", "Relu", "x")]), "op Tile (node 'big' in graph) asks for"),
        "broadcast_1e10.pbtxt": (graph([placeholder(), sizes, node("big", "BroadcastTo", "x", "shape", attrs=(
            'attr { key: "T" value { type: DT_FLOAT } } attr { key: "Tidx" value { type: DT_INT64 } }')),
                                        unary("y", "Relu", "x")]), "op BroadcastTo (node 'big' in graph) asks for"),
        "empty_1e10.pbtxt": (graph([placeholder(), const("s", [100000, 100000], kind="DT_INT32"), node(
            "big", "Empty", "s", attrs='attr { key: "dtype" value { type: DT_FLOAT } }'), unary("y", "Relu", "x")]),
                             "op Empty (node 'big' in graph)"),  # not allowed at all, whatever its size
        **{f"denied_{op}.pbtxt": (graph([placeholder(), node("bad", op, "x"), unary("y", "Relu", "x")]),
                                  f"op {op} (node 'bad' in graph)")
           for op in ("SaveV2", "RestoreV2", "ImmutableConst", "DecodeProtoV2", "PrintV2", "DebugIdentityV2",
                      "EagerPyFunc", "PyFuncStateless", "RemoteCall", "AssignVariableOp", "TFRecordDatasetV2",
                      "InitializeTableFromTextFileV2", "FileSystemSetConfiguration")},
        "const_1e12.pbtxt": (graph([placeholder(), const("big", [1.0], dims=[10**6, 10**6]),
                                    binary("y", "Mul", "x", "big")]), "asks for a tensor of 10¹² elements"),
        "random_1e10.pbtxt": (graph([placeholder(), sizes, node("big", "RandomUniform", "shape", attrs=f32),
                                     unary("y", "Relu", "x")]), "asks for a tensor of 10¹⁰ elements"),
        "fill_1e10.pbtxt": (graph([placeholder(), sizes, const("one", [1.0], dims=[]),
                                   node("big", "Fill", "shape", "one", attrs='attr { key: "T" value { type: DT_FLOAT } }'),
                                   unary("y", "Relu", "x")]), "op Fill (node 'big' in graph) asks for"),
        "consts_over_2gib.pbtxt": (graph([placeholder()] + [const(f"c{i}", [1.0], dims=[100, 1000, 1000])
                                                            for i in range(6)] + [unary("y", "Relu", "x")]),
                                   "over the 2 GiB per-model limit"),
        "name_newline.pbtxt": (graph([placeholder()] + write_file("evil\nname", VICTIM) + [unary("y", "Relu", "x")]),
                               "node 'evil\\nname'"),
        "name_nul.pbtxt": (graph([placeholder()] + write_file("nul\x00name", VICTIM) + [unary("y", "Relu", "x")]),
                           "node 'nul\\x00name'"),
        "name_escape.pbtxt": (graph([placeholder()] + write_file("\x1b[2J\x1b[31mred", VICTIM)
                                    + [unary("y", "Relu", "x")]), "node '\\x1b[2J\\x1b[31mred'"),
        "name_100kb.pbtxt": (graph([placeholder()] + write_file("n" * 100_000, VICTIM) + [unary("y", "Relu", "x")]),
                             "n…'"),
        "nested_text.pbtxt": (f'node {{ name: "x" op: "NoOp" {nested} }}\n'.encode(), "nests deeper than"),
        "truncated_text.pbtxt": (good()[:40], "not a GraphDef in text format"),
        "noops_50001.pb": (_binary_noops(50_001), "50,001 nodes"),
        "truncated.pb": (tiny[: len(tiny) // 2], "truncated or not a binary protobuf"),
        "random_bytes.pb": (b"\x0a" + random.Random(20).randbytes(4096), "not a GraphDef"),
        "empty.pb": (b"", "the file is empty (0 bytes)"),
        "notes.pb": (b"These are my notes, not a model.\n" * 20, "a text file, but not a GraphDef"),
        "json.pb": (b'{"model": "not really"}', "a JSON file, not a model"),
        "legacy.h5": (b"\x89HDF\r\n\x1a\n" + bytes(64), "a legacy HDF5 Keras file"),
        "elf.pb": (b"\x7fELF" + bytes(60), "not a model file (unrecognised binary"),
    }


def savedmodel_zips(bases: Path) -> dict[str, tuple[bytes, str]]:
    members = zips.of_directory(bases / "tiny_savedmodel")
    good_zip = zips.make(members)
    pb = "model/saved_model.pb"
    damaged = bytearray(good_zip)
    start = damaged.index(b"saved_model.pb") + len("saved_model.pb") + 40
    damaged[start:start + 8] = b"\xff" * 8
    return {
        "savedmodel.zip": (good_zip, ""),
        "slip.zip": (zips.make(members + [("model/../../escaped.txt", b"x")]), "'..' in a path is refused"),
        "absolute.zip": (zips.make(members + [("/tmp/escaped.txt", b"x")]), "an absolute path is refused"),
        "symlink.zip": (zips.make(members + [(zips.link("model/variables/link"), b"/etc/passwd")]),
                        "a symbolic link is refused"),
        "fifo.zip": (zips.make(members + [(zips.fifo("model/pipe"), b"")]), "a named pipe is refused"),
        "newline_name.zip": (zips.make(members + [("model/a\nb", b"x")]), "a control character"),
        "long_name.zip": (zips.make(members + [("model/" + "a" * 2000, b"x")]), "a name of 2,006 characters"),
        "deep_dirs.zip": (zips.make(members + [("model/" + "d/" * 20 + "x", b"x")]), "a path 22 levels deep"),
        "encrypted.zip": (zips.patch(good_zip, pb, flag_bits=1), "an encrypted member is refused"),
        "version_9_9.zip": (zips.patch(good_zip, pb, extract_version=99), "zip file version 9.9"),
        "lzma_claimed.zip": (zips.patch(good_zip, pb, compress_type=14), "compression method 14 is refused"),
        "bad_utf8_name.zip": (zips.rename(good_zip, pb, b"model/saved_model\xff\xfe\xfd"), "not valid UTF-8"),
        "members_2001.zip": (zips.make(members + [(f"model/x{i}", b"") for i in range(2001)]), "at most 2,000"),
        "bomb.zip": (zips.make(members + [("model/zeros", bytes(64 * MiB))]), "looks like a zip bomb"),
        "lying_size.zip": (zips.patch(good_zip, pb, file_size=600 * MiB), "expands to 600 MiB"),
        "duplicate_member.zip": (zips.make(members + [(pb, b"again")]), "appears twice"),
        "backslash_slip.zip": (zips.make(members + [("model\\..\\..\\escaped.txt", b"x")]), "'..' in a path"),
        "drive_path.zip": (zips.make(members + [("C:/escaped.txt", b"x")]), "an absolute path is refused"),
        "truncated.zip": (good_zip[: len(good_zip) // 2], "a damaged or truncated zip file"),
        "damaged_data.zip": (bytes(damaged), "is damaged"),
        "no_saved_model.zip": (zips.make([("model/readme.txt", b"hello")]), "neither a SavedModel"),
        "two_models.zip": (zips.make(members + zips.of_directory(bases / "tiny_savedmodel", "other")),
                           "holds several SavedModels"),
        "empty_saved_model_pb.zip": (zips.make([(n, d if n != pb else b"") for n, d in members]),
                                     "saved_model.pb holds no graph"),
        "garbage_saved_model_pb.zip": (zips.make([(n, d if n != pb else b"\xff" * 64) for n, d in members]),
                                       "saved_model.pb is truncated or not a SavedModel"),
        "writefile_savedmodel.zip": (zips.make(zips.of_directory(bases / "writefile_savedmodel")),
                                     "op WriteFile (node 'WriteFile' in function"),
    }


def keras_files(bases: Path) -> dict[str, tuple[bytes, str]]:
    with zipfile.ZipFile(bases / "tiny.keras") as archive:
        members = [(name, archive.read(name)) for name in archive.namelist()]
    by_name = dict(members)

    def replaced(name: str, data: bytes) -> bytes:
        return zips.make([(n, data if n == name else d) for n, d in members])

    config = by_name["config.json"].decode()
    return {
        "tiny.keras": ((bases / "tiny.keras").read_bytes(), ""),
        "lambda.keras": ((bases / "lambda.keras").read_bytes(), "layer Lambda (named 'doubler' in config.json)"),
        "junk_member.keras": (zips.make(members + [("junk.bin", bytes(8 * MiB))]), "member 'junk.bin' is not part"),
        "assets.keras": (zips.make(members + [("assets/vocab.txt", b"a\nb")]), "is not part of a .keras file"),
        "bomb_weights.keras": (replaced("model.weights.h5", by_name["model.weights.h5"] + bytes(64 * MiB)),
                               "looks like a zip bomb"),
        "lying_size.keras": (zips.patch(zips.make(members), "model.weights.h5", file_size=600 * MiB),
                             "expands to 600 MiB"),
        "slip.keras": (zips.make(members + [("../escaped.txt", b"x")]), "'..' in a path is refused"),
        "link.keras": (zips.make(members + [(zips.link("model.weights.h5.link"), b"/etc/passwd")]),
                       "a symbolic link is refused"),
        "config_not_json.keras": (replaced("config.json", b"{not json"), "config.json is not JSON"),
        "config_nested.keras": (replaced("config.json", b"[" * 100_000 + b"]" * 100_000), "config.json is not JSON"),
        "config_list.keras": (replaced("config.json", b"[1, 2, 3]"), "config.json holds list"),
        "custom_module.keras": (replaced("config.json", config.replace('"module": "keras.layers"',
                                                                       '"module": "os"', 1).encode()),
                                "a custom object from module 'os'"),
        "tfsmlayer.keras": (replaced("config.json", config.replace('"class_name": "Dense"', '"class_name": "TFSMLayer"',
                                                                   1).encode()), "loads another SavedModel from a path"),
        "registered_custom.keras": (replaced("config.json", config.replace('"registered_name": null',
                                                                           '"registered_name": "my>Layer"', 1).encode()),
                                    "a registered custom object 'my>Layer'"),
        "garbage_weights.keras": (replaced("model.weights.h5", b"\x89HDF\r\n\x1a\n" + random.Random(21).randbytes(99)),
                                  "model.weights.h5 is not a readable HDF5 file"),
        "no_weights.keras": (zips.make([(n, d) for n, d in members if n != "model.weights.h5"]
                                       + [("weights.bin", b"x")]), "neither a SavedModel"),
        # HDF5 reaches outside its own file two ways: a link to another file, and a dataset stored in one.
        "h5_external_link.keras": (replaced("model.weights.h5", _h5_outside(by_name["model.weights.h5"], "link")),
                                   "is an external link to '/etc/passwd'"),
        "h5_external_storage.keras": (replaced("model.weights.h5", _h5_outside(by_name["model.weights.h5"], "storage")),
                                      "is stored in a file outside it ('/etc/hostname')"),
    }


def _h5_outside(weights: bytes, how: str) -> bytes:
    """The weights file with its first variable replaced by one that Keras would read from another file."""
    import h5py

    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "w.h5")
        with open(path, "wb") as out:
            out.write(weights)
        with h5py.File(path, "a") as f:
            names = []
            f.visititems(lambda name, obj: names.append(name) if isinstance(obj, h5py.Dataset) else None)
            target = names[0]
            shape, dtype = f[target].shape, f[target].dtype
            del f[target]
            if how == "link":
                f[target] = h5py.ExternalLink("/etc/passwd", "/data")
            else:
                f.create_dataset(target, shape=shape, dtype=dtype, external=[("/etc/hostname", 0, h5py.h5f.UNLIMITED)])
        with open(path, "rb") as handle:
            return handle.read()


def savedmodel_directories(bases: Path, directory: Path) -> dict[str, tuple[Path, str]]:
    """SavedModel directories, for the command line: pipes, links, devices, too many or too big files."""
    out = {}

    def copy(name: str) -> Path:
        target = directory / name
        shutil.copytree(bases / "tiny_savedmodel", target)
        return target

    out["savedmodel_dir"] = (copy("savedmodel_dir"), "")
    for name, make, words in (
        ("fifo_dir", lambda p: os.mkfifo(p / "variables" / "extra"), "'variables/extra': a named pipe is refused"),
        ("dev_zero_dir", lambda p: os.symlink("/dev/zero", p / "variables" / "zero"), "a symbolic link is refused"),
        ("passwd_dir", lambda p: os.symlink("/etc/passwd", p / "assets" / "passwd"), "a symbolic link is refused"),
        ("sparse_dir", lambda p: os.truncate(_touch(p / "variables" / "huge"), 3 << 30), "at most 512 MiB per member"),
        ("many_dir", lambda p: [_touch(p / "assets" / f"f{i}") for i in range(2001)], "more than 2,000 files"),
        ("empty_pb_dir", lambda p: (p / "saved_model.pb").write_bytes(b""), "saved_model.pb holds no graph"),
        ("no_pb_dir", lambda p: (p / "saved_model.pb").unlink(), "a directory without saved_model.pb"),
    ):
        target = copy(name)
        make(target)
        out[name] = (target, words)
    writes = directory / "writefile_dir"
    shutil.copytree(bases / "writefile_savedmodel", writes)
    out["writefile_dir"] = (writes, "op WriteFile")
    return out


def _touch(path: Path) -> Path:
    path.write_bytes(b"")
    return path


def build(directory: Path, bases: Path) -> list[Case]:
    directory.mkdir(parents=True, exist_ok=True)
    cases = []
    for name, (data, words) in {**graphdefs(bases), **savedmodel_zips(bases), **keras_files(bases)}.items():
        path = directory / name
        path.write_bytes(data)
        cases.append(Case(name, path, "refused" if words else "ok", words))
    for name, (path, words) in savedmodel_directories(bases, directory).items():
        cases.append(Case(name, path, "refused" if words else "ok", words, page=False))
    return cases
