"""An imported graph called as a registered FunctionDef (no Python trace) gives what tf.function gives.

Both paths run in one real worker process on the same models: the exported MobileNetV2 and small
model (SavedModel, frozen GraphDef), and hand-made GraphDefs whose ops have list outputs (Split,
Unpack, IdentityN: the renaming to a function's "node:output_arg:i" is what could go wrong). Compared:
the outputs' values, the optimized and executed graphs op for op, the traced graph's nodes and their
static shapes. A GraphDef that calls a function of its library runs both ways too (the traced way
registers its library first: tf.function's import of it leaves the library out of the eager context),
its values also checked against numpy. XLA, which traces, compiles imported graphs as well.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytestmark = pytest.mark.tf
ROOT = Path(__file__).resolve().parents[2]

MAKE_GRAPHS = """
import sys, numpy as np, tensorflow as tf
directory = sys.argv[1]
with tf.Graph().as_default() as graph:
    x = tf.compat.v1.placeholder(tf.float32, [None, 6, 8], name="x")
    w = tf.constant(np.linspace(-1, 1, 8 * 12).reshape(8, 12).astype(np.float32))
    a, b, c = tf.split(tf.tensordot(x, w, 1), 3, axis=2)
    first, second = tf.unstack(tf.reshape(a + b, [-1, 2, 3, 4]), axis=1)
    p, q = tf.raw_ops.IdentityN(input=[first * 2.0, tf.cast(second > 0, tf.int32)])
    tf.identity(tf.nn.relu(p) + tf.cast(q, tf.float32) + tf.reduce_sum(c), name="out")
with open(f"{directory}/lists.pb", "wb") as handle:
    handle.write(graph.as_graph_def().SerializeToString())

@tf.function
def inner(t):
    return tf.nn.relu(t) * 3.0
with tf.Graph().as_default() as graph:
    x = tf.compat.v1.placeholder(tf.float32, [None, 5], name="x")
    tf.identity(inner(x) + 1.0, name="out")
with open(f"{directory}/calls.pb", "wb") as handle:
    handle.write(graph.as_graph_def().SerializeToString())
"""

COMPARE = """
import collections, json, sys
import numpy as np
from explorer.engine import uploads
from explorer.model.spec import resolve
from explorer.worker import grappler, models
from explorer.worker.protocol import Protocol
from explorer.worker.runtime import Runtime

worker = Runtime(Protocol())
tf = worker.tf
original = models.function
report = {}
for path in json.loads(sys.argv[1]):
    spec = uploads.spec_for_path(path)
    body, args = worker.build(resolve(spec))
    direct = models.function(body, tf)
    ways = ("direct", "traced")
    values = {"direct": direct(*args), "traced": models.function(body, tf, trace=True)(*args)}
    if path.endswith("calls.pb"):  # what the graph computes, by numpy
        values["numpy"] = [np.maximum(args[0].numpy(), 0) * 3.0 + 1.0]
    results = {}
    for way in ways:
        # The path is chosen where inspect asks for the function: the traced way forced for the second.
        models.function = original if way == "direct" else (lambda b, t, **o: original(b, t, trace=True, **o))
        try:
            worker.log.start()
            results[way] = grappler.inspect(worker, {"spec": spec})
        finally:
            models.function = original
    def ops(result, stage):
        return collections.Counter(n["op"] for n in result["stages"][stage]["nodes"])
    def traced(result):
        return {n["name"]: [n["op"], n["shape"]] for n in result["stages"]["traced"]["nodes"]
                if n["op"] not in ("Placeholder", "_Arg", "_Retval", "Identity", "NoOp")}
    a, b = results["direct"], results.get("traced", results["direct"])
    report[path.rsplit("/", 1)[-1]] = {
        "graph_function": isinstance(direct, models.GraphFunction),
        "same_values": all(np.allclose(np.asarray(x), np.asarray(y), rtol=1e-5, atol=1e-5)
                           for other in ("traced", "numpy") if other in values
                           for x, y in zip(values["direct"], values[other])),
        "outputs": len(values["direct"]),
        "optimized": [ops(a, "optimized"), ops(b, "optimized")],
        "executed": [ops(a, "executed"), ops(b, "executed")],
        "traced": [traced(a), traced(b)],
        "placeholders_left": sum(n["op"] == "Placeholder" for n in a["stages"]["traced"]["nodes"]),
        "output_shapes": [a["output_shapes"], b["output_shapes"]],
    }
worker.protocol.send(report)
"""


@pytest.fixture(scope="module")
def graphs(tmp_path_factory, request) -> Path:
    directory = tmp_path_factory.mktemp("graphs")
    proc = subprocess.Popen([sys.executable, "-c", MAKE_GRAPHS, str(directory)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    try:
        request.getfixturevalue("models")  # the session's models are exported meanwhile: two processes at once
        _, stderr = proc.communicate(timeout=300)
    finally:
        proc.kill()
        proc.wait()
    assert proc.returncode == 0, stderr[-3000:]
    return directory


def _paths(models, graphs) -> list[Path]:
    return [models / "mobilenetv2_savedmodel", models / "small_savedmodel", models / "mobilenetv2.pb",
            models / "small.pb", graphs / "lists.pb", graphs / "calls.pb"]


@pytest.fixture(scope="module")
def compared(models, graphs) -> dict:
    """{onednn "0"|"1": the finished COMPARE process}: a process per setting, both at once (each is mostly one
    core's work)."""
    def compare(onednn):
        return subprocess.run([sys.executable, "-c", COMPARE, json.dumps([str(p) for p in _paths(models, graphs)])],
                              cwd=ROOT, capture_output=True, text=True, timeout=600,
                              env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", "TF_ENABLE_ONEDNN_OPTS": onednn})
    with ThreadPoolExecutor(2) as pool:
        return dict(zip(("0", "1"), pool.map(compare, ("0", "1"))))


@pytest.mark.parametrize("onednn", ["0", "1"])
def test_a_registered_function_def_runs_what_tf_function_runs(graphs, models, compared, onednn):
    paths = _paths(models, graphs)
    proc = compared[onednn]
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert set(report) == {p.name for p in paths}
    for name, seen in report.items():
        assert seen["graph_function"], name
        assert seen["same_values"] and seen["outputs"] >= 1, name
        assert seen["optimized"][0] == seen["optimized"][1], name
        assert seen["executed"][0] == seen["executed"][1], name
        direct, traced = seen["traced"]
        assert direct == traced, name  # same nodes, same ops, same static shapes
        assert any(shape and "-1" not in shape for _, shape in direct.values()), name
        assert seen["output_shapes"][0] == seen["output_shapes"][1], name
        assert seen["placeholders_left"] == 0, name  # every placeholder became an argument
    assert report["lists.pb"]["optimized"][0]["Split"] == 1 and report["lists.pb"]["optimized"][0]["Unpack"] == 1
    assert report["calls.pb"]["outputs"] == 1


def test_xla_compiles_imported_graphs_and_maps_its_fusions_to_their_nodes(models, graphs, engine):
    """The traced import leaves out the placeholders it feeds (XLA refused them) and registers the library
    a graph calls (XLA could not find the function)."""
    import re

    from explorer.engine.uploads import spec_for_path

    for path in (models / "small.pb", models / "small_savedmodel", graphs / "calls.pb"):
        result = engine.xla(spec_for_path(str(path)))
        traced = {n["name"]: n["op"] for n in result["traced"]["nodes"]}
        assert result["executed"]["xla_executable_ran"], path.name
        # An op_name is "name", "its name in a function;its name inlined here", or for an op of a called
        # function "the call node/its name there"
        calls = [name for name, op in traced.items() if op in ("PartitionedCall", "StatefulPartitionedCall")]

        def known(part, traced=traced, calls=calls):
            return part in traced or any(part.startswith(call + "/") for call in calls)
        named = [name.split(";") for name in re.findall(r'op_name="([^"]+)"', result["hlo"]["optimized_hlo"])
                 if name not in ("XLA_Args", "XLA_Retvals")]
        assert named and all(any(known(p) for p in parts) for parts in named), path.name
        assert all(op in traced for g in result["fusions"] for op in g["tf_ops"]), path.name
        if path.name != "calls.pb":
            assert any(g["category"] == "fusion" and any(traced[op] == "BiasAdd" for op in g["tf_ops"])
                       for g in result["fusions"]), path.name
