"""The sweep that found the op-chain part of the faulty-fusion corpus (tests/fixtures/faulty/corpus.json).

    .venv/bin/python devkit/chain_sweep.py [START] [DTYPES]        # e.g. 0 float32,bfloat16
    TF_ENABLE_ONEDNN_OPTS=0 .venv/bin/python devkit/chain_sweep.py 0 float32,float16

Every op chain the explorer builds (contraction x bias x normalisation x side add x activation x dtype x
layout, small sizes), called in this process with the remapper off and on, the same seeded inputs; prints
FAULT-ERR (the fused call raised) and FAULT-DIFF (outputs beyond analysis.agreement's tolerance) lines,
UNFUSED-ERR where the model does not run even unfused. A process that aborts stops the sweep: START's index
resumes it. Took ~20 minutes per setting on a loaded 2-core Xeon (2026-11-27); found only FAULT-ERR with
oneDNN on. A developer's script: it imports TensorFlow itself, as the worker does.
"""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np
import tensorflow as tf

from explorer.analysis.agreement import compare
from explorer.errors import SpecError
from explorer.model.chain import ACTIVATIONS, BIASES, CONTRACTIONS, NORMS
from explorer.model.spec import resolve
from explorer.worker import models

SMALL = {"m": 64, "k": 32, "n": 48, "batch": 2, "height": 9, "width": 9, "in_channels": 8, "out_channels": 8,
         "channels": 8, "depth": 4, "filter_size": 3}


def spec_of(chain: dict, dtype: str, layout: str):
    """The chain's spec at the small sizes, or None where the explorer builds no such chain."""
    try:
        names = resolve({"chain": chain, "params": {}}).chain.param_names()
        params = {k: v for k, v in dict(SMALL, dtype=dtype).items() if k in names}
        if "data_format" in names:
            params["data_format"] = layout
        elif layout == "NCHW":
            return None
        return resolve({"chain": chain, "params": params})
    except SpecError:
        return None


def outputs(fn, args, remapping: bool) -> list[np.ndarray]:
    tf.config.optimizer.set_experimental_options({"remapping": remapping})
    out = fn(*args)
    return [o.numpy() for o in (out if isinstance(out, (list, tuple)) else [out])]


def main() -> None:
    start = int(sys.argv[1]) if len(sys.argv) > 1 else 0
    dtypes = sys.argv[2].split(",") if len(sys.argv) > 2 else ["float32"]
    combos = itertools.product(CONTRACTIONS, BIASES, NORMS, (False, True), ACTIVATIONS, dtypes, ("NHWC", "NCHW"))
    for i, (contraction, bias, norm, side, activation, dtype, layout) in enumerate(combos):
        if i < start:
            continue
        chain = {"contraction": contraction, "bias": bias, "norm": norm, "side_add": side, "activation": activation}
        spec = spec_of(chain, dtype, layout)
        if spec is None:
            continue
        where = f"{i} {json.dumps(chain)} {dtype} {layout}"
        print("START", where, flush=True)
        try:
            body, names = models.build(spec, tf)
            inputs = models.make_inputs(spec, tf)
            args = [inputs[n] for n in names]
            reference = outputs(tf.function(body), args, False)
        except Exception as exc:  # noqa: BLE001 - a sweep reports every failure and goes on
            print("UNFUSED-ERR", where, type(exc).__name__, str(exc)[:150], flush=True)
            continue
        try:
            fused = outputs(tf.function(body), args, True)
        except Exception as exc:  # noqa: BLE001
            print("FAULT-ERR", where, type(exc).__name__, str(exc).strip().splitlines()[0][:200], flush=True)
            continue
        check = compare(fused, reference)
        if not check["agree"]:
            print("FAULT-DIFF", where, check["summary"], flush=True)
    print("DONE", flush=True)


if __name__ == "__main__":
    main()
