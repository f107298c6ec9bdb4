"""XLA beside Grappler on real TensorFlow: the worker's "xla" op through the engine, the three-way
benchmark and the command line.

Each test reads the optimised HLO *text* XLA printed and walks it itself (computations, fusion
instructions, the computations they call, each instruction's op_name), then checks that the
analysis's fusions hold exactly those TF ops and that every traced op is accounted for.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest
from worker_script import run_in_worker

from explorer.errors import WorkerError

pytestmark = pytest.mark.tf
ROOT = Path(__file__).resolve().parents[2]

MODELS = {
    "matmul_bias_gelu_approx": {"m": 8, "k": 4, "n": 4},
    "matmul_bias_gelu_exact": {"m": 8, "k": 4, "n": 4},
    "conv2d_bias_relu": {"batch": 1, "height": 4, "width": 4, "in_channels": 2, "out_channels": 2,
                         "filter_size": 3},
    "layer_norm": {"m": 8, "n": 16},
}

_COMPUTATION = re.compile(r"^(?:ENTRY )?%(\S+) \(.*\{$")
_INSTRUCTION = re.compile(r"^\s*(?:ROOT )?%(\S+) = (.*)$")


def walk_hlo_text(text: str) -> dict:
    """HLO text -> {computation: [(name, rest of line)]} and the entry's name."""
    comps, current, entry = {}, None, None
    for line in text.splitlines():
        m = _COMPUTATION.match(line)
        if m:
            current = m.group(1)
            comps[current] = []
            if line.startswith("ENTRY"):
                entry = current
            continue
        m = _INSTRUCTION.match(line)
        if m and current:
            comps[current].append((m.group(1), m.group(2)))
    return {"computations": comps, "entry": entry}


def op_names_under(walk: dict, comp: str, seen=None) -> set:
    seen = set() if seen is None else seen
    if comp in seen:
        return set()
    seen.add(comp)
    names = set()
    for _, rest in walk["computations"][comp]:
        m = re.search(r'op_name="([^"]+)"', rest)
        if m and m.group(1) not in ("XLA_Args", "XLA_Retvals"):
            names.add(m.group(1))
        for sub in re.findall(r"(?:calls|to_apply)=%([\w.\-]+)", rest):
            names |= op_names_under(walk, sub, seen)
    return names


@pytest.fixture(scope="module")
def results(engine):
    return {preset: engine.xla({"preset": preset, "params": params}) for preset, params in MODELS.items()}


@pytest.mark.parametrize("preset", list(MODELS))
def test_fusions_hold_exactly_the_ops_the_hlo_metadata_names(results, preset):
    result = results[preset]
    walk = walk_hlo_text(result["hlo"]["optimized_hlo"])
    entry = walk["computations"][walk["entry"]]
    fusions = [(name, rest) for name, rest in entry if re.search(r"\bfusion\(", rest)]
    assert fusions, f"XLA made no fusion of {preset}"
    groups = {g["node"]: g for g in result["fusions"]}
    for name, rest in fusions:
        called = re.search(r"calls=%([\w.\-]+)", rest).group(1)
        assert set(groups[name]["tf_ops"]) == op_names_under(walk, called), name
        kind = re.search(r"kind=k(\w+)", rest).group(1).lower()
        assert groups[name]["kind"] == kind
    traced = [n["name"] for n in result["traced"]["nodes"]]
    assert all(op in traced for g in result["fusions"] for op in g["tf_ops"])


@pytest.mark.parametrize("preset", list(MODELS))
def test_every_traced_op_is_accounted_for(results, preset):
    result = results[preset]
    nodes = result["traced"]["nodes"]
    accounting = result["accounting"]
    assert list(accounting) == [n["name"] for n in nodes]
    named = set(re.findall(r'op_name="([^"]+)"', result["hlo"]["optimized_hlo"]))
    for node in nodes:
        a = accounting[node["name"]]
        if node["name"] in named:
            assert a["status"] in ("fusion", "library", "outside") and a["where"], (node, a)
        else:
            assert a["status"] in ("argument", "no_hlo"), (node, a)
            assert a["status"] == "argument" or a["note"]


def test_matmul_and_conv_stay_outside_the_fusions(results):
    for preset, contraction in (("matmul_bias_gelu_approx", "MatMul"), ("conv2d_bias_relu", "Conv2D")):
        groups = results[preset]["fusions"]
        holding = [g for g in groups if contraction in g["tf_ops"]]
        assert len(holding) == 1 and holding[0]["category"] == "library", holding
        assert holding[0]["opcode"] in ("dot", "convolution", "custom-call")
        fused = [g for g in groups if g["category"] == "fusion"]
        assert any("BiasAdd" in g["tf_ops"] for g in fused)


def test_the_call_ran_an_xla_module_and_the_view_says_which_it_shows(results):
    result = results["matmul_bias_gelu_approx"]
    assert result["executed"]["xla_executable_ran"]
    assert any("XlaMustCompile" in m for m in result["executed"]["modules"])
    assert result["module"]["name"] not in result["executed"]["modules"]
    assert "experimental_get_compiler_ir" in result["source"] and "separate compile" in result["source"]
    assert result["timings"]["compile_s"] > 0 and result["timings"]["first_call_s"] > 0
    assert result["hlo_dot"].startswith("digraph") and "HloModule" in result["hlo"]["hlo"]


def test_a_model_xla_refuses_names_the_op_and_grappler_still_works(engine):
    spec = {"preset": "hash_bucket", "params": {"m": 8, "n": 4}}
    with pytest.raises(WorkerError) as info:
        engine.xla(spec)
    assert info.value.kind == "tensorflow"
    assert "AsString" in info.value.message and info.value.message.startswith("XLA cannot compile this model")
    assert "\n" not in info.value.message
    grappler = engine.inspect(spec, use_cache=False)
    assert grappler["fusions"] and grappler["stages"]["traced"]


def test_three_way_benchmark_agrees_proves_and_times_compile_apart(engine):
    from explorer.model.flags import Config

    spec = {"preset": "matmul_bias_gelu_approx", "params": {"m": 64, "k": 32, "n": 16}}
    stock = Config.make("cpu", {"TF_ENABLE_ONEDNN_OPTS": "0"})  # oneDNN's default differs by CPU; its node is _Mkl…
    result = engine.bench(spec, stock, reps=5, warmup=1, compiler="both")
    assert set(result["samples_ns"]) == {"unfused", "fused", "xla"}
    assert all(len(v) == result["reps_done"] for v in result["samples_ns"].values())
    proof = result["proof_summary"]
    assert proof["verified"], proof["problems"]
    assert "_FusedMatMul" in proof["fused_nodes"] and "BiasAdd" in proof["unfused_executed"]
    assert "XlaMustCompile" in proof["xla_module"]
    assert result["summary"]["xla_first_call_ms"] > 0
    for pair, a in result["agreement"].items():
        assert a["within_tolerance"], (pair, a)
        assert (a["elements_differing"] == 0) == (a["max_abs"] == 0.0)
        first, second = pair.split("-")
        seen = np.abs(np.array(result["output_samples"][first]) - np.array(result["output_samples"][second]))
        assert seen.max() <= a["max_abs"]
    # The diff path re-checked against a direct run in a fresh process: the same seeded inputs give
    # the same outputs, and their float64 difference is what the benchmark reported.
    direct = run_in_worker(f"""
import numpy as np
from explorer.model.spec import resolve
spec = resolve({spec!r})
body, args = worker.build(spec)
plain = np.asarray(tf.function(body)(*args).numpy(), dtype=np.float64)
jit = np.asarray(tf.function(body, jit_compile=True)(*args).numpy(), dtype=np.float64)
protocol.send({{"max_abs": float(np.abs(jit - plain).max()), "first": plain.ravel()[:8].tolist(),
               "differing": int(np.count_nonzero(jit != plain))}})
""")
    assert direct["first"] == pytest.approx(result["output_samples"]["fused"], abs=1e-6)
    assert result["agreement"]["xla-fused"]["max_abs"] == pytest.approx(direct["max_abs"], abs=1e-6)


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "explorer", *args], check=False, cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


def test_cli_inspect_xla_json_and_both_with_a_refused_model():
    commands = (("inspect", "matmul_bias_gelu_exact", "--set", "m=8", "--set", "k=4", "--set", "n=4",
                 "--compiler", "xla", "--no-cache", "--json"),
                ("inspect", "hash_bucket", "--set", "m=8", "--set", "n=4", "--compiler", "both", "--no-cache"))
    with ThreadPoolExecutor(2) as pool:  # inspections, no timing: both commands at once
        out, both = pool.map(lambda args: run_cli(*args), commands)
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    assert set(data["hlo"]) == {"hlo", "optimized_hlo"} and data["fusions"] and data["accounting"]
    out = both
    assert out.returncode == 0, out.stderr
    assert "Fusions (traced -> after Grappler):" in out.stdout
    assert "XLA: XLA cannot compile this model" in out.stdout and "AsString" in out.stdout


def test_pass_pipeline_of_the_compile_shown(results):
    from explorer.analysis import xla_passes

    result = results["matmul_bias_gelu_approx"]
    table, counts = result["pass_table"], result["pass_summary"]
    assert counts["passes"] > 20 and 0 < counts["changed"] < counts["passes"]
    fusion = next(r for r in table if r["pass"] == "fusion")
    assert fusion["changed"] and fusion["instructions_after"] > fusion["instructions_before"]
    dump = next(d for d in result["passes"]["dumps"] if d["file"] == fusion["dump"])
    assert result["module"]["name"] in dump["file"] and "kind=kLoop" in dump["text"]
    assert xla_passes.count_instructions(dump["text"]) == fusion["instructions_after"]
    # the last dump is the module shown: the same instructions as the optimised HLO text
    last = result["passes"]["dumps"][-1]["text"]
    assert xla_passes.count_instructions(last) == xla_passes.count_instructions(result["hlo"]["optimized_hlo"])


def test_auto_clustering_names_the_ops_each_xla_cluster_took(engine):
    from explorer.model.flags import Config

    # oneDNN off (its default depends on the CPU): with it on, TF 2.21 forms no cluster (checked below)
    jit = "--tf_xla_auto_jit=2 --tf_xla_cpu_global_jit"
    config = Config.make("cpu", {"TF_XLA_FLAGS": jit, "TF_ENABLE_ONEDNN_OPTS": "0"})
    result = engine.inspect({"preset": "matmul_bias_gelu_approx", "params": {"m": 64, "k": 32, "n": 16}}, config,
                            use_cache=False)
    clusters = result["xla_clusters"]
    optimized = {n["name"]: n["op"] for n in result["stages"]["optimized"]["nodes"]}
    launched = {n["name"] for n in result["stages"]["optimized"]["nodes"] if n["op"] == "_XlaCompile"}
    assert clusters and len(clusters) == len(launched)
    tanh = next(n["name"] for n in result["stages"]["traced"]["nodes"] if n["op"] == "Tanh")
    members = {o["name"] for c in clusters for o in c["ops"]}
    assert tanh in members
    assert not members & set(optimized), "an op XLA took still runs as a node of the graph"
    assert not any("auto-clustering" in w for w in result["warnings"])
    # without auto-clustering there is none
    plain = engine.inspect({"preset": "matmul_bias_gelu_approx", "params": {"m": 64, "k": 32, "n": 16}},
                           Config.make("cpu", {"TF_ENABLE_ONEDNN_OPTS": "0"}), use_cache=False)
    assert plain["xla_clusters"] == [] and not any("auto-clustering" in w for w in plain["warnings"])
    # with oneDNN on (measured on an AVX-512 Xeon, 2026-11-24) TF formed no cluster: an empty list never goes
    # unexplained, and a warning never claims what the graph does not show
    onednn = engine.inspect({"preset": "matmul_bias_gelu_approx", "params": {"m": 64, "k": 32, "n": 16}},
                            Config.make("cpu", {"TF_XLA_FLAGS": jit, "TF_ENABLE_ONEDNN_OPTS": "1"}), use_cache=False)
    launched = any(n["op"] == "_XlaCompile" for n in onednn["stages"]["optimized"]["nodes"])
    warned = any("formed no cluster" in w and "TF_ENABLE_ONEDNN_OPTS=0" in w for w in onednn["warnings"])
    assert bool(onednn["xla_clusters"]) == launched and warned == (not launched), onednn["warnings"]


def test_cli_bench_compiler_both_prints_the_three_way():
    out = run_cli("bench", "matmul_bias_gelu_approx", "--set", "m=64", "--set", "k=32", "--set", "n=16",
                  "--compiler", "both", "--reps", "5", "--warmup", "1")
    assert out.returncode == 0, out.stderr
    text = out.stdout
    for words in ("unfused (remapper off)", "Grappler-fused", "XLA (jit_compile=True)",
                  "XLA's first call (trace + compile)", "outputs xla-fused", "XLA ran:     module", "proof: verified"):
        assert words in text, (words, text)


@pytest.mark.parametrize("args,words", [
    (["inspect", "matmul_bias_relu", "--compiler", "tpu"], "invalid choice"),
    (["inspect", "matmul_bias_relu", "--compiler", "xla", "--device", "gpu-sim"], "no XLA compiler"),
    (["bench", "matmul_bias_relu", "--compiler", "both", "--device", "gpu-sim"], "nothing to time"),
])
def test_cli_bad_compiler_arguments_exit_2_with_one_line(args, words):
    out = run_cli(*args)
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], out.stderr


def test_cli_both_on_a_simulated_gpu_keeps_grappler_and_says_why_no_xla():
    out = run_cli("inspect", "matmul_bias_relu", "--set", "m=64", "--compiler", "both", "--device", "gpu-sim",
                  "--no-cache")
    assert out.returncode == 0, out.stderr
    assert "SIMULATED" in out.stdout and "XLA: device: a simulated GPU has no XLA compiler" in out.stdout


@pytest.mark.parametrize("preset", list(MODELS))
def test_the_call_ran_the_instructions_of_the_module_shown(results, preset):
    result = results[preset]
    compared = result["executed_vs_shown"]
    assert compared["same"], compared
    walk = walk_hlo_text(result["hlo"]["optimized_hlo"])
    shown = {name for name, rest in walk["computations"][walk["entry"]]
             if not re.match(r"\S+ (parameter|constant|bitcast|tuple|get-tuple-element|copy)\(", rest)}
    assert set(result["executed"]["hlo_instructions"]) == shown
