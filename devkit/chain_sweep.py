"""The sweep that found the op-chain part of the faulty-fusion corpus (tests/fixtures/faulty/corpus.json).

    .venv/bin/python devkit/chain_sweep.py [START] [DTYPES]        # e.g. 0 float32,bfloat16
    TF_ENABLE_ONEDNN_OPTS=0 .venv/bin/python devkit/chain_sweep.py 0 float32,float16

Every op chain the explorer builds (contraction x bias x normalisation x side add x activation x dtype x
layout, small sizes), called in this process with the remapper off and on, the same seeded inputs; prints
FAULT-ERR (the fused call raised) and FAULT-DIFF (outputs beyond the bench's tolerance) lines, UNFUSED-ERR
where the model does not run even unfused. A process that aborts stops the sweep: START's index resumes it.
Took ~20 minutes per setting on a loaded 2-core Xeon (2026-11-27); found only FAULT-ERR with oneDNN on.
"""
import itertools, json, sys, os
import numpy as np
sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1]))
from explorer.model.spec import resolve
from explorer.model.chain import CONTRACTIONS, BIASES, NORMS, ACTIVATIONS
from explorer.errors import SpecError
import tensorflow as tf
from explorer.worker import models
from explorer.worker.bench import agreement
start = int(sys.argv[1]) if len(sys.argv) > 1 else 0
dtypes = sys.argv[2].split(",") if len(sys.argv) > 2 else ["float32"]
small = {"m": 64, "k": 32, "n": 48, "batch": 2, "height": 9, "width": 9, "in_channels": 8, "out_channels": 8,
         "channels": 8, "depth": 4, "filter_size": 3}
combos = []
for c, b, nrm, side, act, dt, df in itertools.product(CONTRACTIONS, BIASES, NORMS, (False, True), ACTIVATIONS, dtypes, ("NHWC", "NCHW")):
    combos.append((c, b, nrm, side, act, dt, df))
def run(fn, args, remap):
    tf.config.optimizer.set_experimental_options({"remapping": remap})
    out = fn(*args)
    out = out if isinstance(out, (list, tuple)) else [out]
    return [np.asarray(tf.cast(o, tf.float64)) if o.dtype.is_floating else o.numpy() for o in out]
for i, (c, b, nrm, side, act, dt, df) in enumerate(combos):
    if i < start: continue
    chain = {"contraction": c, "bias": b, "norm": nrm, "side_add": side, "activation": act}
    try:
        from explorer.model.chain import Chain
        names = Chain.from_dict(chain).param_names()
        params = {k: v for k, v in dict(small, dtype=dt).items() if k in names}
        spec = resolve({"chain": chain, "params": params})
    except SpecError:
        continue
    if "data_format" not in spec.chain.param_names() and df == "NCHW":
        continue
    if "data_format" in spec.chain.param_names():
        try: spec = resolve({"chain": chain, "params": dict(params, data_format=df)})
        except SpecError: continue
    print("START", i, json.dumps(chain), dt, df, flush=True)
    try:
        body, names = models.build(spec, tf); inputs = models.make_inputs(spec, tf); args = [inputs[n] for n in names]
        fu = tf.function(body); un = tf.function(body)
        ref = run(un, args, False)
    except Exception as e:
        print("UNFUSED-ERR", i, type(e).__name__, str(e)[:150], flush=True); continue
    try:
        got = run(fu, args, True)
    except Exception as e:
        print("FAULT-ERR", i, json.dumps(chain), dt, df, type(e).__name__, str(e).strip().splitlines()[0][:200], flush=True); continue
    a = agreement(got, ref, dt)
    if not a["within_tolerance"] or any(np.isnan(g).any() != np.isnan(r).any() for g, r in zip(got, ref)):
        print("FAULT-DIFF", i, json.dumps(chain), dt, df, a, flush=True)
print("DONE", flush=True)
