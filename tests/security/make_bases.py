"""Real models the hostile corpus is cut from, made by TensorFlow in a process of its own.

    python make_bases.py DIR

writes tiny.keras and tiny_savedmodel/ (a Dense network with non-zero weights), tiny.pb (its frozen
GraphDef), writefile_savedmodel/ (a signature that writes a file), lambda.keras (a Lambda layer) and
slow.keras (100 layers: seconds to load, so a worker can be stopped while it loads one).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "imported"))
from hostile_corpus import VICTIM
from make_models import writing_savedmodel

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def main(directory: str) -> None:
    import keras
    import numpy as np
    import tensorflow as tf
    from tensorflow.python.framework.convert_to_constants import convert_variables_to_constants_v2

    inp = keras.Input((4,), name="x")
    out = keras.layers.Dense(2)(keras.layers.Dense(3, activation="relu")(inp))
    model = keras.Model(inp, out, name="tiny")
    rng = np.random.default_rng(7)
    for weight in model.weights:  # non-zero: a zero bias is folded away
        weight.assign(rng.uniform(0.1, 0.5, weight.shape).astype("float32"))
    model.save(os.path.join(directory, "tiny.keras"))
    model.export(os.path.join(directory, "tiny_savedmodel"), verbose=False)
    function = tf.function(lambda x: model(x, training=False)).get_concrete_function(
        tf.TensorSpec([None, 4], tf.float32, name="x"))
    with open(os.path.join(directory, "tiny.pb"), "wb") as handle:
        handle.write(convert_variables_to_constants_v2(function).graph.as_graph_def().SerializeToString())

    writing_savedmodel(tf, os.path.join(directory, "writefile_savedmodel"), VICTIM)

    inp = keras.Input((4,), name="x")
    keras.Model(inp, keras.layers.Lambda(lambda t: t * 2.0, name="doubler")(inp)).save(
        os.path.join(directory, "lambda.keras"))

    slow = keras.Sequential([keras.Input((2,))] + [keras.layers.Dense(2) for _ in range(100)])
    slow.save(os.path.join(directory, "slow.keras"))


if __name__ == "__main__":
    main(sys.argv[1])
