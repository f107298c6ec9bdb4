"""Layer stacks -> a Keras 3 functional model: the graph a user's own Keras code makes.

``build(spec, tf)`` returns (body, ["x"]): body(x) calls the model with training=False.
``make_inputs(spec, tf)`` the seeded input. Every weight is overwritten with seeded NON-ZERO values:
an untrained Keras model has zero biases, betas and moving means and unit gammas and variances, which
a frozen graph's constant folding removes (and with them the patterns), and which make trivial numbers.
The weights stay Keras variables (ReadVariableOp inputs of the function), as in a user's model.
"""

from __future__ import annotations

import numpy as np

MERGE = ("Add", "AddN", "Multiply")


def _activation(keras, name: str):
    a = keras.activations
    return {
        "none": None, "relu": a.relu, "relu6": a.relu6, "elu": a.elu, "leaky_relu": a.leaky_relu,
        "tanh": a.tanh, "sigmoid": a.sigmoid, "swish": a.silu, "hard_swish": a.hard_silu, "mish": a.mish,
        # Keras' "gelu" string means the exact form: name both explicitly.
        "gelu_approximate": lambda t: a.gelu(t, approximate=True),
        "gelu_exact": lambda t: a.gelu(t, approximate=False),
    }[name]


def _power_layer(keras):
    class Power(keras.layers.Layer):
        """x ** exponent through keras.ops.power: what `x ** 3` in a user's custom layer becomes."""

        def __init__(self, exponent, **kwargs):
            super().__init__(**kwargs)
            self.exponent = exponent

        def call(self, x):
            return keras.ops.power(x, self.exponent)

    return Power


def _layer(keras, layer, dtype):
    L, p, kw, t = keras.layers, dict(layer.params), {"name": layer.name, "dtype": dtype}, layer.type
    if "activation" in p:
        p["activation"] = _activation(keras, p["activation"])
    if t == "Activation":
        return L.Activation(p["activation"] or "linear", **kw)
    if t == "Dense":
        return L.Dense(p["units"], activation=p["activation"], use_bias=p["use_bias"], **kw)
    if t in ("Conv1D", "Conv2D", "Conv3D"):
        cls = {"Conv1D": L.Conv1D, "Conv2D": L.Conv2D, "Conv3D": L.Conv3D}[t]
        return cls(p["filters"], p["kernel_size"], strides=p["strides"], padding=p["padding"],
                   activation=p["activation"], use_bias=p["use_bias"], **kw)
    if t == "DepthwiseConv2D":
        return L.DepthwiseConv2D(p["kernel_size"], strides=p["strides"], padding=p["padding"],
                                 depth_multiplier=p["depth_multiplier"], activation=p["activation"],
                                 use_bias=p["use_bias"], **kw)
    if t in ("BatchNormalization", "LayerNormalization"):
        cls = L.BatchNormalization if t == "BatchNormalization" else L.LayerNormalization
        return cls(epsilon=p["epsilon"], center=p["center"], scale=p["scale"], **kw)
    if t in ("Add", "AddN"):  # Keras has no AddN layer; TF makes the AddN op from 3+ inputs
        return L.Add(**kw)
    if t == "Multiply":
        return L.Multiply(**kw)
    if t == "Power":
        return _power_layer(keras)(p["exponent"], **kw)
    if t == "Reshape":
        return L.Reshape(p["target_shape"], **kw)
    if t == "Flatten":
        return L.Flatten(**kw)
    if t in ("MaxPooling2D", "AveragePooling2D"):
        return getattr(L, t)(p["pool_size"], strides=p["strides"], padding=p["padding"], **kw)
    if t == "GlobalAveragePooling2D":
        return L.GlobalAveragePooling2D(**kw)
    if t in ("ZeroPadding2D", "ZeroPadding3D"):
        return getattr(L, t)(p["padding"], **kw)
    raise ValueError(f"{layer.where}: type: no builder for {t}")


def _fill_weights(model, rng) -> None:
    """Seeded non-zero values for every weight, by its role (the variable's last name)."""
    for w in model.weights:
        shape, role = tuple(w.shape), w.path.rsplit("/", 1)[-1]
        if role == "depthwise_kernel":
            data = rng.standard_normal(shape) / np.sqrt(max(int(np.prod(shape[:-2])), 1))
        elif role == "kernel":
            data = rng.standard_normal(shape) / np.sqrt(max(int(np.prod(shape[:-1])), 1))
        elif role in ("gamma", "moving_variance"):
            data = rng.uniform(0.5, 1.5, shape)
        elif role in ("bias", "beta", "moving_mean"):
            data = rng.uniform(0.05, 0.5, shape) * rng.choice([-1.0, 1.0], shape)
        else:
            data = rng.standard_normal(shape) * 0.1
        w.assign(data.astype(np.float32))


def model(spec):
    """The keras.Model of a StackSpec, its weights seeded."""
    import keras

    inp = keras.Input(shape=spec.input_shape[1:], batch_size=spec.input_shape[0], dtype=spec.dtype, name="input")
    tensors = {"input": inp}
    for layer in spec.layers:
        args = [tensors[n] for n in layer.inputs]
        tensors[layer.name] = _layer(keras, layer, spec.dtype)(args if layer.type in MERGE else args[0])
    built = keras.Model(inp, tensors[spec.layers[-1].name], name=spec.name)
    _fill_weights(built, np.random.default_rng(spec.seed))
    return built


def input_dtype(spec, name: str, tf):
    return tf.as_dtype(spec.dtype)


def inputs_made(spec) -> dict:
    """How ``make_inputs`` makes the input, in words (what the agreement check says it ran on)."""
    return {"seed": spec.seed + 1, "how": f"numpy default_rng({spec.seed + 1}): standard normal, cast to "
                                          f"{spec.dtype}; the layers' weights seeded non-zero from seed {spec.seed}"}


def make_inputs(spec, tf) -> dict:
    rng = np.random.default_rng(spec.seed + 1)
    return {"x": tf.cast(tf.constant(rng.standard_normal(spec.input_shape).astype(np.float32)), spec.dtype)}


def build(spec, tf):
    """Return (body, ["x"]): body(x) runs the Keras model in inference mode."""
    keras_model = model(spec)

    def body(x):
        return keras_model(x, training=False)

    body.__name__ = "model"
    return body, ["x"]
