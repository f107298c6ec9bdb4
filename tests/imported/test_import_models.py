"""Imported models through the engine and the command line: what fuses matches TensorFlow run directly.

Real models, no downloads: MobileNetV2 and a small Keras model exported as SavedModel, .keras and
frozen GraphDef (conftest), imported each way with oneDNN off and on; the fused ops and the
contractions left unfused in the explorer's optimized graph are compared with a direct TensorFlow
run of the same file (``make_models.py count-all``), never with numbers written here.
"""

from __future__ import annotations

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from explorer.engine.uploads import spec_for_path
from explorer.errors import WorkerError
from explorer.model.flags import Config
from explorer.present.fix_text import fix_text
from explorer.worker.models.signature import LOADED, READ

pytestmark = pytest.mark.tf
ROOT = Path(__file__).resolve().parents[2]
CONTRACTIONS = ("Conv2D", "MatMul", "DepthwiseConv2dNative", "BatchMatMulV2", "Conv3D")


def optimized_counts(result: dict) -> dict:
    """The same count as the oracle's, from an explorer result's optimized stage."""
    counts: dict[str, int] = {}
    for node in result["stages"]["optimized"]["nodes"]:
        if node["op"].startswith("_Fused") or node["op"] in CONTRACTIONS:
            key = f"{node['op']}[{','.join(node['fused_ops'])}]" if node["fused_ops"] else node["op"]
            counts[key] = counts.get(key, 0) + 1
    return counts


FILES = {"graphdef": "{}.pb", "savedmodel": "{}_savedmodel", "keras": "{}.keras"}


# recurrent: a GRU and an LSTM, whose loop bodies TensorFlow fuses once it has lowered the loops
@pytest.mark.parametrize("onednn", ["0", "1"])
@pytest.mark.parametrize("model", ["small", "mobilenetv2", "recurrent"])
@pytest.mark.parametrize("fmt", list(FILES))
def test_fusions_of_an_imported_model_match_tensorflow_run_directly(engine, models, direct_counts, fmt, model, onednn):
    spec = spec_for_path(str(models / FILES[fmt].format(model)))
    assert spec["import"]["format"] == fmt
    config = Config.make("cpu", {"TF_ENABLE_ONEDNN_OPTS": onednn})
    result = engine.inspect(spec, config)
    assert bool(result["fingerprint"]["onednn"]) == (onednn == "1")
    expected = direct_counts[onednn][model][fmt]
    assert any(op.startswith("_Fused") for op in expected)  # non-zero weights: something does fuse
    assert optimized_counts(result) == expected
    # The model's ops are in the traced graph itself, so the fusions are mapped to what they absorbed.
    fused = sum(n for op, n in expected.items() if op.startswith("_Fused"))
    assert len(result["fusions"]) == fused
    assert "path" not in result["spec"]["import"]  # the result names the content, not where it lies
    if fmt == "savedmodel":  # read from its files, not through tf.saved_model.load (2 s more on MobileNetV2)
        assert result["model_info"]["loader"] == {"by": READ, "why": ""}


@pytest.mark.parametrize("fmt", ["savedmodel", "keras"])
def test_xla_compiles_a_recurrent_models_loops_as_whiles(engine, models, fmt):
    # the Grappler run lowers the loops (as TensorFlow serving the model does); XLA compiles them unlowered, as
    # tf.function(jit_compile=True) does: lowered, it would refuse their Enter ops
    result = engine.xla(spec_for_path(str(models / FILES[fmt].format("recurrent"))),
                        Config.make("cpu", {"TF_ENABLE_ONEDNN_OPTS": "0"}))
    assert "2 whiles" in result["summary"], result["summary"]


def test_fixing_a_recurrent_model_keeps_what_fuses_in_its_loops(engine, models, tmp_path):
    # the rewrites take the loops unlowered and leave each one's lowering as the model asked: frozen inside a
    # lowered loop, a weight was a constant outside the loop's frame ("inputs from different frames")
    result = engine.fix(spec_for_path(str(models / "recurrent_savedmodel")),
                        Config.make("cpu", {"TF_ENABLE_ONEDNN_OPTS": "0"}), out=str(tmp_path / "fixed"))
    assert result["within_tolerance"], (result["max_abs_diff"], result["max_rel_diff"])
    assert result["fused_kernels_after"] >= result["fused_kernels_before"] == 2


def test_a_fix_that_rewrites_nothing_says_why_and_times_and_writes_nothing(engine, unknown_batch_models, tmp_path):
    # freeze turns the reads of the model's own graph into constants; this model reads its variables only in its
    # loop's body, so the copy was the model itself: once it was inspected, timed three times and written out
    out, config = tmp_path / "fixed", Config.make("cpu", {"TF_ENABLE_ONEDNN_OPTS": "0"})
    looped = spec_for_path(str(unknown_batch_models / "looped_savedmodel"))
    result = engine.fix(looped, config, out=str(out))
    assert result["applied"] == [] and result["model_out"] is None and result["speedup"] is None
    assert result["skipped"]["freeze"] == ("the model reads its variables only inside its loops' or branches' "
                                           "functions, which freeze leaves as they are")
    assert "freeze: the model reads its variables only inside" in fix_text(result)
    # a fix asked for by name that finds nothing stops once the rewrite has run: no copy is checked, timed or kept
    asked = engine.fix(looped, config, apply=["bias-add"], out=str(out))
    assert asked["applied"] == [] and asked["model_out"] is None and asked["speedup"] is None
    assert asked["skipped"] == {"bias-add": "rewrote nothing: the model holds nothing of its form"}
    assert not out.exists() and not out.with_suffix(".pb").exists()


def test_a_model_refusing_the_size_given_its_unknown_dimensions_says_how_to_give_another(engine, unknown_batch_models):
    # a sequence of unknown length, fed as 1, is shorter than the convolution's kernel: TensorFlow's own words
    # ("Computed output size would be negative") said nothing of where that 1 came from
    path, config = str(unknown_batch_models / "sequence_conv.pb"), Config.make("cpu", {"TF_ENABLE_ONEDNN_OPTS": "0"})
    with pytest.raises(WorkerError) as refused:
        engine.inspect(spec_for_path(path), config)
    assert "Computed output size would be negative" in refused.value.message
    assert refused.value.message.endswith("The model's unknown dimensions were fed as 1: it may need them larger "
                                          "(give another size: --dim N on the command line, Unknown dimensions on "
                                          "the page)")
    assert engine.inspect(spec_for_path(path, unknown_dim=4), config)["output_shapes"] == [[4, 2, 8]]


def test_a_signature_the_reader_does_not_know_is_loaded_by_tensorflow(engine, models, direct_counts):
    # Its bias is a captured constant, not a variable: tf.saved_model.load runs it, and says why.
    result = engine.inspect(spec_for_path(str(models / "captured_savedmodel")),
                            Config.make("cpu", {"TF_ENABLE_ONEDNN_OPTS": "0"}))
    loader = result["model_info"]["loader"]
    assert loader["by"] == LOADED and "captured float32 tensor" in loader["why"]
    assert optimized_counts(result) == direct_counts["0"]["captured"]["savedmodel"]
    assert result["output_shapes"] == [[1, 4]]


def run_cli(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "explorer", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def test_cli_inspect_and_bench_take_a_model(models, direct_counts):
    out = run_cli("inspect", "--model", str(models / "small_savedmodel"), "--signature", "serving_default",
                  "--dim", "2", "--env", "TF_ENABLE_ONEDNN_OPTS=0", "--no-cache", "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert optimized_counts(result) == direct_counts["0"]["small"]["savedmodel"]
    assert result["output_shapes"] == [[2, 4]]  # the unknown batch took --dim
    out = run_cli("bench", "--model", str(models / "small.keras"), "--reps", "3", "--warmup", "1",
                  "--env", "TF_ENABLE_ONEDNN_OPTS=0")
    assert out.returncode == 0, out.stderr
    assert "_FusedConv2D" in out.stdout.split("fused ran:")[1].split("\n")[0]
    assert "_Fused" not in out.stdout.split("unfused ran:")[1].split("\n")[0]


def test_cli_matrix_takes_your_own_model_as_a_row(models, direct_counts):
    # the page's matrix had the model on screen as a row; the command line took presets only
    out = run_cli("matrix", "--model", str(models / "small_savedmodel"), "--dim", "2", "--presets", "matmul_bias_relu",
                  "--env", "TF_ENABLE_ONEDNN_OPTS=0", "--vary", "remapping=on,off", "--no-cache", "--json")
    assert out.returncode == 0, out.stderr
    result = json.loads(out.stdout)
    assert result["presets"] == ["matmul_bias_relu"] and result["models"] == ["small_savedmodel"]
    rows = {c["grappler"]["remapping"]: c for c in result["cells"] if c["model"] == "small_savedmodel"}
    assert rows["off"]["verdict"] == "not fused" and rows["on"]["verdict"] == "fused"
    fused = [op for op in direct_counts["0"]["small"]["savedmodel"] if op.startswith("_Fused")]
    assert fused and all(op.replace(",", "+") in rows["on"]["fused_op"].split("; ") for op in fused), rows["on"]


def test_cli_pass_graphs_of_a_big_model_on_request_and_xla_on_an_import(models):
    path = str(models / "mobilenetv2_savedmodel")
    commands = (("inspect", "--model", path, "--no-cache", "--json"),
                ("inspect", "--model", path, "--no-cache", "--json", "--pass-graphs"),
                ("inspect", "--model", str(models / "small.pb"), "--compiler", "xla", "--no-cache"))
    with ThreadPoolExecutor(2) as pool:  # inspections, no timing: two commands at once
        deferred, out, xla = pool.map(lambda args: run_cli(*args), commands)
    first = json.loads(deferred.stdout)["grappler"]
    assert first["pass_graphs_deferred"] and first["pass_graphs"] == {}
    assert out.returncode == 0, out.stderr
    full = json.loads(out.stdout)["grappler"]
    assert not full["pass_graphs_deferred"] and full["pass_graphs"]
    out = xla
    assert out.returncode == 0, out.stderr
    assert "XLA fusions (optimised HLO -> the traced TF ops its metadata names):" in out.stdout


def test_cli_refusals_exit_2_with_one_line(models, tmp_path):
    out = run_cli("inspect", "--model", str(models / "small_savedmodel"), "--signature", "nope")
    assert out.returncode == 2 and "serving_default" in out.stderr and len(out.stderr.strip().splitlines()) == 1
    out = run_cli("inspect", "--model", str(models / "writefile.pb"))
    assert out.returncode == 2 and "op WriteFile (node 'WriteFile' in graph)" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1
    out = run_cli("inspect", "matmul_bias_relu", "--model", str(models / "small.pb"))
    assert out.returncode == 2 and "not both" in out.stderr
    out = run_cli("inspect", "--model", str(tmp_path / "missing.pb"))
    assert out.returncode == 2 and "no such file" in out.stderr


def test_the_three_way_benchmark_times_the_model_as_served(engine, models):
    """The XLA tab's benchmark timed the batch-fixed trace while the tab and the main view showed the model as
    served (its batch unknown in the trace): the same graph as the fused-vs-unfused benchmark's, now."""
    from explorer.model.flags import Config
    from explorer.engine.uploads import spec_for_path

    spec = spec_for_path(str(models / "two_heads_savedmodel"), unknown_dim=3)
    config = Config.make("cpu", {"TF_ENABLE_ONEDNN_OPTS": "0"})
    three = engine.bench(spec, config, reps=5, warmup=1, compiler="both")
    two = engine.bench(spec, config, reps=5, warmup=1)
    assert three["timed"] == "as served"
    assert three["proof"]["fused"]["executed_ops"] == two["proof"]["fused"]["executed_ops"]
