"""TensorFlow builders for model specs. Imported by the worker only (it needs TensorFlow).

``build(spec, tf, device)`` returns the Python body of the tf.function and its seeded inputs.
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
    raise ValueError(f"unknown activation {name}")


def make_inputs(spec, tf) -> dict:
    """Seeded inputs for every tensor the spec names, in the spec's dtype."""
    rng = np.random.default_rng(SEED)
    dtype = tf.as_dtype(spec.p["dtype"])
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
        elif name == "variance":
            data = rng.uniform(0.5, 1.5, shape)
        elif name == "scale":
            data = rng.uniform(0.5, 1.5, shape)
        else:
            data = rng.standard_normal(shape)
        # FusedBatchNorm keeps its statistics in float32 whatever the input type.
        kind = tf.float32 if name in ("scale", "offset", "mean", "variance") else dtype
        inputs[name] = tf.cast(tf.constant(data.astype(np.float32)), kind)
    return inputs


def build(spec, tf):
    """Return (body, arg_names): body(*args) builds the chain; args follow arg_names."""
    c, p = spec.chain, spec.p
    nchw = p.get("data_format") == "NCHW"
    fmt = "NCHW" if nchw else "NHWC"
    names = [n for n in spec.tensor_shapes() if n != "out"]

    def body(*args):
        t = dict(zip(names, args))
        extra = []
        y = t["x"]
        if c.contraction == "MatMul":
            y = tf.linalg.matmul(y, t["w"])
        elif c.contraction == "BatchMatMulV2":
            y = tf.linalg.matmul(y, t["w"])
        elif c.contraction == "Conv2D":
            y = tf.nn.conv2d(y, t["w"], strides=1, padding="SAME", data_format=fmt)
        elif c.contraction == "DepthwiseConv2dNative":
            y = tf.nn.depthwise_conv2d(y, t["w"], strides=[1, 1, 1, 1], padding="SAME", data_format=fmt)
        contraction_out = y
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
            if nchw and y.shape.rank == 4:
                b = tf.reshape(b, [1, -1, 1, 1])
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
        del contraction_out
        return (y, *extra) if extra else y

    body.__name__ = "model"
    return body, names
