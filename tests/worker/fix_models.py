"""Small models for the rewrite tests, and TensorFlow's own run of a model (the oracle), each in a process
of its own.

    python fix_models.py export DIR          # the models below, seeded non-zero weights and statistics
    python fix_models.py run PATH...          # each model run directly by TensorFlow (no explorer code):
                                              # its fused ops after Grappler and its outputs, as JSON

Models: ``bn_cnn`` (Conv2D with a bias + batch norm + Relu, Conv2D without bias + batch norm + Relu6,
DepthwiseConv2D + batch norm, Dense + batch norm) as a SavedModel and frozen as ``bn_cnn.pb``; ``bn_bf16`` (batch
norms in float32 between bfloat16 convolutions: Keras's mixed_bfloat16 policy); ``bn_nchw`` (channels-first
Conv2D with a bias + batch norm + Relu, and without bias + batch norm + Relu6);
``adds`` (a tf.Module: Conv2D and MatMul whose 1-D biases are added with ``+``, and a residual add
of two convolutions, which is no bias); ``conv1d`` (Keras Conv1D layers with
Relu, Elu and Tanh) ``conv1d_dilated`` (one with dilation_rate 2 and a Relu) and ``conv1d_bn`` (Conv1D
+ BatchNormalization + ReLU, with and without the conv's bias); ``bn_preact`` (pre-activation residual blocks:
ReLU, Conv2D + batch norm, + the block's input); ``bn_dense_residual`` (Dense + batch norm + the input + ReLU, then
Dense + batch norm); ``second_bias`` (the same Conv2D and MatMul with a BiasAdd and then a second
bias added with ``+`` before their Relu); ``bias_preact`` (two convs whose biases are added with ``+`` in
pre-activation residual blocks); ``dense3d`` (Dense on a 3-D input: MatMul, Reshape, BiasAdd); ``dense_gelu4d`` (a Dense GELU on a 4-D input) and
``dense_gelu_residual`` (one on a 3-D input, with a residual add after it);
``attention_mask2d`` and ``attention_mask4d`` (q·kᵀ × scale + a [6, 6] or a [1, 1, 6, 6] mask);
``moments`` (a normalisation whose scale comes from the input's own moments: not a batch norm in
inference, so nothing may fold it; its shift a captured constant, which TensorFlow's loader hands over
as a captured tensor beside the variables).
"""

from __future__ import annotations

import collections
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
SEED = 7


def _nonzero(model, np):
    rng = np.random.default_rng(1)
    for weight in model.weights:
        value = weight.numpy()
        if "variance" in weight.path:
            weight.assign(rng.uniform(0.5, 1.5, value.shape).astype(value.dtype))
        elif "moving_mean" in weight.path or "beta" in weight.path:
            weight.assign(rng.uniform(-0.3, 0.3, value.shape).astype(value.dtype))
        elif "gamma" in weight.path:
            weight.assign(rng.uniform(0.5, 2.0, value.shape).astype(value.dtype))
        elif not np.any(value):
            weight.assign(rng.uniform(0.1, 0.5, value.shape).astype(value.dtype))
    return model


def export(directory: str) -> None:
    import keras
    import numpy as np
    import tensorflow as tf
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    keras.utils.set_random_seed(SEED)
    layers = keras.layers
    image = keras.Input((12, 12, 3), name="image")
    x = layers.ReLU()(layers.BatchNormalization()(layers.Conv2D(8, 3, padding="same")(image)))
    x = layers.ReLU(6.0)(layers.BatchNormalization()(layers.Conv2D(8, 1, use_bias=False)(x)))
    x = layers.BatchNormalization()(layers.DepthwiseConv2D(3, padding="same")(x))
    x = layers.Flatten()(layers.MaxPooling2D(4)(x))
    x = layers.ReLU()(layers.BatchNormalization()(layers.Dense(6)(x)))
    bn_cnn = _nonzero(keras.Model(image, layers.Dense(4)(x)), np)
    bn_cnn.export(os.path.join(directory, "bn_cnn"), verbose=False)
    concrete = tf.function(lambda t: bn_cnn(t, training=False)).get_concrete_function(
        tf.TensorSpec([None, 12, 12, 3], tf.float32, name="image"))
    with open(os.path.join(directory, "bn_cnn.pb"), "wb") as handle:
        handle.write(convert_variables_to_constants_v2(concrete).graph.as_graph_def().SerializeToString())

    # Channels first: Keras adds a channels-first conv's bias as Reshape → Add and writes the batch norm's scale and
    # shift as [1, C, 1, 1] tensors (oneDNN runs an NCHW Conv2D on CPU, and fuses one)
    planes = keras.Input((3, 12, 12), name="image")
    x = layers.ReLU()(layers.BatchNormalization(axis=1)(
        layers.Conv2D(8, 3, padding="same", data_format="channels_first")(planes)))
    x = layers.ReLU(6.0)(layers.BatchNormalization(axis=1)(
        layers.Conv2D(8, 1, use_bias=False, data_format="channels_first")(x)))
    x = layers.GlobalAveragePooling2D(data_format="channels_first")(x)
    _nonzero(keras.Model(planes, layers.Dense(4)(x)), np).export(os.path.join(directory, "bn_nchw"), verbose=False)

    # Under Keras's mixed_bfloat16 policy a batch norm computes in float32 between Casts: Conv2D → Cast → Mul →
    # AddV2 → Cast back; a float32 batch norm (its own policy) after a depthwise conv has no Cast back.
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        x = layers.ReLU()(layers.BatchNormalization()(layers.Conv2D(8, 3, use_bias=False)(image)))
        x = layers.BatchNormalization(dtype="float32")(layers.DepthwiseConv2D(3, use_bias=False)(x))
        bn_bf16 = _nonzero(keras.Model(image, layers.Dense(4, dtype="float32")(layers.GlobalAveragePooling2D()(x))), np)
    finally:
        keras.mixed_precision.set_global_policy("float32")
    bn_bf16.export(os.path.join(directory, "bn_bf16"), verbose=False)

    tokens = keras.Input((5, 16), name="tokens")
    dense3d = _nonzero(keras.Model(tokens, layers.Dense(4)(layers.Dense(12, activation="relu")(tokens))), np)
    dense3d.export(os.path.join(directory, "dense3d"), verbose=False)
    # Keras 3's Dense(activation="gelu") on a 4-D tensor: MatMul → Reshape → BiasAdd → GELU as element-wise ops
    grid = keras.Input((3, 5, 16), name="grid")
    dense_gelu = _nonzero(keras.Model(grid, layers.Dense(8, activation="gelu")(grid)), np)
    dense_gelu.export(os.path.join(directory, "dense_gelu4d"), verbose=False)
    # The same on a 3-D input with a residual add after the GELU (a Transformer's MLP): the add reads the block's
    # input too, so it is no part of the GELU
    tokens16 = keras.Input((5, 16), name="tokens")
    mlp = _nonzero(keras.Model(tokens16, tokens16 + layers.Dense(16, activation="gelu")(tokens16)), np)
    mlp.export(os.path.join(directory, "dense_gelu_residual"), verbose=False)

    # Keras' Conv1D: Conv2D → Squeeze → BiasAdd → activation. TensorFlow fuses the first three and leaves the Relu and
    # the Elu outside; a Tanh after a Conv2D fuses in no form (left alone)
    steps = keras.Input((24, 5), name="steps")
    y = layers.Conv1D(8, 3, activation="relu")(steps)
    y = layers.Conv1D(8, 3, activation="elu", padding="same")(y)
    conv1d = _nonzero(keras.Model(steps, layers.Conv1D(4, 1, activation="tanh")(y)), np)
    conv1d.export(os.path.join(directory, "conv1d"), verbose=False)
    # A dilated one (WaveNet's): space-to-batch around the Conv2D, and its Relu after the Squeeze once it is gone
    dilated = keras.Model(steps, layers.Conv1D(8, 3, dilation_rate=2, activation="relu")(steps))
    _nonzero(dilated, np).export(os.path.join(directory, "conv1d_dilated"), verbose=False)
    # Conv1D + BatchNormalization + ReLU (audio and sensor models), with and without the conv's own bias
    y = layers.ReLU()(layers.BatchNormalization()(layers.Conv1D(8, 3, use_bias=False)(steps)))
    y = layers.ReLU()(layers.BatchNormalization()(layers.Conv1D(8, 3)(y)))
    _nonzero(keras.Model(steps, y), np).export(os.path.join(directory, "conv1d_bn"), verbose=False)
    # Pre-activation residual blocks with a batch norm after each conv (Xception's middle flow): once folded, each
    # conv + bias + add + relu is the pattern oneDNN's remapper fails on (the add is read by the next skip too)
    x = layers.Conv2D(8, 3, padding="same")(image)
    for _ in range(2):
        x = layers.Add()([x, layers.BatchNormalization()(layers.Conv2D(8, 3, padding="same", use_bias=False)(
            layers.ReLU()(x)))])
    _nonzero(keras.Model(image, x), np).export(os.path.join(directory, "bn_preact"), verbose=False)
    # Dense + batch norm + residual + ReLU (with oneDNN, folded, the remapper would write a node with no op), then
    # a Dense + batch norm that folds
    features = keras.Input((16,), name="features")
    y = layers.ReLU()(layers.Add()([features, layers.BatchNormalization()(layers.Dense(16, use_bias=False)(features))]))
    y = layers.BatchNormalization()(layers.Dense(8, use_bias=False)(y))
    _nonzero(keras.Model(features, y), np).export(os.path.join(directory, "bn_dense_residual"), verbose=False)

    rng = np.random.default_rng(SEED)
    module = tf.Module()
    module.w1 = tf.Variable(rng.standard_normal((3, 3, 3, 8)).astype(np.float32))
    module.b1 = tf.Variable(rng.uniform(0.1, 0.5, 8).astype(np.float32))
    module.w2 = tf.Variable(rng.standard_normal((3, 3, 8, 8)).astype(np.float32))
    module.w3 = tf.Variable(rng.standard_normal((3, 3, 8, 8)).astype(np.float32))
    module.w4 = tf.Variable(rng.standard_normal((8, 5)).astype(np.float32))
    module.b4 = tf.Variable(rng.uniform(0.1, 0.5, 5).astype(np.float32))

    @tf.function(input_signature=[tf.TensorSpec([None, 10, 10, 3], tf.float32, name="image")])
    def adds(t):
        y = tf.nn.relu(tf.nn.conv2d(t, module.w1, 1, "SAME") + module.b1)  # a bias written as +
        y = tf.nn.conv2d(y, module.w2, 1, "SAME") + tf.nn.conv2d(y, module.w3, 1, "SAME")  # a residual: no bias
        return {"y": tf.nn.relu(tf.matmul(tf.reduce_mean(y, [1, 2]), module.w4) + module.b4)}

    module.adds = adds
    tf.saved_model.save(module, os.path.join(directory, "adds"), signatures={"serving_default": adds})

    # A second bias after the BiasAdd (a hand-written layer's extra offset): TensorFlow fuses Conv2D + BiasAdd and
    # MatMul + BiasAdd and leaves the Add and the Relu outside; the last conv's Add is followed by no activation
    module.c1 = tf.Variable(rng.uniform(0.1, 0.5, 8).astype(np.float32))
    module.c4 = tf.Variable(rng.uniform(0.1, 0.5, 5).astype(np.float32))

    @tf.function(input_signature=[tf.TensorSpec([None, 10, 10, 3], tf.float32, name="image")])
    def second_bias(t):
        y = tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(t, module.w1, 1, "SAME"), module.b1) + module.c1)
        y = tf.nn.bias_add(tf.nn.conv2d(y, module.w2, 1, "SAME"), module.c1) + module.b1
        return {"y": tf.nn.relu(tf.nn.bias_add(tf.matmul(tf.reduce_mean(y, [1, 2]), module.w4), module.b4) + module.c4)}

    module.second_bias = second_bias
    tf.saved_model.save(module, os.path.join(directory, "second_bias"), signatures={"serving_default": second_bias})

    # Biases written with + in pre-activation residual blocks: as a BiasAdd, the first conv's would make the pattern
    # oneDNN's remapper fails on (its sum is read by the Relu and by the last add); the second's sum is read once
    @tf.function(input_signature=[tf.TensorSpec([None, 10, 10, 8], tf.float32, name="image")])
    def bias_preact(t):
        s = tf.nn.conv2d(t, module.w2, 1, "SAME") + module.b1 + t
        return {"y": tf.nn.conv2d(tf.nn.relu(s), module.w3, 1, "SAME") + module.c1 + s}

    module.bias_preact = bias_preact
    tf.saved_model.save(module, os.path.join(directory, "bias_preact"), signatures={"serving_default": bias_preact})

    # Attention's scores: q·kᵀ × scale + mask. oneDNN fuses them (_MklFusedBatchMatMulV2) for a [1, 1, q, k] mask,
    # not for a [q, k] one (the TensorFlow tutorial's look-ahead mask)
    def attention(mask_shape):
        holder = tf.Module()
        holder.mask = tf.Variable(rng.uniform(-1.0, 0.0, mask_shape).astype(np.float32))

        @tf.function(input_signature=[tf.TensorSpec([None, 2, 6, 8], tf.float32, name="q"),
                                      tf.TensorSpec([None, 2, 6, 8], tf.float32, name="k")])
        def scores(q, k):
            return {"y": tf.nn.softmax(tf.matmul(q, k, transpose_b=True) * 0.35 + holder.mask)}

        holder.scores = scores
        return holder

    for name, shape in (("attention_mask2d", (6, 6)), ("attention_mask4d", (1, 1, 6, 6))):
        holder = attention(shape)
        tf.saved_model.save(holder, os.path.join(directory, name), signatures={"serving_default": holder.scores})

    norm = tf.Module()
    norm.w = tf.Variable(rng.standard_normal((3, 3, 3, 8)).astype(np.float32))
    norm.gamma = tf.Variable(rng.uniform(0.5, 2.0, 8).astype(np.float32))
    beta = tf.constant(rng.uniform(-0.1, 0.1, 8).astype(np.float32))  # a captured constant, not a variable

    @tf.function(input_signature=[tf.TensorSpec([None, 10, 10, 3], tf.float32, name="image")])
    def moments(t):
        y = tf.nn.conv2d(t, norm.w, 1, "SAME")
        mean, variance = tf.nn.moments(y, [0, 1, 2])
        scale = norm.gamma * tf.math.rsqrt(variance + 1e-3)
        return {"y": tf.nn.relu(y * scale + (beta - mean * scale))}

    norm.moments = moments
    tf.saved_model.save(norm, os.path.join(directory, "moments"), signatures={"serving_default": moments})


def run(path: str) -> dict:
    """TensorFlow alone: the model called once with run metadata on; its fused ops and its outputs."""
    import numpy as np
    import tensorflow as tf
    from tensorflow.python.eager import context

    def seeded(shapes: list) -> list:
        rng = np.random.default_rng(0)
        return [tf.constant(rng.standard_normal([2 if d is None or d < 0 else d for d in shape]), tf.float32)
                for shape in shapes]

    if os.path.isdir(path):
        function = tf.saved_model.load(path).signatures["serving_default"]
        specs = sorted(function.structured_input_signature[1].items())
        feeds = dict(zip((key for key, _ in specs), seeded([spec.shape for _, spec in specs])))


        def call() -> list:
            return list(function(**feeds).values())
    else:
        graph_def = tf.compat.v1.GraphDef()
        with open(path, "rb") as handle:
            graph_def.ParseFromString(handle.read())
        placeholder = next(n for n in graph_def.node if n.op == "Placeholder")
        consumed = {i.lstrip("^").split(":")[0] for n in graph_def.node for i in n.input}
        outputs = [n.name + ":0" for n in graph_def.node if n.name not in consumed and n.op not in ("NoOp", "Const")]
        wrapped = tf.compat.v1.wrap_function(lambda: tf.compat.v1.import_graph_def(graph_def, name=""), [])
        pruned = wrapped.prune(wrapped.graph.get_tensor_by_name(placeholder.name + ":0"),
                               [wrapped.graph.get_tensor_by_name(o) for o in outputs])
        (x,) = seeded([[d.size for d in placeholder.attr["shape"].shape.dim]])

        def call() -> list:  # the other branch's, on a GraphDef
            return tf.function(lambda t: pruned(t))(x)
    ctx = context.context()
    ctx.enable_run_metadata()
    ctx.export_run_metadata()
    out = call()
    graphs = ctx.export_run_metadata().function_graphs
    ctx.disable_run_metadata()
    optimized = max(graphs, key=lambda g: len(g.post_optimization_graph.node)).post_optimization_graph
    fused = collections.Counter()
    for node in optimized.node:
        if node.op.startswith(("_Fused", "_Mkl")):
            ops = ",".join(s.decode() for s in node.attr["fused_ops"].list.s) if "fused_ops" in node.attr else ""
            fused[f"{node.op}[{ops}]" if ops else node.op] += 1
    return {"fused": dict(fused), "outputs": [np.asarray(t).tolist() for t in out]}


if __name__ == "__main__":
    if sys.argv[1] == "export":
        export(sys.argv[2])
    else:
        print(json.dumps({path: run(path) for path in sys.argv[2:]}))
