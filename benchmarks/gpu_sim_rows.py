"""Run every GPU row of remapper-patterns.md through the GPU simulation and print the table.

    .venv/bin/python benchmarks/gpu_sim_rows.py [--json out.json]

Each environment group runs in its own process (TF reads its flags once per process; the
remapper caches its cuDNN runtime-fusion decision from the first GPU it sees). Rows are specs
where the explorer can build them, Python bodies otherwise (BatchNorm gradient, hash bucket,
constant-parameter BatchNorm, Maximum-as-LeakyRelu).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

FLAGS_ALL = {"TF_USE_CUBLASLT": "1", "TF_CUDNN_USE_RUNTIME_FUSION": "1",
             "TF_USE_CUDNN_BATCHNORM_SPATIAL_PERSISTENT": "1"}
GROUPS = {
    # name: (environment, profile)
    "ampere+flags": (dict(FLAGS_ALL, TF_ENABLE_ONEDNN_OPTS="0"), "ampere"),
    "ampere+flags+frontend": (dict(FLAGS_ALL, TF_ENABLE_ONEDNN_OPTS="0", TF_CUDNN_USE_FRONTEND="1"), "ampere"),
    "ampere, no flags": ({"TF_ENABLE_ONEDNN_OPTS": "0"}, "ampere"),
    "volta+flags": (dict(FLAGS_ALL, TF_ENABLE_ONEDNN_OPTS="0", TF_CUDNN_USE_FRONTEND="1"), "volta"),
    "ampere+flags, host oneDNN on": (dict(FLAGS_ALL, TF_ENABLE_ONEDNN_OPTS="1", TF_CUDNN_USE_FRONTEND="1"), "ampere"),
}

MM = {"m": 32, "k": 16, "n": 8}
CV = {"batch": 2, "height": 6, "width": 6, "in_channels": 4, "out_channels": 4, "filter_size": 3}
BN = {"batch": 2, "height": 6, "width": 6, "channels": 24}


def chain(contraction="MatMul", bias="BiasAdd", activation="none", norm="none", side_add=False):
    return {"contraction": contraction, "bias": bias, "norm": norm, "side_add": side_add, "activation": activation}


# (row, case label, groups, kind, payload, source rule: expected fused ops (list of "Op[fused]"))
ROWS = [
    ("1-GPU", "Conv2D+BiasAdd 3x3 f32", ["ampere+flags"], "spec",
     {"chain": chain("Conv2D"), "params": CV}, [], "GPU never fuses Conv2D+BiasAdd without an activation"),
    ("2-GPU", "MatMul+BiasAdd f32", ["ampere+flags", "ampere, no flags"], "spec",
     {"chain": chain(), "params": MM}, {"ampere+flags": ["_FusedMatMul[BiasAdd]"], "ampere, no flags": []},
     "TF_USE_CUBLASLT=1, T float/half"),
    ("2-GPU", "MatMul+BiasAdd f16", ["ampere+flags"], "spec",
     {"chain": chain(), "params": dict(MM, dtype="float16")}, ["_FusedMatMul[BiasAdd]"], "TF_USE_CUBLASLT=1, T float/half"),
    ("2-GPU", "MatMul+BiasAdd f16, host oneDNN on", ["ampere+flags, host oneDNN on"], "spec",
     {"chain": chain(), "params": dict(MM, dtype="float16")}, ["_FusedMatMul[BiasAdd]"],
     "TF_USE_CUBLASLT=1, T float/half (§9.3: a oneDNN host without fp16 skips the node, inferred)"),
    ("5-GPU", "Conv2D+BiasAdd+Relu 3x3 f32 NHWC", ["ampere+flags", "volta+flags"], "spec",
     {"chain": chain("Conv2D", activation="Relu"), "params": CV}, ["_FusedConv2D[BiasAdd,Relu]"],
     "Relu: T float/half, NHWC or NCHW, filter H,W known and != 1"),
    ("5-GPU", "Conv2D+BiasAdd+Relu 3x3 f16 NHWC", ["ampere+flags"], "spec",
     {"chain": chain("Conv2D", activation="Relu"), "params": dict(CV, dtype="float16")}, ["_FusedConv2D[BiasAdd,Relu]"],
     "Relu: T float/half"),
    ("5-GPU", "Conv2D+BiasAdd+Relu 3x3 f32 NCHW", ["ampere+flags"], "spec",
     {"chain": chain("Conv2D", activation="Relu"), "params": dict(CV, data_format="NCHW")}, ["_FusedConv2D[BiasAdd,Relu]"],
     "Relu: NHWC or NCHW"),
    ("5-GPU", "Conv2D+BiasAdd+Relu 1x1 f32", ["ampere+flags"], "spec",
     {"chain": chain("Conv2D", activation="Relu"), "params": dict(CV, filter_size=1)}, [],
     "1x1 filters are not fused on GPU (is_spatial_conv)"),
    ("5-GPU", "Conv2D+BiasAdd+Relu 3x3 f64", ["ampere+flags"], "spec",
     {"chain": chain("Conv2D", activation="Relu"), "params": dict(CV, dtype="float64")}, [],
     "GPU: T float/half only"),
] + [
    ("5-GPU", f"Conv2D+BiasAdd+{act} 3x3 f16 NHWC", ["ampere+flags", "ampere+flags+frontend", "volta+flags"], "spec",
     {"chain": chain("Conv2D", activation=act), "params": dict(CV, dtype="float16")},
     {"ampere+flags": [f"_FusedConv2D[BiasAdd,{act}]"], "ampere+flags+frontend": [f"_FusedConv2D[BiasAdd,{act}]"],
      "volta+flags": []},
     "runtime fusion (TF_CUDNN_USE_RUNTIME_FUSION=1, frontend, cc >= 8.0), T half, NHWC, even channels")
    for act in ("Relu6", "Elu", "LeakyRelu")
] + [
    ("5-GPU", "Conv2D+BiasAdd+Elu 3x3 f32 NHWC", ["ampere+flags+frontend"], "spec",
     {"chain": chain("Conv2D", activation="Elu"), "params": CV}, [], "runtime fusion needs T half"),
    ("6-GPU", "MatMul+BiasAdd+Relu f32", ["ampere+flags", "ampere, no flags"], "spec",
     {"chain": chain(activation="Relu"), "params": MM},
     {"ampere+flags": ["_FusedMatMul[BiasAdd,Relu]"], "ampere, no flags": []}, "Relu via cuBLASLt (TF_USE_CUBLASLT=1)"),
] + [
    ("6-GPU", f"MatMul+BiasAdd+{act} f16", ["ampere+flags", "ampere+flags+frontend", "volta+flags"], "spec",
     {"chain": chain(activation=act), "params": dict(MM, dtype="float16")},
     {"ampere+flags": [f"_FusedMatMul[BiasAdd,{act}]"], "ampere+flags+frontend": [f"_FusedMatMul[BiasAdd,{act}]"],
      "volta+flags": ["_FusedMatMul[BiasAdd]"]},
     "Tanh/Sigmoid via runtime fusion: T half, rank-2 inputs with even dim(1); otherwise only BiasAdd (cuBLASLt)")
    for act in ("Tanh", "Sigmoid")
] + [
    ("6-GPU", "MatMul+BiasAdd+Relu6 f32", ["ampere+flags"], "spec",
     {"chain": chain(activation="Relu6"), "params": MM}, ["_FusedMatMul[BiasAdd]"],
     "Relu6/Elu/LeakyRelu never on GPU (only the BiasAdd fuses)"),
    ("12", "FusedBatchNorm+Relu inference f32 NHWC", ["ampere+flags", "ampere, no flags"], "spec",
     {"chain": chain("none", "none", "Relu", "FusedBatchNorm"), "params": BN}, ["_FusedBatchNormEx[]"],
     "GPU inference: T float/half, nothing else"),
    ("12", "FusedBatchNorm+Relu training f16 NHWC C=24", ["ampere+flags", "ampere, no flags"], "spec",
     {"chain": chain("none", "none", "Relu", "FusedBatchNorm"), "params": dict(BN, dtype="float16", training=True)},
     {"ampere+flags": ["_FusedBatchNormEx[]"], "ampere, no flags": []},
     "training: NHWC, T half, C % 4 == 0, TF_USE_CUDNN_BATCHNORM_SPATIAL_PERSISTENT=1"),
    ("12", "FusedBatchNorm+Relu training f16 NHWC C=24, layout_optimizer off", ["ampere+flags"], "spec+nolayout",
     {"chain": chain("none", "none", "Relu", "FusedBatchNorm"), "params": dict(BN, dtype="float16", training=True)},
     ["_FusedBatchNormEx[]"], "training: NHWC, T half, C % 4 == 0, persistent-BN env var"),
    ("12", "Conv2D+FusedBatchNorm+Relu training f16 NHWC C=24", ["ampere+flags"], "spec",
     {"chain": chain("Conv2D", "none", "Relu", "FusedBatchNorm"),
      "params": dict(CV, in_channels=24, out_channels=24, dtype="float16", training=True)},
     ["_FusedBatchNormEx[]"], "training: NHWC, T half, C % 4 == 0, persistent-BN env var (Conv2D+BN is CPU only)"),
    ("12", "FusedBatchNorm+Relu training f32 NHWC", ["ampere+flags"], "spec",
     {"chain": chain("none", "none", "Relu", "FusedBatchNorm"), "params": dict(BN, training=True)}, [],
     "training needs T half"),
    ("13", "FusedBatchNorm+Add+Relu inference f32 NHWC", ["ampere+flags"], "spec",
     {"chain": chain("none", "none", "Relu", "FusedBatchNorm", side_add=True), "params": BN}, ["_FusedBatchNormEx[]"],
     "side input: GPU only, as row 12"),
    ("14", "ReluGrad+FusedBatchNormGradV3 training f16 NHWC C=24", ["ampere+flags", "ampere, no flags"], "body",
     "bn_grad", {"ampere+flags": ["_FusedBatchNormEx[]", "_FusedBatchNormGradEx[]"], "ampere, no flags": []},
     "GPU only: T half, NHWC, C % 4 == 0, persistent-BN env var"),
    ("14", "ReluGrad+FusedBatchNormGradV3 training f16 NHWC C=24, layout_optimizer off", ["ampere+flags"], "body+nolayout",
     "bn_grad", ["_FusedBatchNormEx[]", "_FusedBatchNormGradEx[]"],
     "GPU only: T half, NHWC, C % 4 == 0, persistent-BN env var"),
    ("15-GPU", "MatMul+BiasAdd+GeluExact f16", ["ampere+flags", "ampere+flags+frontend", "volta+flags"], "spec",
     {"chain": chain(activation="GeluExact"), "params": dict(MM, dtype="float16")},
     {"ampere+flags": ["_FusedMatMul[BiasAdd,GeluExact]"], "ampere+flags+frontend": ["_FusedMatMul[BiasAdd,GeluExact]"],
      "volta+flags": ["_FusedMatMul[BiasAdd]"]},
     "runtime fusion (row 5 conditions), T half, even dim(1)"),
    ("15-GPU", "MatMul+BiasAdd+GeluExact f32", ["ampere+flags+frontend"], "spec",
     {"chain": chain(activation="GeluExact"), "params": MM}, ["_FusedMatMul[BiasAdd]"], "GeluExact on GPU needs T half"),
    ("16-GPU", "MatMul+BiasAdd+GeluApproximate f32", ["ampere+flags", "ampere, no flags"], "spec",
     {"chain": chain(activation="GeluApproximate"), "params": MM},
     {"ampere+flags": ["_FusedMatMul[BiasAdd,GeluApproximate]"], "ampere, no flags": []},
     "second pass, TF_USE_CUBLASLT=1, float/half; GPU x^3 term is Pow(y, 3)"),
    ("16-GPU", "MatMul+BiasAdd+GeluApproximate f16", ["ampere+flags"], "spec",
     {"chain": chain(activation="GeluApproximate"), "params": dict(MM, dtype="float16")},
     ["_FusedMatMul[BiasAdd,GeluApproximate]"], "as above"),
    ("17", "AsString+StringToHashBucketFast int64", ["ampere+flags"], "body", "hash_bucket",
     ["_TensorToHashBucketFast[]"], "any device"),
    ("18", "FusedBatchNorm inference f32, constant parameters", ["ampere+flags"], "body", "bn_const", [],
     "any device: decomposed into Rsqrt/Mul/Add primitives (no fused op)"),
    ("27", "Maximum(x*0.2, x) f32, host oneDNN on", ["ampere+flags, host oneDNN on"], "body", "mul_maximum",
     ["LeakyRelu"], "oneDNN block; device test is !CPU && !MKL, so not limited to CPU (inferred)"),
]

DRIVER = r"""
import json, sys
import numpy as np
import tensorflow as tf
from explorer.worker import simulate
from explorer.worker.convert import graph_to_dict

to_dict = lambda g, stage: graph_to_dict(g, stage, tf)
FP16 = tf.float16

def bn_grad():
    def body(x, scale, offset):
        with tf.GradientTape() as tape:
            tape.watch([scale, offset])
            y, _, _ = tf.compat.v1.nn.fused_batch_norm(x, scale, offset, epsilon=0.001, is_training=True)
            out = tf.nn.relu(y)
            loss = tf.reduce_sum(tf.cast(out, tf.float32))
        return (out, *tape.gradient(loss, [scale, offset]))
    return body, [tf.TensorSpec([2, 6, 6, 24], FP16), tf.TensorSpec([24], tf.float32), tf.TensorSpec([24], tf.float32)]

def hash_bucket():
    return (lambda i: tf.strings.to_hash_bucket_fast(tf.strings.as_string(i), 100)), [tf.TensorSpec([16], tf.int64)]

def bn_const():
    rng = np.random.default_rng(1)
    s, o, m = (rng.standard_normal(8).astype("float32") for _ in range(3))
    v = rng.uniform(0.5, 1.5, 8).astype("float32")
    def body(x):
        y, _, _ = tf.compat.v1.nn.fused_batch_norm(x, tf.constant(s), tf.constant(o), tf.constant(m), tf.constant(v),
                                                   is_training=False)
        return y
    return body, [tf.TensorSpec([2, 6, 6, 8], tf.float32)]

def mul_maximum():
    return (lambda x: tf.maximum(x * 0.2, x)), [tf.TensorSpec([4, 16], tf.float32)]

BODIES = {"bn_grad": bn_grad, "hash_bucket": hash_bucket, "bn_const": bn_const, "mul_maximum": mul_maximum}
profile = sys.argv[1]
out = []
for case in json.loads(sys.argv[2]):
    try:
        switches = {"layout_optimizer": "off"} if case["kind"].endswith("+nolayout") else {}
        if case["kind"].startswith("spec"):
            r = simulate.simulate(case["payload"], switches, profile, tf, to_dict)
        else:
            body, specs = BODIES[case["payload"]]()
            r = simulate.simulate_body(body, specs, switches, profile, tf, to_dict)
        g = r["stages"]["optimized"]
        fused = [n["op"] + ("[" + ",".join(n["fused_ops"]) + "]" if n["op"].startswith("_") else "")
                 for n in g["nodes"] if n["op"].startswith(("_Fused", "_Mkl", "_Tensor")) or
                 (n["op"] == "LeakyRelu" and case["payload"] == "mul_maximum")]
        compute = [n["op"] for n in g["nodes"] if n["op"] not in ("Const", "Placeholder", "Identity")]
        layout = sorted({n["attrs"].get("data_format", "") for n in g["nodes"]
                         if n["op"].startswith(("_Fused", "FusedBatchNorm", "Conv2D"))} - {""})
        where = sorted({n["device"] for n in g["nodes"] if n["op"] not in ("Const", "Placeholder", "Identity")})
        out.append(dict(case, fused=fused, compute=compute, layout=layout, devices=where,
                        remapper_log=r["remapper_log"], on_cpu=r["placement"]["on_cpu"],
                        kernels=r["gpu_kernels"]))
    except Exception as exc:
        out.append(dict(case, error=f"{type(exc).__name__}: {exc}"[:500]))
sys.stdout.write("\nROWS " + json.dumps(out) + "\n")
"""


def run_group(group: str, cases: list[dict]) -> list[dict]:
    env_flags, profile = GROUPS[group]
    env = {k: v for k, v in os.environ.items() if not k.startswith("TF_")}
    env.update(env_flags, TF_CPP_VMODULE="remapper=2", PYTHONPATH=str(ROOT))
    proc = subprocess.run([sys.executable, "-c", DRIVER, profile, json.dumps(cases)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=1200)
    for line in proc.stdout.splitlines():
        if line.startswith("ROWS "):
            return json.loads(line[5:])
    raise RuntimeError(f"{group} failed (exit {proc.returncode}): {proc.stderr[-2000:]}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--json")
    args = parser.parse_args()
    by_group: dict[str, list[dict]] = {}
    for row, label, groups, kind, payload, expected, rule in ROWS:
        for group in groups:
            exp = expected.get(group, []) if isinstance(expected, dict) else expected
            by_group.setdefault(group, []).append(
                {"row": row, "label": label, "group": group, "kind": kind, "payload": payload,
                 "expected": exp, "rule": rule})
    results = []
    for group, cases in by_group.items():
        results += run_group(group, cases)
    order = {(r[0], r[1]): i for i, r in enumerate(ROWS)}
    results.sort(key=lambda r: (order[(r["row"], r["label"])], list(GROUPS).index(r["group"])))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    print("| Row | Case | Simulated with | Simulated result (fused ops after Grappler) | Source rule says | Agree? |")
    print("|---|---|---|---|---|---|")
    for r in results:
        got = r.get("error") or (", ".join(f"`{f}`" for f in r["fused"]) or "nothing fused")
        if r.get("layout"):
            got += f" ({'/'.join(r['layout'])})"
        if "Transpose" in r.get("compute", []):
            got += " + layout Transposes"
        if r.get("on_cpu"):
            got += f"; on CPU: {', '.join(r['on_cpu'])}"
        want = ", ".join(f"`{f}`" for f in r["expected"]) or "nothing fused"
        agree = "yes" if not r.get("error") and sorted(r["fused"]) == sorted(r["expected"]) else "**no**"
        print(f"| {r['row']} | {r['label']} | {r['group']} | {got} | {want} — {r['rule']} | {agree} |")


if __name__ == "__main__":
    main()
