"""Layer stacks through the real engine, checked against TensorFlow run directly in a fresh process.

The direct runs below write each model by hand (plain TF ops for the seed tool's two examples, the
same Keras 3 layers for the ready blocks), call it once with run metadata on and count what ran: the
explorer must show exactly that, with oneDNN on and off, and with the remapper on and off.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from explorer.analysis.annotate import graphs_of
from explorer.analysis.fusion import is_fused_node
from explorer.model import stack_examples
from explorer.model.flags import Config
from explorer.model.stack import parse

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.tf

# TensorFlow and Keras run directly: no explorer code builds or captures these models (convert only
# turns the captured GraphDef into the neutral dict the counts are read from).
DIRECT = r'''
import json, sys
import numpy as np
import tensorflow as tf
import keras
from tensorflow.python.eager import context
from explorer.worker.convert import graph_to_dict, merge_partitions

rng = np.random.default_rng(7)

def nonzero(model):
    for w in model.weights:   # untrained Keras weights are zeros and ones: make them real numbers
        w.assign((rng.uniform(0.5, 1.5, w.shape) * rng.choice([-1.0, 1.0], w.shape)).astype("float32"))
    return model

def seed_layout_fp32():   # kaixih/tf_op_graph examples/layout_fp32.py: one weight and bias, used twice
    w = tf.constant(rng.standard_normal((2, 2, 4, 4)).astype("float32"))
    b = tf.constant(rng.standard_normal(4).astype("float32"))
    def body(x):
        for _ in range(2):
            x = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, w, strides=1, padding="SAME"), b))
        return x
    return body, (5, 3, 3, 4)

def seed_arithmetic_pow():   # examples/arithmetic_pow.py
    return (lambda x: tf.math.pow(x, 3.0)), (3, 4)

def keras_body(inp, out):
    model = nonzero(keras.Model(inp, out))
    return lambda x: model(x, training=False)

def resnet_basic_block():
    L = keras.layers
    inp = keras.Input((16, 16, 16), batch_size=1)
    y = L.Activation("relu")(L.BatchNormalization()(L.Conv2D(16, 3, padding="same", use_bias=False)(inp)))
    y = L.BatchNormalization()(L.Conv2D(16, 3, padding="same", use_bias=False)(y))
    return keras_body(inp, L.Activation("relu")(L.Add()([inp, y]))), (1, 16, 16, 16)

def mobilenet_inverted_residual():
    L = keras.layers
    inp = keras.Input((16, 16, 16), batch_size=1)
    y = L.Activation("relu6")(L.BatchNormalization()(L.Conv2D(64, 1, use_bias=False)(inp)))
    y = L.Activation("relu6")(L.BatchNormalization()(L.DepthwiseConv2D(3, padding="same", use_bias=False)(y)))
    y = L.BatchNormalization()(L.Conv2D(16, 1, use_bias=False)(y))
    return keras_body(inp, L.Add()([inp, y])), (1, 16, 16, 16)

def transformer_ffn():
    L = keras.layers
    inp = keras.Input((16, 64), batch_size=1)
    y = L.Dense(256, activation=lambda t: keras.activations.gelu(t, approximate=True))(inp)
    y = L.Dense(64)(y)
    return keras_body(inp, L.LayerNormalization(epsilon=1e-6)(L.Add()([inp, y]))), (1, 16, 64)

def preact_residual():
    L = keras.layers
    inp = keras.Input((12, 12, 8), batch_size=2)
    x = L.Conv2D(8, 3, padding="same")(inp)
    for _ in range(2):
        x = L.Add()([x, L.Conv2D(8, 3, padding="same")(L.Activation("relu")(x))])
    return keras_body(inp, x), (2, 12, 12, 8)

def resnet_stem():
    L = keras.layers
    inp = keras.Input((32, 32, 3), batch_size=1)
    y = L.Conv2D(16, 7, strides=2, padding="valid")(L.ZeroPadding2D(3)(inp))
    y = L.Activation("relu")(L.BatchNormalization(epsilon=1.001e-5)(y))
    return keras_body(inp, L.MaxPooling2D(3, strides=2)(L.ZeroPadding2D(1)(y))), (1, 32, 32, 3)

def layout_fp32():
    L = keras.layers
    inp = keras.Input((3, 3, 4), batch_size=5)
    y = L.Conv2D(4, 2, padding="same", activation="relu")(inp)
    return keras_body(inp, L.Conv2D(4, 2, padding="same", activation="relu")(y)), (5, 3, 3, 4)

def arithmetic_pow():
    class Power(keras.layers.Layer):
        def call(self, x):
            return keras.ops.power(x, 3.0)
    inp = keras.Input((4,), batch_size=3)
    return keras_body(inp, Power()(inp)), (3, 4)

def capture(make, remapping):
    ctx = context.context()
    ctx._optimizer_experimental_options.clear()
    tf.config.optimizer.set_experimental_options({} if remapping else {"remapping": False})
    body, shape = make()
    fn = tf.function(body)
    x = tf.constant(rng.standard_normal(shape).astype("float32"))
    context.enable_run_metadata()
    context.export_run_metadata()
    with tf.device("/CPU:0"):
        fn(x)
    md = context.export_run_metadata()
    context.disable_run_metadata()
    entry = md.function_graphs[-1]
    return {"optimized": graph_to_dict(entry.post_optimization_graph, "optimized", tf),
            "executed": graph_to_dict(merge_partitions(entry.partition_graphs, tf), "executed", tf)}

out = {}
for name in sys.argv[1:]:
    make = globals()[name]
    out[name] = {"on": capture(make, True)}
    if name.startswith("seed_"):
        out[name]["off"] = capture(make, False)
print(json.dumps(out))
'''

SEEDS = ("seed_layout_fp32", "seed_arithmetic_pow")


@pytest.fixture(scope="module", params=["0", "1"], ids=["onednn-off", "onednn-on"])
def direct(request):
    """oneDNN flag -> what TensorFlow itself ran for each model (one fresh process per flag)."""
    names = [*SEEDS, *stack_examples.NAMES]
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "CUDA_VISIBLE_DEVICES": "-1",
           "TF_ENABLE_ONEDNN_OPTS": request.param, "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", DIRECT, *names], cwd=ROOT, capture_output=True, text=True, check=False,
                          timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return request.param, json.loads(proc.stdout.strip().splitlines()[-1])


def ops(stage: dict) -> Counter:
    return Counter(graphs_of({"stages": {"s": stage}})["s"].compute_ops())


def fused(stage: dict) -> Counter:
    graph = graphs_of({"stages": {"s": stage}})["s"]
    return Counter((n.op, tuple(n.fused_ops)) for n in graph.nodes if is_fused_node(n))


def keras_bias_plumbing(counts: Counter) -> Counter:
    """A Keras conv bias is Reshape([1,1,1,C]) then Squeeze before its BiasAdd: on the weight, not the data."""
    return Counter({op: n for op, n in counts.items() if op in ("Reshape", "Squeeze")})


@pytest.mark.parametrize("example", ["layout_fp32", "arithmetic_pow"])
@pytest.mark.parametrize("remapping", ["on", "off"])
def test_seed_examples_run_what_the_seed_tool_draws(engine, direct, example, remapping):
    onednn, runs = direct
    seed = runs[f"seed_{example}"][remapping]
    config = Config.make("cpu", {"TF_ENABLE_ONEDNN_OPTS": onednn}, {"remapping": remapping})
    result = engine.inspect({"stack": stack_examples.example(example)}, config)
    assert result["fingerprint"]["onednn"] == (onednn == "1")
    mine = ops(result["stages"]["executed"])
    plumbing = keras_bias_plumbing(mine)
    assert mine - plumbing == ops(seed["executed"]), (mine, ops(seed["executed"]))
    # The only extra ops are the two convs' bias reshapes (none in the bare x ** 3).
    assert plumbing == (Counter({"Reshape": 2, "Squeeze": 2}) if example == "layout_fp32" else Counter())
    assert fused(result["stages"]["executed"]) == fused(seed["executed"])
    assert "explanation" not in result  # the preset checklist does not apply to a stack


@pytest.mark.parametrize("example", stack_examples.NAMES)
def test_ready_examples_fuse_as_the_same_keras_model_run_directly(engine, direct, example):
    onednn, runs = direct
    config = Config.make("cpu", {"TF_ENABLE_ONEDNN_OPTS": onednn})
    result = engine.inspect({"stack": stack_examples.example(example)}, config)
    theirs = runs[example]["on"]
    for stage in ("optimized", "executed"):
        assert fused(result["stages"][stage]) == fused(theirs[stage]), stage
        assert ops(result["stages"][stage]) == ops(theirs[stage]), stage
    # TensorFlow's output shape is the one the stack's own check worked out before it ran
    assert result["output_shapes"] == [list(parse(stack_examples.example(example)).layers[-1].shape)]


def test_stack_benchmark_proves_which_graph_each_variant_ran(engine):
    result = engine.bench({"stack": stack_examples.example("layout_fp32")}, Config(), reps=3, warmup=1,
                          max_seconds=10)
    proof = result["proof_summary"]
    assert proof["verified"]
    assert any(op.endswith("FusedConv2D") for op in proof["fused_nodes"])
    assert not any("Fused" in op for op in proof["unfused_executed"])
    assert result["agreement"]["within_tolerance"]


def test_a_conv1d_stack_names_the_relu_its_squeeze_keeps_out(engine):
    """Keras' Conv1D: TensorFlow fuses Conv2D + Squeeze + BiasAdd (its output shape worked out as Keras does) and
    the Relu after the Squeeze runs alone, named as a near-miss; a Conv1D with no activation is none."""
    data = {"name": "conv1d", "input": {"shape": [2, 32, 4], "dtype": "float32"}, "layers": [
        {"type": "Conv1D", "filters": 8, "kernel_size": 5, "activation": "relu"},
        {"type": "Conv1D", "filters": 8, "strides": 2, "padding": "valid"}]}
    result = engine.inspect({"stack": data}, Config())
    assert result["output_shapes"] == [[2, 15, 8]]  # (32 - 3) // 2 + 1 steps
    assert [(f["op"], f["fused_ops"]) for f in result["fusions"]] == [("_FusedConv2D", ["BiasAdd"])] * 2
    assert [m["kind"] for m in result["report"]["near_misses"]] == ["activation-after-squeeze"]


def test_every_layer_type_and_activation_builds_and_runs(engine):
    act = [{"type": "Activation", "name": f"a_{a}", "activation": a}
           for a in ("leaky_relu", "tanh", "sigmoid", "gelu_exact", "swish", "hard_swish", "mish", "gelu_approximate")]
    data = {"name": "every_layer", "input": {"shape": [1, 4, 6, 6, 4], "dtype": "float32"}, "layers": [
        {"type": "ZeroPadding3D"},
        {"type": "Conv3D", "filters": 4, "activation": "relu", "padding": "valid"},
        {"type": "Reshape", "target_shape": [24, 6, 4]},
        {"type": "ZeroPadding2D", "padding": [1, 1]},
        {"type": "Conv2D", "filters": 8, "strides": [2, 1], "activation": "elu", "padding": "valid"},
        {"type": "DepthwiseConv2D", "activation": "relu6", "use_bias": False},
        {"type": "BatchNormalization"},
        {"type": "MaxPooling2D"},
        {"type": "AveragePooling2D", "padding": "same"},
        *act,
        {"type": "Multiply", "inputs": ["prev", "a_tanh"]},
        {"type": "AddN", "inputs": ["a_leaky_relu", "a_mish", "prev"]},
        {"type": "Power", "exponent": 2},
        {"type": "LayerNormalization", "center": False},
        {"type": "GlobalAveragePooling2D"},
        {"type": "Flatten"},
        {"type": "Dense", "units": 4, "activation": "sigmoid"},
        {"type": "Add", "inputs": ["prev", "prev"]},
    ]}
    result = engine.inspect({"stack": data}, Config())
    assert result["output_shapes"] == [[1, 4]]
    traced = set(ops(result["stages"]["traced"]))
    assert {"Conv3D", "Conv2D", "DepthwiseConv2dNative", "MaxPool", "AvgPool", "LeakyRelu", "Tanh", "Sigmoid",
            "Erfc", "Softplus", "Relu6", "Elu", "Relu", "Pow", "Mean", "MatMul", "Rsqrt", "Pad"} <= traced, traced
