"""Real user models for the import tests, made with TensorFlow in a process of their own.

    python make_models.py export DIR      # MobileNetV2, a small Keras model and a recurrent one, each as SavedModel,
                                          # .keras and frozen GraphDef (the small one also frozen with
                                          # zero convolution biases), plus the malicious models
    python make_models.py count FORMAT PATH   # a direct TensorFlow run: fused ops in the optimized graph
    python make_models.py count-all DIR       # the same for every model and format of ``export``
    python make_models.py unknown-batch DIR   # two tiny models served with an unknown batch (traffic tests)

``count`` is the tests' oracle: TensorFlow on its own (no explorer code), under whatever
TF_ENABLE_ONEDNN_OPTS the caller sets, prints {op[fused_ops]: count} of the optimized graph.
"""

from __future__ import annotations

import collections
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

CONTRACTIONS = ("Conv2D", "MatMul", "DepthwiseConv2dNative", "BatchMatMulV2", "Conv3D")


def small_model(keras):
    """Conv2D+BN+ReLU, Conv2D+relu, DepthwiseConv2D+relu6, Dense+relu, Dense: several fusion patterns."""
    inp = keras.Input((16, 16, 3), name="image")
    x = keras.layers.Conv2D(8, 3, padding="same")(inp)
    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.ReLU()(x)
    x = keras.layers.Conv2D(8, 3, padding="same", activation="relu")(x)
    x = keras.layers.DepthwiseConv2D(3, padding="same", activation="relu6")(x)
    x = keras.layers.GlobalAveragePooling2D()(x)
    x = keras.layers.Dense(16, activation="relu")(x)
    out = keras.layers.Dense(4)(x)
    return keras.Model(inp, out, name="small")


def recurrent_model(keras):
    """A GRU and an LSTM over a sequence, then Dense+softmax: loops whose bodies hold MatMul + BiasAdd, which
    TensorFlow fuses once it has lowered the loops (as it does serving the model)."""
    inp = keras.Input((12, 8), name="sequence")
    x = keras.layers.GRU(16, return_sequences=True)(inp)
    x = keras.layers.LSTM(8)(x)
    return keras.Model(inp, keras.layers.Dense(4, activation="softmax")(x), name="recurrent")


def nonzero(model, np, keep_zero=()):
    """Non-zero weights everywhere (but the weights whose path contains one of ``keep_zero``): frozen zero
    biases are folded away and then nothing fuses."""
    rng = np.random.default_rng(1)
    for weight in model.weights:
        value = weight.numpy()
        if "variance" in weight.path:
            weight.assign(rng.uniform(0.5, 1.5, value.shape).astype(value.dtype))
        elif not np.any(value) and not any(part in weight.path for part in keep_zero):
            weight.assign(rng.uniform(0.1, 0.5, value.shape).astype(value.dtype))
    return model


def export(directory: str) -> None:
    import keras
    import numpy as np
    import tensorflow as tf
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    def frozen(model, path):
        shape = [None] + list(model.inputs[0].shape[1:])
        function = tf.function(lambda x: model(x, training=False)).get_concrete_function(
            tf.TensorSpec(shape, tf.float32, name="image"))
        with open(path, "wb") as handle:
            handle.write(convert_variables_to_constants_v2(function).graph.as_graph_def().SerializeToString())

    models = {"small": small_model(keras),
              "mobilenetv2": keras.applications.MobileNetV2(weights=None, input_shape=(64, 64, 3), alpha=0.35),
              "recurrent": recurrent_model(keras)}
    for name, model in models.items():
        nonzero(model, np)
        model.export(os.path.join(directory, f"{name}_savedmodel"), verbose=False)
        model.save(os.path.join(directory, f"{name}.keras"))
        frozen(model, os.path.join(directory, f"{name}.pb"))
    # The same small CNN frozen with its convolutions' biases left at zero (an untrained layer that has one).
    frozen(nonzero(small_model(keras), np, keep_zero=("conv2d",)), os.path.join(directory, "small_zero_bias.pb"))

    # Two signatures over the same weights, the batch left unknown: the page's signature dropdown.
    heads = tf.Module()
    heads.w = tf.Variable(np.random.default_rng(2).standard_normal((8, 4)).astype(np.float32))
    heads.b = tf.Variable([0.1, 0.2, 0.3, 0.4])
    spec = tf.TensorSpec([None, 8], tf.float32, name="x")

    @tf.function(input_signature=[spec])
    def relu_head(x):
        return {"y": tf.nn.relu(tf.nn.bias_add(tf.matmul(x, heads.w), heads.b))}

    @tf.function(input_signature=[spec])
    def tanh_head(x):
        return {"y": tf.math.tanh(tf.nn.bias_add(tf.matmul(x, heads.w), heads.b))}

    heads.relu_head, heads.tanh_head = relu_head, tanh_head
    tf.saved_model.save(heads, os.path.join(directory, "two_heads_savedmodel"),
                        signatures={"serving_default": relu_head, "tanh_head": tanh_head})

    # A signature that captures a constant (not a variable): the fast reader leaves it to tf.saved_model.load.
    captured = tf.Module()
    captured.w = tf.Variable(np.random.default_rng(3).standard_normal((8, 4)).astype(np.float32))
    bias = tf.constant([0.1, -0.2, 0.3, 0.4])

    @tf.function(input_signature=[spec])
    def captured_head(x):
        return {"y": tf.nn.relu(tf.nn.bias_add(tf.matmul(x, captured.w), bias))}

    captured.serve = captured_head
    tf.saved_model.save(captured, os.path.join(directory, "captured_savedmodel"),
                        signatures={"serving_default": captured_head})

    # Malicious models. Every file they would touch is under DIR/victim, which the tests watch.
    victim = os.path.join(directory, "victim")
    os.makedirs(victim, exist_ok=True)
    target = os.path.join(victim, "written.txt")
    secret = os.path.join(victim, "secret.txt")
    with open(secret, "w") as handle:
        handle.write("1.5")

    @tf.function(input_signature=[tf.TensorSpec([2], tf.float32, name="x")])
    def writes(x):
        tf.io.write_file(target, tf.strings.as_string(x[0]))
        return x * 2.0

    with open(os.path.join(directory, "writefile.pb"), "wb") as handle:
        handle.write(writes.get_concrete_function().graph.as_graph_def().SerializeToString())

    @tf.function
    def inner(x):
        return x + tf.strings.to_number(tf.io.read_file(secret))

    @tf.function(input_signature=[tf.TensorSpec([2], tf.float32, name="x")])
    def hides(x):
        return inner(x) * 2.0  # ReadFile sits in a library function, reached through a call node

    graph_def = hides.get_concrete_function().graph.as_graph_def()
    assert any(n.op == "ReadFile" for f in graph_def.library.function for n in f.node_def)
    assert not any(n.op == "ReadFile" for n in graph_def.node)
    with open(os.path.join(directory, "readfile_in_function.pb"), "wb") as handle:
        handle.write(graph_def.SerializeToString())

    writing_savedmodel(tf, os.path.join(directory, "writefile_savedmodel"), target)

    hidden = tf.Module()
    hidden.w = tf.Variable([1.0, 2.0])

    @tf.function(input_signature=[tf.TensorSpec([2], tf.float32, name="x")])
    def serve_hidden(x):
        return {"y": inner(x) * hidden.w}

    hidden.serve = serve_hidden
    tf.saved_model.save(hidden, os.path.join(directory, "readfile_savedmodel"),
                        signatures={"serving_default": serve_hidden})

    inp = keras.Input((4,), name="x")
    out = keras.layers.Lambda(lambda t: t * 2.0, name="doubler")(keras.layers.Dense(4)(inp))
    keras.Model(inp, out).save(os.path.join(directory, "lambda.keras"))

    # A text classifier with its TextVectorization inside (TensorFlow's text tutorial exports one): string ops and
    # lookup tables, refused, with the way to bring its numeric part
    vectorize = keras.layers.TextVectorization(max_tokens=20, output_sequence_length=4)
    vectorize.adapt(["the quick brown fox", "jumps over the lazy dog"])
    words = keras.Input((1,), dtype="string", name="text")
    scores = keras.layers.Dense(2)(keras.layers.Flatten()(keras.layers.Embedding(20, 4)(vectorize(words))))
    text_model = keras.Model(words, scores)
    text_model.export(os.path.join(directory, "text_savedmodel"), verbose=False)
    text_model.save(os.path.join(directory, "text.keras"))


def unknown_batch(directory: str) -> None:
    """Tiny models whose batch is left unknown (the first two's sizes worked out by hand in test_import_traffic):
    ``conv_relu.pb``, a frozen GraphDef of Conv2D 3x3 (3 -> 8 channels, SAME) + BiasAdd + Relu on [?, 16, 16, 3],
    ``dense_relu_savedmodel``, a SavedModel of MatMul [?, 8] x [8, 4] + BiasAdd + Relu over variables, and
    ``mixed_bfloat16.pb``, a Dense + GELU computed in bfloat16 between float32 input and output, and
    ``noisy_dense.pb``, a Dense + ReLU whose output gets uniform noise (RandomUniform) on every call, and
    ``looped_savedmodel``, a MatMul + BiasAdd + Relu applied twice in a tf.while_loop whose body reads the variables,
    and ``sequence_conv.pb``, a 1-D convolution (kernel 3, VALID) + BiasAdd + Relu over a sequence of unknown length."""
    import numpy as np
    import tensorflow as tf

    rng = np.random.default_rng(5)
    filters = tf.constant(rng.standard_normal((3, 3, 3, 8)).astype(np.float32))
    bias = tf.constant(rng.uniform(0.1, 0.5, 8).astype(np.float32))

    @tf.function(input_signature=[tf.TensorSpec([None, 16, 16, 3], tf.float32, name="image")])
    def conv(x):
        return tf.nn.relu(tf.nn.bias_add(tf.nn.conv2d(x, filters, 1, "SAME"), bias))

    with open(os.path.join(directory, "conv_relu.pb"), "wb") as handle:
        handle.write(conv.get_concrete_function().graph.as_graph_def().SerializeToString())

    dense = tf.Module()
    dense.w = tf.Variable(rng.standard_normal((8, 4)).astype(np.float32))
    dense.b = tf.Variable([0.1, 0.2, 0.3, 0.4])

    @tf.function(input_signature=[tf.TensorSpec([None, 8], tf.float32, name="x")])
    def serve(x):
        return {"y": tf.nn.relu(tf.nn.bias_add(tf.matmul(x, dense.w), dense.b))}

    dense.serve = serve
    tf.saved_model.save(dense, os.path.join(directory, "dense_relu_savedmodel"), signatures={"serving_default": serve})

    weights16 = tf.constant(rng.standard_normal((64, 32)) / 8, dtype=tf.bfloat16)
    bias16 = tf.constant(rng.uniform(0.1, 0.5, 32), dtype=tf.bfloat16)

    @tf.function(input_signature=[tf.TensorSpec([None, 64], tf.float32, name="x")])
    def mixed(x):  # as Keras's mixed_bfloat16 policy computes a Dense(gelu): bfloat16 inside, float32 out
        y = tf.nn.bias_add(tf.matmul(tf.cast(x, tf.bfloat16), weights16), bias16)
        return tf.cast(tf.nn.gelu(y, approximate=False), tf.float32)

    with open(os.path.join(directory, "mixed_bfloat16.pb"), "wb") as handle:
        handle.write(mixed.get_concrete_function().graph.as_graph_def().SerializeToString())

    weights8 = tf.constant(rng.standard_normal((8, 8)).astype(np.float32))

    @tf.function(input_signature=[tf.TensorSpec([None, 8], tf.float32, name="x")])
    def noisy(x):  # MatMul + BiasAdd + Relu, then noise drawn anew on every call
        y = tf.nn.relu(tf.nn.bias_add(tf.matmul(x, weights8), bias))
        return y + tf.random.uniform(tf.shape(y), 0.0, 0.1)

    with open(os.path.join(directory, "noisy_dense.pb"), "wb") as handle:
        handle.write(noisy.get_concrete_function().graph.as_graph_def().SerializeToString())

    looped = tf.Module()
    looped.w = tf.Variable(rng.standard_normal((8, 8)).astype(np.float32) / 3)
    looped.b = tf.Variable(rng.uniform(0.1, 0.5, 8).astype(np.float32))

    @tf.function(input_signature=[tf.TensorSpec([None, 8], tf.float32, name="x")])
    def twice(x):
        def body(i, y):
            return i + 1, tf.nn.relu(tf.nn.bias_add(tf.matmul(y, looped.w), looped.b))

        return {"y": tf.while_loop(lambda i, y: i < 2, body, (0, x))[1]}

    looped.serve = twice
    tf.saved_model.save(looped, os.path.join(directory, "looped_savedmodel"), signatures={"serving_default": twice})

    kernel = tf.constant(rng.standard_normal((3, 8, 8)).astype(np.float32))

    @tf.function(input_signature=[tf.TensorSpec([None, None, 8], tf.float32, name="sequence")])
    def sequence(x):  # a sequence of length 1 (every unknown dimension fed as 1) is shorter than the kernel
        return tf.nn.relu(tf.nn.bias_add(tf.nn.conv1d(x, kernel, 1, "VALID"), bias))

    with open(os.path.join(directory, "sequence_conv.pb"), "wb") as handle:
        handle.write(sequence.get_concrete_function().graph.as_graph_def().SerializeToString())


def writing_savedmodel(tf, path: str, target: str) -> None:
    """A SavedModel whose serving signature writes ``target`` (tests/security's corpus uses it too)."""
    module = tf.Module()
    module.w = tf.Variable([1.0, 2.0])

    @tf.function(input_signature=[tf.TensorSpec([2], tf.float32, name="x")])
    def serve(x):
        tf.io.write_file(target, tf.strings.as_string(x[0]))
        return {"y": x * module.w}

    module.serve = serve
    tf.saved_model.save(module, path, signatures={"serving_default": serve})


def all_nodes(graph_def):
    yield from graph_def.node
    for function in graph_def.library.function:
        yield from function.node_def


def count(fmt: str, path: str) -> dict:
    """Fused ops and unfused contractions of the optimized graph, from TensorFlow alone."""
    import numpy as np
    import tensorflow as tf
    from tensorflow.python.eager import context

    if fmt == "keras":
        import keras

        model = keras.saving.load_model(path, compile=False)
        shape = [1 if d is None else d for d in model.inputs[0].shape]
        # as served: the unknown dimensions left unknown in the trace (a recurrent model's loops differ otherwise)
        function = tf.function(lambda x: model(x, training=False),
                               input_signature=[tf.TensorSpec(model.inputs[0].shape, tf.float32)])
    elif fmt == "savedmodel":
        loaded = tf.saved_model.load(path)
        signature = loaded.signatures["serving_default"]
        (key, spec), = signature.structured_input_signature[1].items()
        shape = [1 if d is None else d for d in spec.shape]
        function = tf.function(lambda x: signature(**{key: x}))
    else:
        graph_def = tf.compat.v1.GraphDef()
        with open(path, "rb") as handle:
            graph_def.ParseFromString(handle.read())
        placeholder = next(n for n in graph_def.node if n.op == "Placeholder")
        shape = [1 if d.size < 0 else d.size for d in placeholder.attr["shape"].shape.dim]
        wrapped = tf.compat.v1.wrap_function(lambda: tf.compat.v1.import_graph_def(graph_def, name=""), [])
        output = next(n.name for n in reversed(graph_def.node) if n.op == "Identity")
        pruned = wrapped.prune(wrapped.graph.get_tensor_by_name(placeholder.name + ":0"),
                               wrapped.graph.get_tensor_by_name(output + ":0"))
        function = tf.function(lambda x: pruned(x))
    x = tf.constant(np.random.default_rng(0).standard_normal(shape), tf.float32)
    ctx = context.context()
    ctx.enable_run_metadata()
    ctx.export_run_metadata()
    function(x)
    optimized = ctx.export_run_metadata().function_graphs[-1].post_optimization_graph
    ctx.disable_run_metadata()
    counts = collections.Counter()
    for node in all_nodes(optimized):
        if node.op.startswith("_Fused") or node.op in CONTRACTIONS:
            fused = ",".join(s.decode() for s in node.attr["fused_ops"].list.s) if "fused_ops" in node.attr else ""
            counts[f"{node.op}[{fused}]" if fused else node.op] += 1
    return dict(counts)


FILES = {"graphdef": "{}.pb", "savedmodel": "{}_savedmodel", "keras": "{}.keras"}
MODELS = ("small", "mobilenetv2", "recurrent")  # exported in each of FILES


if __name__ == "__main__":
    if sys.argv[1] == "export":
        export(sys.argv[2])
    elif sys.argv[1] == "unknown-batch":
        unknown_batch(sys.argv[2])
    elif sys.argv[1] == "count-all":  # count-all DIR: every model in every format, one process
        counts = {name: {fmt: count(fmt, os.path.join(sys.argv[2], pattern.format(name)))
                         for fmt, pattern in FILES.items()} for name in MODELS}
        counts["captured"] = {"savedmodel": count("savedmodel", os.path.join(sys.argv[2], "captured_savedmodel"))}
        print(json.dumps(counts))
    else:
        print(json.dumps(count(sys.argv[2], sys.argv[3])))
