"""Real networks for the truth tests, and TensorFlow's own account of them, each in a process of its own.

    python networks.py export DIR NAME...     # SavedModels: keras.applications (weights=None, 32×32),
                                              # a Transformer encoder block, an old-style Conv2D/Dense stack,
                                              # and for the benchmarks more (recurrent ones among them)
    python networks.py direct DIR NAME...     # the oracle: each SavedModel's serving signature called
                                              # directly with run metadata (no explorer code), as JSON

Every network gets seeded non-zero weights and batch-norm statistics (zero biases fold away under
constant folding). ``direct`` reads the post-Grappler graph of the signature's run (batch unknown, as
served) under whatever TF_ENABLE_ONEDNN_OPTS the caller sets, and counts, with plain code of its own:
fused ops, unfused contractions, the calls XLA must compile, and the shapes around a contraction that
the near-miss finder names (what follows each fused contraction, layer norms as arithmetic, Einsums).
"""

from __future__ import annotations

import collections
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

CONTRACTIONS = ("Conv2D", "MatMul", "DepthwiseConv2dNative", "BatchMatMulV2", "Conv3D", "Einsum")
FUSED_CONTRACTIONS = ("_FusedConv2D", "_FusedMatMul", "_FusedDepthwiseConv2dNative", "_FusedConv3D")
NETWORKS = ("mobilenetv3small", "efficientnetb0", "resnet50", "convnexttiny", "transformer", "oldstyle")


def _nonzero(model, np):
    rng = np.random.default_rng(1)
    for weight in model.weights:
        value = weight.numpy()
        if "variance" in weight.path:
            weight.assign(rng.uniform(0.5, 1.5, value.shape).astype(value.dtype))
        elif "moving_mean" in weight.path:
            weight.assign(rng.uniform(-0.2, 0.2, value.shape).astype(value.dtype))
        elif not np.any(value):
            weight.assign(rng.uniform(0.1, 0.5, value.shape).astype(value.dtype))
    return model


def _transformer(keras):
    """One encoder block: self-attention (EinsumDense projections), residual, LayerNorm, a GELU MLP."""
    tokens = keras.Input((16, 32), name="tokens")
    attended = keras.layers.MultiHeadAttention(4, 8)(tokens, tokens)
    x = keras.layers.LayerNormalization()(tokens + attended)
    mlp = keras.layers.Dense(32, activation="gelu")(keras.layers.Dense(64, activation="gelu")(x))
    return keras.Model(tokens, keras.layers.LayerNormalization()(x + mlp))


def _oldstyle(keras):
    """A LeNet-like stack: Conv2D+relu, pooling, Conv2D+tanh, Flatten, Dense+sigmoid, Dense+softmax."""
    image = keras.Input((32, 32, 3), name="image")
    x = keras.layers.Conv2D(8, 3, activation="relu")(image)
    x = keras.layers.MaxPooling2D()(x)
    x = keras.layers.Conv2D(16, 3, activation="tanh")(x)
    x = keras.layers.Dense(32, activation="sigmoid")(keras.layers.Flatten()(x))
    return keras.Model(image, keras.layers.Dense(10, activation="softmax")(x))


def _deeplabv3(keras, size: int):
    """DeepLabV3's head on a MobileNetV2 (alpha 0.35): ASPP's 1×1 branch, three atrous 3×3 branches (rates 6, 12,
    18; Conv2D without bias + BatchNormalization + ReLU) and image pooling, concatenated, projected, upsampled."""
    layers = keras.layers
    backbone = keras.applications.MobileNetV2(weights=None, input_shape=(size, size, 3), alpha=0.35, include_top=False)
    x = backbone.output

    def branch(y, kernel, rate=1):
        y = layers.Conv2D(32, kernel, padding="same", dilation_rate=rate, use_bias=False)(y)
        return layers.ReLU()(layers.BatchNormalization()(y))

    pooled = layers.GlobalAveragePooling2D(keepdims=True)(x)
    pooled = layers.UpSampling2D(x.shape[1:3])(branch(pooled, 1))
    y = layers.Concatenate()([branch(x, 1), *(branch(x, 3, rate) for rate in (6, 12, 18)), pooled])
    y = layers.Conv2D(4, 1)(branch(y, 1))
    return keras.Model(backbone.input, layers.UpSampling2D(size // y.shape[1], interpolation="bilinear")(y))


def _conv1d(keras, size: int):
    """A temporal CNN (audio, sensors): Conv1D + ReLU layers over SIZE×16 steps of 32 channels, one of them dilated
    (WaveNet's), pooled into a Dense classifier."""
    layers = keras.layers
    steps = keras.Input((size * 16, 32), name="steps")
    x = layers.Conv1D(64, 5, padding="same", activation="relu")(steps)
    x = layers.Conv1D(64, 5, padding="same", activation="relu")(x)
    x = layers.Conv1D(128, 5, padding="causal", dilation_rate=2, activation="relu")(x)
    x = layers.Conv1D(128, 5, padding="same", activation="relu")(x)
    return keras.Model(steps, layers.Dense(10)(layers.GlobalAveragePooling1D()(x)))


def _recurrent(keras, kind: str):
    """A sequence classifier: token ids, an Embedding, two recurrent layers (the first returning sequences), a Dense
    head."""
    layers = keras.layers
    tokens = keras.Input((24,), dtype="int32", name="tokens")
    x = layers.Embedding(100, 32)(tokens)
    x = getattr(layers, kind)(32, return_sequences=True)(x)
    x = getattr(layers, kind)(32)(x)
    return keras.Model(tokens, layers.Dense(4, activation="softmax")(layers.Dense(16, activation="relu")(x)))


def _mixed_bfloat16(keras, make):
    """A network under Keras's mixed_bfloat16 policy (bfloat16 layers, batch norms computed in float32)."""
    keras.mixed_precision.set_global_policy("mixed_bfloat16")
    try:
        return make()
    finally:
        keras.mixed_precision.set_global_policy("float32")


def build(name: str, keras, size: int = 32):
    apps = keras.applications
    shape, big = (size, size, 3), (max(size, 75), max(size, 75), 3)
    makers = {"mobilenetv3small": lambda: apps.MobileNetV3Small(weights=None, input_shape=shape),
              "efficientnetb0": lambda: apps.EfficientNetB0(weights=None, input_shape=shape),
              "resnet50": lambda: apps.ResNet50(weights=None, input_shape=shape),
              "convnexttiny": lambda: apps.ConvNeXtTiny(weights=None, input_shape=shape),
              "densenet121": lambda: apps.DenseNet121(weights=None, input_shape=shape),
              "mobilenetv2": lambda: apps.MobileNetV2(weights=None, input_shape=shape, alpha=0.35),
              "transformer": lambda: _transformer(keras), "oldstyle": lambda: _oldstyle(keras),
              # for benchmarks/fixes.py, beside the tests' NETWORKS: atrous convolutions, Conv1D, mixed precision
              "deeplabv3": lambda: _deeplabv3(keras, size), "conv1d": lambda: _conv1d(keras, size),
              "mobilenetv2_bf16": lambda: _mixed_bfloat16(keras, makers["mobilenetv2"]),
              # a wider sweep (benchmarks/real_models.py --networks ...): 75×75 at least, Xception's and Inception's floor
              "xception": lambda: apps.Xception(weights=None, input_shape=big),
              "inceptionv3": lambda: apps.InceptionV3(weights=None, input_shape=big),
              "resnet50v2": lambda: apps.ResNet50V2(weights=None, input_shape=shape),
              "vgg16": lambda: apps.VGG16(weights=None, input_shape=shape),
              "efficientnetv2b0": lambda: apps.EfficientNetV2B0(weights=None, input_shape=shape),
              "mobilenet": lambda: apps.MobileNet(weights=None, input_shape=shape),
              "nasnetmobile": lambda: apps.NASNetMobile(weights=None, input_shape=shape),
              "lstm": lambda: _recurrent(keras, "LSTM"), "gru": lambda: _recurrent(keras, "GRU")}
    return makers[name]()


def export(directory: str, names) -> None:
    import keras
    import numpy as np

    keras.utils.set_random_seed(0)
    for name in names:
        # NETWORKS_SIZE: the input's height and width (32 in the tests; benchmarks/fixes.py takes larger ones)
        size = int(os.environ.get("NETWORKS_SIZE", "32"))
        _nonzero(build(name, keras, size), np).export(os.path.join(directory, name), verbose=False)


def _consumers(graph_def):
    out = collections.defaultdict(list)
    for node in graph_def.node:
        for text in node.input:
            if not text.startswith("^"):
                out[text.split(":")[0]].append(node)
    return out


def direct(path: str) -> dict:
    """TensorFlow alone: the serving signature called with run metadata on, its optimized graph counted."""
    import numpy as np
    import tensorflow as tf
    from tensorflow.python.eager import context

    signature = tf.saved_model.load(path).signatures["serving_default"]
    (key, spec), = signature.structured_input_signature[1].items()
    shape, rng = [1 if d is None else d for d in spec.shape], np.random.default_rng(0)
    # token ids in range of any vocabulary (an Embedding's), as the explorer feeds integers
    x = tf.constant(rng.integers(0, 10, shape) if spec.dtype.is_integer else rng.standard_normal(shape), spec.dtype)
    ctx = context.context()
    ctx.enable_run_metadata()
    ctx.export_run_metadata()
    signature(**{key: x})
    graphs = ctx.export_run_metadata().function_graphs
    ctx.disable_run_metadata()
    optimized = max(graphs, key=lambda g: len(g.post_optimization_graph.node)).post_optimization_graph
    consumers = _consumers(optimized)
    fused, unfused, after_fused = collections.Counter(), collections.Counter(), collections.Counter()
    must_compile = 0
    for node in optimized.node:
        ops = [s.decode() for s in node.attr["fused_ops"].list.s] if "fused_ops" in node.attr else []
        if node.op.startswith(("_Fused", "_Mkl")):
            fused[f"{node.op}[{','.join(ops)}]" if ops else node.op] += 1
        elif node.op in CONTRACTIONS:
            unfused[node.op] += 1
        if node.op in FUSED_CONTRACTIONS:
            outs = [c.op for c in consumers[node.name]]
            if len(outs) == 1:
                after_fused[outs[0]] += 1
        if node.op in ("StatefulPartitionedCall", "PartitionedCall") and node.attr["_XlaMustCompile"].b:
            must_compile += 1
    ops = collections.Counter(n.op for n in optimized.node)
    return {"fused": dict(fused), "unfused": dict(unfused), "after_fused": dict(after_fused),
            "must_compile": must_compile, "squared_difference": ops["SquaredDifference"],
            "einsum": ops["Einsum"], "layer_norm_ops": ops["_MklLayerNorm"]}


if __name__ == "__main__":
    command, directory, names = sys.argv[1], sys.argv[2], sys.argv[3:] or list(NETWORKS)
    if command == "export":
        export(directory, names)
    else:
        print(json.dumps({name: direct(os.path.join(directory, name)) for name in names}))
