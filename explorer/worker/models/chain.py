"""TensorFlow builders for model specs. Imported by the worker only (it needs TensorFlow).

``build(spec, tf)`` returns the Python body of the tf.function and its argument names;
``make_inputs(spec, tf)`` the seeded inputs.
Weights are function arguments, not constants, so constant folding cannot remove the pattern.
"""

from __future__ import annotations

import numpy as np

SEED = 20261122


def _activation(tf, name: str, y):
    if name == "none":
        return y
    if name == "Relu":
        return tf.nn.relu(y)
    if name == "Relu6":
        return tf.nn.relu6(y)
    if name == "Elu":
        return tf.nn.elu(y)
    if name == "LeakyRelu":
        return tf.nn.leaky_relu(y, alpha=0.2)
    if name == "Tanh":
        return tf.math.tanh(y)
    if name == "Sigmoid":
        return tf.math.sigmoid(y)
    if name == "GeluApproximate":
        return tf.nn.gelu(y, approximate=True)
    if name == "GeluExact":
        return tf.nn.gelu(y, approximate=False)
    if name == "Swish":
        return y * tf.math.sigmoid(y)
    if name == "HardSwish":
        # The spelling the remapper matches after the arithmetic optimiser (y * relu6(y+3) * 1/6).
        return y * tf.nn.relu6(y + 3.0) * (1.0 / 6.0)
    if name == "Mish":
        return y * tf.math.tanh(tf.math.softplus(y))
    if name == "LeakyReluMax":
        return tf.maximum(y * 0.2, y)
    raise ValueError(f"unknown activation {name}")


def input_dtype(spec, name: str, tf):
    """The dtype of the model's argument ``name``."""
    # FusedBatchNorm keeps its statistics in float32 whatever the input type; the hash-bucket
    # model (no dtype parameter) takes int64 ids.
    if name in ("scale", "offset", "mean", "variance"):
        return tf.float32
    return tf.as_dtype(spec.p.get("dtype", "int64"))


def inputs_made(spec) -> dict:
    """How ``make_inputs`` makes the inputs, in words (what the agreement check says it ran on)."""
    if spec.chain.kind == "hash_bucket":
        return {"seed": SEED, "how": f"numpy default_rng({SEED}): integers uniform in [0, 2^40)"}
    return {"seed": SEED, "how": f"numpy default_rng({SEED}): standard normal; weights divided by sqrt(fan-in), "
                                 "scale and variance uniform in [0.5, 1.5]; cast to the model's dtype"}


def make_inputs(spec, tf) -> dict:
    """Seeded inputs for every tensor the spec names, in the spec's dtype."""
    rng = np.random.default_rng(SEED)
    if spec.chain.kind == "hash_bucket":
        return {"x": tf.constant(rng.integers(0, 1 << 40, spec.tensor_shapes()["x"]), dtype=tf.int64)}
    shapes = spec.tensor_shapes()
    fan_in = 1
    if "w" in shapes:
        fan_in = int(np.prod(shapes["w"][:-1])) if spec.chain.contraction != "BatchMatMulV2" else shapes["w"][1]
    inputs = {}
    for name, shape in shapes.items():
        if name == "out":
            continue
        if name == "w":
            data = rng.standard_normal(shape) / np.sqrt(max(fan_in, 1))
        elif name in ("variance", "scale"):
            data = rng.uniform(0.5, 1.5, shape)
        else:
            data = rng.standard_normal(shape)
        inputs[name] = tf.cast(tf.constant(data.astype(np.float32)), input_dtype(spec, name, tf))
    return inputs


def build(spec, tf):
    """Return (body, arg_names): body(*args) builds the chain; args follow arg_names."""
    body, names = _build(spec, tf)
    # The builders branch on the spec only, never on a tensor: AutoGraph would rewrite them to the same
    # graph, and its first conversion costs ~1.5 s of every cold worker's first answer.
    return tf.autograph.experimental.do_not_convert(body), names


def _build(spec, tf):
    c, p = spec.chain, spec.p
    if c.kind != "chain":
        return KIND_BUILDERS[c.kind](spec, tf)
    nchw = p.get("data_format") == "NCHW"
    fmt = "NCHW" if nchw else "NHWC"
    names = [n for n in spec.tensor_shapes() if n != "out"]

    def body(*args):
        t = dict(zip(names, args))
        extra = []
        y = t["x"]
        if c.contraction in ("MatMul", "BatchMatMulV2"):
            y = tf.linalg.matmul(y, t["w"])
        elif c.contraction == "Conv2D":
            y = tf.nn.conv2d(y, t["w"], strides=1, padding="SAME", data_format=fmt)
        elif c.contraction == "DepthwiseConv2dNative":
            y = tf.nn.depthwise_conv2d(y, t["w"], strides=[1, 1, 1, 1], padding="SAME", data_format=fmt)
        elif c.contraction == "Conv3D":
            fmt3 = "NCDHW" if nchw else "NDHWC"
            if c.pad:
                k = p["filter_size"] // 2
                pads = [[0, 0], [0, 0], [k, k], [k, k], [k, k]] if nchw else [[0, 0], [k, k], [k, k], [k, k], [0, 0]]
                y = tf.nn.conv3d(tf.pad(y, pads), t["w"], [1] * 5, "VALID", data_format=fmt3)
            else:
                y = tf.nn.conv3d(y, t["w"], [1] * 5, "SAME", data_format=fmt3)
        if p.get("second_consumer"):
            extra.append(tf.identity(tf.reduce_sum(y), name="second_consumer"))
        if p.get("return_intermediate") == "contraction":
            extra.append(y)
        if c.squeeze:
            y = tf.squeeze(y, axis=[3 if nchw else 2])
        if c.bias == "BiasAdd":
            # After a squeeze the tensor is 3-D with channels last in NHWC, second in NCHW.
            y = tf.nn.bias_add(y, t["b"], data_format="NCHW" if nchw else None)
        elif c.bias == "Add":
            b = t["b"]
            if nchw and y.shape.rank >= 4:
                b = tf.reshape(b, [1, -1] + [1] * (y.shape.rank - 2))
            y = y + b
        if c.bias != "none" and p.get("return_intermediate") == "bias":
            extra.append(y)
        if c.norm == "FusedBatchNorm":
            training = bool(p.get("training"))
            y, _, _ = tf.compat.v1.nn.fused_batch_norm(
                y, t["scale"], t["offset"],
                mean=None if training else t["mean"],
                variance=None if training else t["variance"],
                epsilon=0.001, data_format=fmt, is_training=training,
            )
            if p.get("return_intermediate") == "norm":
                extra.append(y)
        if c.side_add:
            y = y + t["side"]
        y = _activation(tf, c.activation, y)
        return (y, *extra) if extra else y

    body.__name__ = "model"
    return body, names


def _hash_bucket(spec, tf):
    buckets = spec.p["buckets"]

    def model(x):
        return tf.strings.to_hash_bucket_fast(tf.strings.as_string(x), buckets)

    return model, ["x"]


def _batchnorm_fold(spec, tf):
    # Constant statistics: the remapper rewrites the batch norm into Mul and Add primitives.
    c = spec.p["channels"]
    rng = np.random.default_rng(SEED + 1)
    stats = [rng.uniform(0.5, 1.5, c).astype(np.float32) for _ in range(4)]
    fmt = spec.p["data_format"]

    def model(x):
        scale, offset, mean, var = (tf.constant(v) for v in stats)
        y, _, _ = tf.compat.v1.nn.fused_batch_norm(x, scale, offset, mean, var, epsilon=0.001,
                                                   data_format=fmt, is_training=False)
        return y

    return model, ["x"]


def _batch_matmul_scale_add(spec, tf):
    def model(x, w, side):
        return tf.linalg.matmul(x, w) * tf.constant(0.125, dtype=x.dtype) + side

    return model, ["x", "w", "side"]


def _layer_norm(spec, tf):
    n = spec.p["n"]
    rng = np.random.default_rng(SEED + 2)
    gamma, beta = rng.uniform(0.5, 1.5, n).astype(np.float32), rng.standard_normal(n).astype(np.float32)

    def model(x):
        # axes=[1], not [-1]: the remapper's LayerNorm matcher wants rank-1 as a non-negative axis.
        mean, var = tf.nn.moments(x, axes=[1], keepdims=True)
        return tf.nn.batch_normalization(x, mean, var, tf.cast(tf.constant(beta), x.dtype),
                                         tf.cast(tf.constant(gamma), x.dtype), 1e-3)

    return model, ["x"]


def _instance_norm(spec, tf):
    c = spec.p["channels"]
    rng = np.random.default_rng(SEED + 3)
    gamma = rng.uniform(0.5, 1.5, (1, 1, 1, c)).astype(np.float32)
    beta = rng.standard_normal((1, 1, 1, c)).astype(np.float32)
    act = spec.chain.activation

    def model(x):
        g, b = tf.cast(tf.constant(gamma), x.dtype), tf.cast(tf.constant(beta), x.dtype)
        mean = tf.reduce_mean(x, [1, 2], keepdims=True)
        var = tf.reduce_mean(tf.math.squared_difference(x, mean), [1, 2], keepdims=True)
        inv = tf.math.rsqrt(var + tf.constant(1e-5, x.dtype)) * g
        y = x * inv + (b - mean * inv)
        return _activation(tf, act, y)

    return model, ["x"]


def _batchnorm_grad(spec, tf):
    def model(x, scale, offset):
        with tf.GradientTape() as tape:
            tape.watch([scale, offset])
            y, _, _ = tf.compat.v1.nn.fused_batch_norm(x, scale, offset, is_training=True)
            y = tf.nn.relu(y)
            loss = tf.reduce_sum(tf.cast(y, tf.float32))
        d_scale, d_offset = tape.gradient(loss, [scale, offset])
        return y, d_scale, d_offset

    return model, ["x", "scale", "offset"]


KIND_BUILDERS = {
    "hash_bucket": _hash_bucket,
    "batchnorm_fold": _batchnorm_fold,
    "batch_matmul_scale_add": _batch_matmul_scale_add,
    "layer_norm": _layer_norm,
    "instance_norm": _instance_norm,
    "batchnorm_grad": _batchnorm_grad,
}
