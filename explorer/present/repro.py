"""Export what the explorer found: a standalone script that reproduces a run, and a zip for a bug report.

``script(spec, config)`` writes a Python script that needs only TensorFlow and numpy (no explorer):
it sets the configuration's environment flags before TensorFlow is imported, builds the same model
as ``explorer.models`` does for that spec (written out as plain TF code, with the same seeded
inputs), sets the Grappler switches, calls the ``tf.function`` once with run metadata on, and
prints the fused ops of the graph after Grappler and of the executed partition graphs. With
``--pbtxt-dir`` it also writes the three stage graphs as pbtxt.

``bundle(result)`` zips that script with the three graphs of an inspect result and a JSON summary
(fingerprint, configuration, spec, fusions, explanation).

Pure text generation: nothing here imports TensorFlow. The models must stay in step with
``explorer/models.py``; tests/worker/test_repro.py runs the scripts and compares their fused ops
with the engine's.
"""

from __future__ import annotations

import io
import json
import math
import zipfile

from ..analysis.fusion import FUSED_OP_PREFIXES, STOCK_FUSED_NAMES
from ..model.devices import is_simulated
from ..model.flags import ENV_FLAGS, Config
from ..model.spec import ModelSpec, resolve
from ..model.stack import to_text

SEED = 20261122  # explorer.models.SEED (the same seeded inputs)
VMODULE = "remapper=2"
STAGE_FILES = ("traced", "optimized", "executed")
JSON_MARK = "# repro-json: "  # the script's last line: its findings as JSON, for tools

# explorer.fusion's tables, written into the script so that it needs no explorer.
FUSED_PREFIXES = tuple(prefix for prefix, _ in FUSED_OP_PREFIXES)
STOCK_FUSED = tuple(sorted(STOCK_FUSED_NAMES))


def _config(config) -> Config:
    if isinstance(config, Config):
        return config
    return Config.from_dict(config or {})


# ---- the model, as TF code ------------------------------------------------------------------

_ACTIVATIONS = {
    "Relu": ["y = tf.nn.relu(y)"],
    "Relu6": ["y = tf.nn.relu6(y)"],
    "Elu": ["y = tf.nn.elu(y)"],
    "LeakyRelu": ["y = tf.nn.leaky_relu(y, alpha=0.2)"],
    "Tanh": ["y = tf.math.tanh(y)"],
    "Sigmoid": ["y = tf.math.sigmoid(y)"],
    "GeluApproximate": ["y = tf.nn.gelu(y, approximate=True)"],
    "GeluExact": ["y = tf.nn.gelu(y, approximate=False)"],
    "Swish": ["y = y * tf.math.sigmoid(y)"],
    "HardSwish": ["# the spelling the remapper matches after the arithmetic optimiser: y * relu6(y+3) * 1/6",
                  "y = y * tf.nn.relu6(y + 3.0) * (1.0 / 6.0)"],
    "Mish": ["y = y * tf.math.tanh(tf.math.softplus(y))"],
    "LeakyReluMax": ["y = tf.maximum(y * 0.2, y)  # LeakyRelu spelled as Maximum(x*0.2, x)"],
}


def _activation(name: str) -> list[str]:
    return [] if name == "none" else list(_ACTIVATIONS[name])


def _chain_body(spec: ModelSpec) -> list[str]:
    """The body of ``model(...)`` for an op chain, line by line (explorer.models.build)."""
    c, p = spec.chain, spec.p
    nchw = p.get("data_format") == "NCHW"
    fmt = "NCHW" if nchw else "NHWC"
    lines: list[str] = []
    extra: list[str] = []
    if c.contraction in ("MatMul", "BatchMatMulV2"):
        lines.append("y = tf.linalg.matmul(x, w)")
    elif c.contraction == "Conv2D":
        lines.append(f'y = tf.nn.conv2d(x, w, strides=1, padding="SAME", data_format="{fmt}")')
    elif c.contraction == "DepthwiseConv2dNative":
        lines.append(f'y = tf.nn.depthwise_conv2d(x, w, strides=[1, 1, 1, 1], padding="SAME", data_format="{fmt}")')
    elif c.contraction == "Conv3D":
        fmt3 = "NCDHW" if nchw else "NDHWC"
        if c.pad:
            k = p["filter_size"] // 2
            pads = [[0, 0], [0, 0], [k, k], [k, k], [k, k]] if nchw else [[0, 0], [k, k], [k, k], [k, k], [0, 0]]
            lines.append(f"y = tf.pad(x, {pads})  # an explicit Pad before the convolution")
            lines.append(f'y = tf.nn.conv3d(y, w, [1, 1, 1, 1, 1], "VALID", data_format="{fmt3}")')
        else:
            lines.append(f'y = tf.nn.conv3d(x, w, [1, 1, 1, 1, 1], "SAME", data_format="{fmt3}")')
    else:
        lines.append("y = x")
    if p.get("second_consumer"):
        lines.append('second = tf.identity(tf.reduce_sum(y), name="second_consumer")  '
                     "# a second consumer of the contraction output")
        extra.append("second")
    ret = p.get("return_intermediate", "none")
    if ret == "contraction":
        lines.append("contraction_out = y  # also returned: the contraction output gets a second consumer")
        extra.append("contraction_out")
    if c.squeeze:
        lines.append(f"y = tf.squeeze(y, axis=[{3 if nchw else 2}])")
    if c.bias == "BiasAdd":
        lines.append('y = tf.nn.bias_add(y, b, data_format="NCHW")' if nchw else "y = tf.nn.bias_add(y, b)")
    elif c.bias == "Add":
        rank = len(spec.tensor_shapes()["out"])
        if nchw and rank >= 4:
            lines.append(f"y = y + tf.reshape(b, {[1, -1] + [1] * (rank - 2)})")
        else:
            lines.append("y = y + b")
    if c.bias != "none" and ret == "bias":
        lines.append("bias_out = y  # also returned: the bias output gets a second consumer")
        extra.append("bias_out")
    if c.norm == "FusedBatchNorm":
        if p.get("training"):
            lines += ["y, _, _ = tf.compat.v1.nn.fused_batch_norm(",
                      f'    y, scale, offset, mean=None, variance=None, epsilon=0.001, data_format="{fmt}",',
                      "    is_training=True)  # training: batch statistics (mean and variance go unused)"]
        else:
            lines += ["y, _, _ = tf.compat.v1.nn.fused_batch_norm(",
                      f'    y, scale, offset, mean=mean, variance=variance, epsilon=0.001, data_format="{fmt}",',
                      "    is_training=False)"]
        if ret == "norm":
            lines.append("norm_out = y  # also returned: the batch norm output gets a second consumer")
            extra.append("norm_out")
    if c.side_add:
        lines.append("y = y + side  # a residual input")
    lines += _activation(c.activation)
    lines.append(f"return {', '.join(['y', *extra])}" if extra else "return y")
    return lines


def _kind_model(spec: ModelSpec) -> tuple[list[str], list[str]]:
    """(module-level constants, model function) for the models that are not op chains."""
    c, p = spec.chain, spec.p
    kind = c.kind
    if kind == "hash_bucket":
        return [], ["def model(x):",
                    f"    return tf.strings.to_hash_bucket_fast(tf.strings.as_string(x), {p['buckets']})"]
    if kind == "batchnorm_fold":
        return ([f"_rng = np.random.default_rng({SEED + 1})",
                 f"STATS = [_rng.uniform(0.5, 1.5, {p['channels']}).astype(np.float32) for _ in range(4)]"],
                ["def model(x):",
                 "    # Constant statistics: the remapper rewrites the batch norm into Mul and Add primitives.",
                 "    scale, offset, mean, var = (tf.constant(v) for v in STATS)",
                 "    y, _, _ = tf.compat.v1.nn.fused_batch_norm(x, scale, offset, mean, var, epsilon=0.001,",
                 f'                                               data_format="{p["data_format"]}", is_training=False)',
                 "    return y"])
    if kind == "batch_matmul_scale_add":
        return [], ["def model(x, w, side):",
                    "    return tf.linalg.matmul(x, w) * tf.constant(0.125, dtype=x.dtype) + side"]
    if kind == "layer_norm":
        return ([f"_rng = np.random.default_rng({SEED + 2})",
                 f"GAMMA = _rng.uniform(0.5, 1.5, {p['n']}).astype(np.float32)",
                 f"BETA = _rng.standard_normal({p['n']}).astype(np.float32)"],
                ["def model(x):",
                 "    # axes=[1], not [-1]: the remapper's LayerNorm matcher wants rank-1 as a non-negative axis.",
                 "    mean, var = tf.nn.moments(x, axes=[1], keepdims=True)",
                 "    return tf.nn.batch_normalization(x, mean, var, tf.cast(tf.constant(BETA), x.dtype),",
                 "                                     tf.cast(tf.constant(GAMMA), x.dtype), 1e-3)"])
    if kind == "instance_norm":
        ch = p["channels"]
        body = ["def model(x):",
                "    g, b = tf.cast(tf.constant(GAMMA), x.dtype), tf.cast(tf.constant(BETA), x.dtype)",
                "    mean = tf.reduce_mean(x, [1, 2], keepdims=True)",
                "    var = tf.reduce_mean(tf.math.squared_difference(x, mean), [1, 2], keepdims=True)",
                "    inv = tf.math.rsqrt(var + tf.constant(1e-5, x.dtype)) * g",
                "    y = x * inv + (b - mean * inv)"]
        body += ["    " + line for line in _activation(c.activation)]
        body.append("    return y")
        return ([f"_rng = np.random.default_rng({SEED + 3})",
                 f"GAMMA = _rng.uniform(0.5, 1.5, (1, 1, 1, {ch})).astype(np.float32)",
                 f"BETA = _rng.standard_normal((1, 1, 1, {ch})).astype(np.float32)"], body)
    if kind == "batchnorm_grad":
        return [], ["def model(x, scale, offset):",
                    "    with tf.GradientTape() as tape:",
                    "        tape.watch([scale, offset])",
                    "        y, _, _ = tf.compat.v1.nn.fused_batch_norm(x, scale, offset, is_training=True)",
                    "        y = tf.nn.relu(y)",
                    "        loss = tf.reduce_sum(tf.cast(y, tf.float32))",
                    "    d_scale, d_offset = tape.gradient(loss, [scale, offset])",
                    "    return y, d_scale, d_offset"]
    raise ValueError(f"no script for model kind {kind!r}")


def _arg_names(spec: ModelSpec) -> list[str]:
    """The model's arguments: every input tensor the spec names, in the worker's order."""
    return [n for n in spec.tensor_shapes() if n != "out"]


def _inputs(spec: ModelSpec) -> list[str]:
    """make_inputs(): the seeded inputs of explorer.models.make_inputs, one line each, same draws."""
    shapes = spec.tensor_shapes()
    lines = ["def make_inputs():", f"    rng = np.random.default_rng({SEED})"]
    if spec.chain.kind == "hash_bucket":
        lines.append(f"    x = tf.constant(rng.integers(0, 1 << 40, {tuple(shapes['x'])}), dtype=tf.int64)")
        lines.append("    return [x]")
        return lines
    dtype = spec.p["dtype"]
    fan_in = 1
    if "w" in shapes:
        w = shapes["w"]
        fan_in = w[1] if spec.chain.contraction == "BatchMatMulV2" else math.prod(w[:-1])
    for name, shape in shapes.items():
        if name == "out":
            continue
        shape = tuple(shape)
        if name == "w":
            draw = f"(rng.standard_normal({shape}) / np.sqrt({max(fan_in, 1)}))"
        elif name in ("variance", "scale"):
            draw = f"rng.uniform(0.5, 1.5, {shape})"
        else:
            draw = f"rng.standard_normal({shape})"
        # FusedBatchNorm keeps its statistics in float32 whatever the input type.
        kind = "float32" if name in ("scale", "offset", "mean", "variance") else dtype
        lines.append(f"    {name} = tf.cast(tf.constant({draw}.astype(np.float32)), tf.{kind})")
    lines.append(f"    return [{', '.join(_arg_names(spec))}]")
    return lines


def model_code(spec) -> str:
    """The model function (and its constants) as TF code: what explorer.models builds for ``spec``."""
    spec = resolve(spec)
    if spec.chain.kind == "chain":
        head = [f"def model({', '.join(_arg_names(spec))}):",
                f'    """{spec.chain.describe()}"""']
        return "\n".join(head + ["    " + line for line in _chain_body(spec)])
    constants, body = _kind_model(spec)
    return "\n".join(constants + ([""] if constants else []) + body)


# ---- the script ------------------------------------------------------------------------------

_RUN = '''
def is_fused(node):
    """A fused kernel: a fused_ops attribute, or a fused op type (_FusedMatMul, _MklNativeFusedConv2D ...)."""
    if "fused_ops" in node.attr and node.attr["fused_ops"].list.s:
        return True
    op = node.op
    for prefix in ("_MklNative", "_Mkl", "_"):
        if op.startswith(prefix) and len(op) > len(prefix):
            if op[len(prefix):] in STOCK_FUSED:
                return False
            break
    return op.startswith(FUSED_PREFIXES)


def fused_nodes(graph_def):
    found = []
    for node in graph_def.node:
        if is_fused(node):
            ops = [s.decode() for s in node.attr["fused_ops"].list.s] if "fused_ops" in node.attr else []
            extra = {}
            for key in ("activation_mode", "num_side_inputs"):  # _FusedBatchNormEx says it in attributes
                if key in node.attr:
                    value = node.attr[key]
                    extra[key] = value.s.decode() if value.WhichOneof("value") == "s" else str(value.i)
            found.append({"name": node.name, "op": node.op, "fused_ops": ops, "attrs": extra})
    return found


def show(title, graph_def):
    nodes = fused_nodes(graph_def)
    print(f"{title}: {len(graph_def.node)} nodes, {len(nodes)} fused")
    for n in nodes:
        ops = f" [{', '.join(n['fused_ops'])}]" if n["fused_ops"] else ""
        attrs = "".join(f" {k}={v}" for k, v in n["attrs"].items())
        print(f"  {n['op']}{ops}{attrs}   ({n['name']})")
    if not nodes:
        print("  (no fused op)")
    return nodes


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--pbtxt-dir", nargs="?", const=os.path.dirname(os.path.abspath(__file__)),
                        help="write traced.pbtxt, optimized.pbtxt and executed.pbtxt to this directory "
                             "(without a value: beside this script)")
    args = parser.parse_args(argv)

    if GRAPPLER:
        tf.config.optimizer.set_experimental_options(GRAPPLER)
    with tf.device(DEVICE):
        inputs = make_inputs()
    fn = tf.function(model)
    context.enable_run_metadata()
    try:
        with tf.device(DEVICE):
            fn(*inputs)
        metadata = context.export_run_metadata()
    finally:
        context.disable_run_metadata()
    entry = metadata.function_graphs[-1]
    stages = {"traced": entry.pre_optimization_graph, "optimized": entry.post_optimization_graph}
    executed = tf.compat.v1.GraphDef()
    for part in entry.partition_graphs:
        executed.node.extend(part.node)
    stages["executed"] = executed

    print(f"TensorFlow {tf.__version__}, oneDNN flag {os.environ.get('TF_ENABLE_ONEDNN_OPTS', 'unset')}, "
          f"device {DEVICE}, Grappler options {GRAPPLER or 'defaults'}")
    found = {
        "optimized": show("After Grappler (post-optimization graph)", stages["optimized"]),
        "executed": show("As executed (partition graphs)", stages["executed"]),
    }
    same = [(n.name, n.op) for n in stages["traced"].node] == [(n.name, n.op) for n in stages["optimized"].node]
    if same:
        print("note: the graph after Grappler has the same nodes as the traced graph: Grappler changed nothing, "
              "or gave up on this function (look for 'Ignoring multi-device function optimization failure' above)")
    if args.pbtxt_dir:
        os.makedirs(args.pbtxt_dir, exist_ok=True)
        for name, graph_def in stages.items():
            path = os.path.join(args.pbtxt_dir, f"{name}.pbtxt")
            with open(path, "w") as handle:
                handle.write(text_format.MessageToString(graph_def))
            print(f"wrote {path}")
    print(JSON_MARK + json.dumps({name: [{"op": n["op"], "fused_ops": n["fused_ops"]} for n in nodes]
                                  for name, nodes in found.items()}, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''


def _device(config: Config) -> tuple[str, list[str]]:
    """The tf.device of the script, and what the header says about it."""
    if config.device == "cpu":
        return "/CPU:0", []
    if config.device == "gpu":
        return "/GPU:0", []
    profile = config.device.partition(":")[2]
    return "/GPU:0", [
        f"The explorer SIMULATED a GPU ({profile}): Grappler's GPU decisions on a virtual device, nothing run.",
        "This script needs a real GPU to show the same; without one TensorFlow places everything on the CPU.",
    ]


def _env_lines(config: Config) -> list[str]:
    env = config.env_dict
    lines = ["# The environment of the explorer's worker: set before TensorFlow is imported (read once per process)."]
    for name in ENV_FLAGS:
        if name in env:
            lines.append(f"os.environ[{name!r}] = {env[name]!r}")
        else:
            lines.append(f"os.environ.pop({name!r}, None)  # unset: TensorFlow's default")
    lines.append(f'os.environ["TF_CPP_VMODULE"] = "{VMODULE}"  # the remapper logs each fusion it makes (stderr)')
    lines.append('os.environ["TF_CPP_MIN_LOG_LEVEL"] = "0"')
    if config.device == "cpu":
        lines.append('os.environ["CUDA_VISIBLE_DEVICES"] = "-1"  # as the explorer runs it: no GPU in a CPU run')
    elif is_simulated(config.device) and "TF_ENABLE_ONEDNN_OPTS" not in env:
        lines.append('os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"  # the explorer simulates GPUs with oneDNN off')
    return lines


def _grappler(config: Config) -> dict[str, bool]:
    return {name: value == "on" for name, value in config.grappler}


def _command(spec: ModelSpec, config: Config) -> str:
    try:
        from .command import command_line

        return command_line(spec.to_dict(), config, "inspect")
    except Exception:  # the header line is a courtesy; the script stands without it
        return ""


def script(spec, config=None) -> str:
    """A standalone Python script (TensorFlow and numpy only) that reproduces the explorer's run."""
    spec, config = resolve(spec), _config(config)
    device, device_notes = _device(config)
    label = spec.preset or "custom op chain"
    params = ", ".join(f"{k}={v}" for k, v in spec.params)
    command = _command(spec, config)
    env_text = config.shell_env() or "no flags (TensorFlow's defaults)"
    doc = [
        f"Reproduce a TF Fusion Explorer run: {spec.chain.describe()} ({label}).",
        "",
        f"Model parameters: {params}.",
        f"Device: {config.device}. Environment: {env_text}. "
        f"Grappler switches: {', '.join(f'{k}={v}' for k, v in config.grappler) or 'defaults'}.",
        *device_notes,
        "",
        "Needs only TensorFlow and numpy. Run:  python repro.py [--pbtxt-dir [DIR]]",
        "It calls the model's tf.function once with run metadata on and prints the fused ops of the graph",
        "after Grappler and of the executed partition graphs; the remapper's own log lines (TF_CPP_VMODULE)",
        "go to stderr. The last line repeats the findings as JSON.",
    ]
    if command:
        doc += ["", f"Made by the explorer for:  {command}"]
    out = ["#!/usr/bin/env python3", '"""' + "\n".join(doc).replace('"""', "'''") + '\n"""', "", "import os", ""]
    out += _env_lines(config)
    out += ["", "import argparse  # noqa: E402", "import json  # noqa: E402", "import sys  # noqa: E402", "",
            "import numpy as np  # noqa: E402", "import tensorflow as tf  # noqa: E402",
            "from google.protobuf import text_format  # noqa: E402",
            "from tensorflow.python.eager import context  # noqa: E402", ""]
    out += [f"DEVICE = {device!r}",
            f"GRAPPLER = {_grappler(config)!r}  # tf.config.optimizer.set_experimental_options",
            f"JSON_MARK = {JSON_MARK!r}",
            f"FUSED_PREFIXES = {FUSED_PREFIXES!r}",
            f"STOCK_FUSED = {STOCK_FUSED!r}", "", ""]
    out += model_code(spec).splitlines()
    out += ["", ""]
    out += _inputs(spec)
    out += ["", "", ""]
    return "\n".join(out) + _RUN.lstrip("\n")


# ---- the bundle --------------------------------------------------------------------------------

def summary(result: dict) -> dict:
    """What the bundle's summary.json holds: enough to read the run without the explorer."""
    return {
        "spec": result.get("spec"),
        "config": result.get("config"),
        "fingerprint": result.get("fingerprint"),
        "fusions": result.get("fusions"),
        "fusions_by_pair": result.get("fusions_by_pair"),
        "explanation": result.get("explanation"),
        "warnings": result.get("warnings"),
        "remapper_log": (result.get("grappler") or {}).get("remapper_log"),
        "simulated": bool(result.get("simulated")),
    }


README = """TF Fusion Explorer export
=========================

repro.py         a standalone script (TensorFlow and numpy only) that rebuilds the model with the same
                 environment flags and Grappler options, calls it once and prints the fused ops.
                 Run: python repro.py --pbtxt-dir out/
                 (for a layer stack: stack.json instead; python -m explorer inspect --spec stack.json)
traced.pbtxt     the graph tf.function built (before Grappler)
optimized.pbtxt  the graph after Grappler (the remapper's fusions are here)
executed.pbtxt   the partition graphs that ran (oneDNN renames fused ops to _MklNative*)
summary.json     TensorFlow build and machine, configuration, model spec, fusions and the explorer's verdict
"""


def bundle(result: dict) -> bytes:
    """A zip of repro.py, the stage graphs (pbtxt), summary.json and a README, for a bug report."""
    buffer = io.BytesIO()
    stamp = (2026, 1, 1, 0, 0, 0)  # fixed: the same result gives the same bytes

    def add(name: str, text: str) -> None:
        info = zipfile.ZipInfo(name, date_time=stamp)
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = (0o755 if name.endswith(".py") else 0o644) << 16
        archive.writestr(info, text)

    with zipfile.ZipFile(buffer, "w") as archive:
        spec = result["spec"]
        if "stack" in spec:  # a Keras model: the stack's JSON rebuilds it (`python -m explorer inspect --spec`)
            add("stack.json", to_text(spec["stack"]) + "\n")
        else:
            add("repro.py", script(spec, result.get("config")))
        for stage in STAGE_FILES:
            text = (result.get("pbtxt") or {}).get(stage)
            if text:
                add(f"{stage}.pbtxt", text)
        add("summary.json", json.dumps(summary(result), indent=2, sort_keys=True, default=str) + "\n")
        add("README.txt", README)
    return buffer.getvalue()


def bundle_name(result: dict) -> str:
    spec = result.get("spec") or {}
    config = result.get("config") or {}
    flags = "-".join(f"{k.lower()}{v}" for k, v in sorted((config.get("env") or {}).items()) if len(v) <= 3)
    base = spec.get("preset") or ("stack" if "stack" in spec else "chain")
    device = str(config.get("device", "cpu")).replace(":", "-")
    return f"fusion-{base}-{device}" + (f"-{flags}" if flags else "")
