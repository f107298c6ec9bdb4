"""Dilated convolutions for the near-miss test, and TensorFlow's own account of them (no explorer code).

    python dilated_models.py run PATH...  # each SavedModel called directly: its outputs, the ops after Grappler
    python dilated_models.py graphs DIR   # padded.pb and cropped.pb: space-to-batch written by hand (see graphs)
    python dilated_models.py DIR    # exports DIR/dilated (Keras: a Conv2D "atrous", dilation_rate=2 + relu, and a
                                    # Conv1D "wavenet", dilation_rate=2, a padded Conv2D, and DeepLab's atrous Conv2D
                                    # without bias + batch norm + relu) and prints JSON: for each layer, the ops
                                    # TensorFlow runs after Grappler for Keras's form and for the advised one (one
                                    # Conv2D with dilations), and the largest difference between their outputs

Keras 3 writes a convolution with dilation_rate > 1 through tf.nn.convolution, which puts SpaceToBatchND and
BatchToSpaceND around the Conv2D: the bias no longer follows it, and nothing fuses. The advice is one Conv2D with
``dilations`` (tf.nn.conv2d, or tf.nn.conv1d for a 1-D one).
"""

from __future__ import annotations

import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def ops_after_grappler(function, *args) -> list[str]:
    from tensorflow.python.eager import context

    ctx = context.context()
    ctx.enable_run_metadata()
    function(*args)
    graphs = ctx.export_run_metadata().function_graphs
    ctx.disable_run_metadata()
    return sorted({n.op for g in graphs for n in g.post_optimization_graph.node}
                  - {"_Arg", "_Retval", "Const", "NoOp", "Identity"})


def main(directory: str) -> dict:
    import keras
    import numpy as np
    import tensorflow as tf

    keras.utils.set_random_seed(3)
    layers = keras.layers
    image = keras.Input((16, 16, 3), name="image")
    conv2d = layers.Conv2D(8, 3, dilation_rate=2, activation="relu", bias_initializer="ones", name="atrous")
    signal = keras.Input((32, 4), name="signal")
    conv1d = layers.Conv1D(8, 3, dilation_rate=2, bias_initializer="ones", name="wavenet")
    same = layers.Conv2D(4, 3, dilation_rate=3, padding="same", name="same_padded")  # EXPLICIT padding once rewritten
    # DeepLab's atrous convolution: no bias of its own, a batch norm and a ReLU after it
    aspp = layers.Conv2D(4, 3, dilation_rate=2, padding="same", use_bias=False, name="aspp")
    norm = layers.BatchNormalization(name="aspp_bn")
    model = keras.Model([image, signal], [conv2d(image), conv1d(signal), same(image),
                                          layers.ReLU()(norm(aspp(image)))])
    rng = np.random.default_rng(1)  # non-zero statistics and shift (zeros fold away)
    for weight in norm.weights:
        weight.assign(rng.uniform(0.5, 1.5, weight.shape).astype("float32"))
    model.export(os.path.join(directory, "dilated"), verbose=False)

    rng = np.random.default_rng(0)
    x2 = tf.constant(rng.standard_normal((2, 16, 16, 3)), tf.float32)
    x1 = tf.constant(rng.standard_normal((2, 32, 4)), tf.float32)
    keras2 = tf.function(lambda x: conv2d(x))
    advised2 = tf.function(lambda x: tf.nn.relu(tf.nn.bias_add(
        tf.nn.conv2d(x, conv2d.kernel, 1, "VALID", dilations=2), conv2d.bias)))
    keras1 = tf.function(lambda x: conv1d(x))
    advised1 = tf.function(lambda x: tf.nn.bias_add(tf.nn.conv1d(x, conv1d.kernel, 1, "VALID", dilations=2),
                                                    conv1d.bias))
    out = {}
    for name, (theirs, ours, x) in {"conv2d": (keras2, advised2, x2), "conv1d": (keras1, advised1, x1)}.items():
        out[name] = {"keras": ops_after_grappler(theirs, x), "advised": ops_after_grappler(ours, x),
                     "max_diff": float(tf.reduce_max(tf.abs(theirs(x) - ours(x))))}
    return out


def graphs(directory: str) -> None:
    """Frozen GraphDefs written by hand with tf.space_to_batch_nd: ``padded.pb`` (a padding of 1 on each side that
    the crops leave, so one Conv2D with EXPLICIT padding), ``cropped.pb`` (crops beyond the paddings: no padding
    makes one Conv2D of it, so it is left)."""
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(5)
    w, b = rng.standard_normal((3, 3, 4, 6)).astype(np.float32), rng.uniform(0.1, 0.5, 6).astype(np.float32)
    spec = tf.TensorSpec([1, 12, 12, 4], tf.float32, name="x")
    for name, paddings, crops in (("padded", [[1, 3], [1, 3]], [[0, 2], [0, 2]]),
                                  ("cropped", [[0, 0], [0, 0]], [[0, 2], [0, 2]])):
        @tf.function(input_signature=[spec])
        def model(x, paddings=paddings, crops=crops):
            y = tf.nn.conv2d(tf.space_to_batch_nd(x, [2, 2], paddings), tf.constant(w), 1, "VALID")  # Consts
            return tf.nn.relu(tf.nn.bias_add(tf.compat.v1.batch_to_space_nd(y, [2, 2], crops), tf.constant(b)))

        with open(os.path.join(directory, f"{name}.pb"), "wb") as handle:
            handle.write(model.get_concrete_function().graph.as_graph_def().SerializeToString())


def run(path: str) -> dict:
    """A SavedModel's serving signature called directly on seeded inputs: its outputs and the fused ops TensorFlow
    made of it."""
    import numpy as np
    import tensorflow as tf

    function = tf.saved_model.load(path).signatures["serving_default"]
    rng = np.random.default_rng(0)
    feeds = {name: tf.constant(rng.standard_normal([2 if d is None else d for d in spec.shape]), spec.dtype)
             for name, spec in sorted(function.structured_input_signature[1].items())}
    ops = ops_after_grappler(lambda: function(**feeds))  # the first call: the one whose graphs are optimised
    outputs = function(**feeds)
    return {"outputs": {k: v.numpy().tolist() for k, v in sorted(outputs.items())},
            "fused": [op for op in ops if op.startswith("_Fused")], "ops": ops}


if __name__ == "__main__":
    if sys.argv[1] == "graphs":
        graphs(sys.argv[2])
    elif sys.argv[1] == "run":
        print(json.dumps({path: run(path) for path in sys.argv[2:]}))
    else:
        print(json.dumps(main(sys.argv[1])))
