"""Predicted against measured GPU time of the seed patterns, fused and unfused, on a real NVIDIA GPU.

    python benchmarks/gpu_predict.py --predict-only [--profile h100]   # anywhere: the predictions alone
    python benchmarks/gpu_predict.py [--reps 200] [--profile NAME]      # on a GPU machine with JAX
    .venv/bin/python benchmarks/gpu_predict.py --record                 # here (TensorFlow in workers): the graphs

TensorFlow is not on the lent GPU machines (shared/reference/measured-gpu.md), so this script imports nothing of
it. Its two sides:

* predicted: the explorer's own roofline (analysis.gpu_roofline) on TensorFlow's graphs for each case, as the
  simulated GPU made them (Grappler on a virtual GPU, recorded here with --record into gpu_predict_graphs.json,
  so the GPU machine needs no TensorFlow);
* measured: the same computation through the libraries TensorFlow's fused kernels call, driven from JAX/XLA
  (installed on the GPU machines): "fused" is one library call with the epilogue (cuBLASLt matmul with its
  BIAS_GELU / BIAS_RELU epilogue, with Triton GEMMs off as measured-gpu.md found necessary; cuDNN's fused
  convolution-bias-activation), "unfused" is one kernel per TensorFlow op of the unfused graph, dispatched one by
  one (JAX's eager dispatch standing in for TensorFlow's executor). Each fused variant's compiled HLO is read
  back to prove which library call it made.

Each row prints predicted and measured, and the error; the run (date, GPU, driver, library versions, every row)
is appended to gpu_measurements.json, with the per-kernel overhead the measurements imply (calibration of the
profiles is left to whoever reads it: the profiles' overhead is an assumption until then).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from explorer.analysis import gpu_roofline  # noqa: E402  (pure Python: no TensorFlow)
from explorer.model.gpu_profiles import PROFILES, canonical  # noqa: E402

GRAPHS = Path(__file__).with_name("gpu_predict_graphs.json")
MEASUREMENTS = Path(__file__).with_name("gpu_measurements.json")
FLAGS = {"TF_USE_CUBLASLT": "1", "TF_ENABLE_ONEDNN_OPTS": "0"}
RECORD_PROFILE = "h100"  # Grappler's decisions are those of every compute capability 8.0+ profile

# id -> (preset, params): the seed posts' patterns at a small, two memory-bound and a compute-bound size.
CASES = {
    "gelu f32 256x256x256": ("matmul_bias_gelu_approx", {"m": 256, "k": 256, "n": 256}),
    "gelu f32 4096x256x1024": ("matmul_bias_gelu_approx", {"m": 4096, "k": 256, "n": 1024}),
    "gelu f32 16384x64x256": ("matmul_bias_gelu_approx", {"m": 16384, "k": 64, "n": 256}),
    "gelu f32 4096x1024x4096": ("matmul_bias_gelu_approx", {"m": 4096, "k": 1024, "n": 4096}),
    "gelu f16 4096x1024x4096": ("matmul_bias_gelu_approx", {"m": 4096, "k": 1024, "n": 4096, "dtype": "float16"}),
    "relu f32 4096x256x1024": ("matmul_bias_relu", {"m": 4096, "k": 256, "n": 1024}),
    "relu f32 4096x4096x4096": ("matmul_bias_relu", {"m": 4096, "k": 4096, "n": 4096}),
    "conv3x3 f32 8x56x56x64": ("conv2d_bias_relu", {"batch": 8, "height": 56, "width": 56, "in_channels": 64,
                                                    "out_channels": 64, "filter_size": 3}),
    "conv3x3 f32 32x28x28x128": ("conv2d_bias_relu", {"batch": 32, "height": 28, "width": 28, "in_channels": 128,
                                                      "out_channels": 128, "filter_size": 3}),
}
GPU_NAMES = (("H200", "h200"), ("H100", "h100"), ("A100", "a100"), ("L4", "l4"), ("T4", "t4"), ("V100", "v100"))


# ---- the predicted side ------------------------------------------------------------------------

def record() -> None:
    """The simulated graphs of every case (TensorFlow runs in the explorer's worker processes, not here)."""
    from explorer.engine import Engine
    from explorer.model.flags import Config

    engine, cases = Engine(cache_dir=None), {}
    try:
        for case, (preset, params) in CASES.items():
            result = engine.inspect({"preset": preset, "params": params}, Config.make(f"gpu-sim:{RECORD_PROFILE}", FLAGS))
            cases[case] = {"preset": preset, "params": params, "env": FLAGS, "tensors": result["tensors"],
                           "fusions": [f["description"] for f in result["fusions"]]}
            print(f"recorded {case}: {'; '.join(cases[case]['fusions']) or 'no fusion'}")
        fp = engine.fingerprint(Config.make(f"gpu-sim:{RECORD_PROFILE}", FLAGS))
    finally:
        engine.close()
    GRAPHS.write_text(json.dumps({"recorded_at": time.strftime("%Y-%m-%d %H:%M"), "tensorflow": fp.get("tensorflow"),
                                  "simulated_on": f"gpu-sim:{RECORD_PROFILE}", "env": FLAGS, "cases": cases}, indent=1))
    print(f"wrote {GRAPHS.relative_to(ROOT)}")


def predictions(profile: str) -> dict[str, dict]:
    graphs = json.loads(GRAPHS.read_text())["cases"]
    return {case: gpu_roofline.predict({"tensors": g["tensors"], "profile": {"name": profile}}, profile, g["env"])
            for case, g in graphs.items()}


def roof_us(p: dict, variant: str) -> float:
    """A variant's predicted time without the per-kernel overhead: what the calibration subtracts."""
    return p[f"{variant}_us"] - p["overhead_us"][variant]


# ---- the measured side (JAX/XLA on the GPU; imported only there) --------------------------------

def gpu_identity() -> dict:
    out = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
    try:
        line = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=30).stdout.strip().splitlines()[0]
        out["gpu"], out["driver"], out["memory"] = [p.strip() for p in line.split(",")][:3]
    except (OSError, IndexError, subprocess.SubprocessError, ValueError):
        out["gpu"] = out["driver"] = None
    from importlib import metadata

    for package in ("jax", "jaxlib", "jax-cuda12-plugin", "jax-cuda13-plugin", "nvidia-cublas-cu12", "nvidia-cudnn-cu12",
                    "nvidia-cublas", "nvidia-cudnn-cu13"):
        try:
            out.setdefault("libraries", {})[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    return out


def profile_for(gpu: str | None) -> str | None:
    for word, name in GPU_NAMES:
        if gpu and word in gpu.upper():
            return name
    return None


def hlo_proof(text: str) -> dict:
    """Which library calls and epilogues a compiled module makes, and how many fusions besides: the proof of what
    a fused variant timed."""
    return {"custom_calls": sorted(set(re.findall(r'custom_call_target="([^"]+)"', text))),
            "epilogues": sorted(set(re.findall(r'"epilogue":\s*"([A-Z_]+)"', text))),
            "activations": sorted(set(re.findall(r'"activation_mode":\s*"(k\w+)"', text))),
            "fusions": len(re.findall(r"=\s*\S+\s+fusion\(", text))}


def variants(preset: str, params: dict):
    """(inputs, fused function, unfused ops): the fused one is jitted whole; the unfused ones run one by one."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    dtype = jnp.dtype(params.get("dtype", "float32"))
    key = iter(jax.random.split(jax.random.PRNGKey(0), 3))
    if preset.startswith("matmul"):
        x = jax.random.normal(next(key), (params["m"], params["k"]), dtype)
        w = jax.random.normal(next(key), (params["k"], params["n"]), dtype) * 0.05
        contract = jax.jit(jnp.matmul)
    else:
        c, f = params["in_channels"], params["filter_size"]
        x = jax.random.normal(next(key), (params["batch"], params["height"], params["width"], c), dtype)
        w = jax.random.normal(next(key), (f, f, c, params["out_channels"]), dtype) * 0.05
        contract = jax.jit(lambda a, b: lax.conv_general_dilated(a, b, (1, 1), "SAME",
                                                                 dimension_numbers=("NHWC", "HWIO", "NHWC")))
    b = jax.random.normal(next(key), (w.shape[-1],), dtype)
    if preset == "matmul_bias_gelu_approx":
        def fused(x, w, b):
            return jax.nn.gelu(x @ w + b, approximate=True)  # the form XLA matched to cuBLASLt's BIAS_GELU

        c0, c1 = jnp.asarray(0.044715, dtype), jnp.asarray(0.7978845608, dtype)
        half, one = jnp.asarray(0.5, dtype), jnp.asarray(1.0, dtype)
        # TensorFlow's unfused graph: MatMul, BiasAdd, Pow, Mul, AddV2, Mul, Tanh, AddV2, Mul, Mul (one kernel each)
        steps = [lambda s: contract(x, w), lambda s: s["y"] + b, lambda s: s["y"] ** 3, lambda s: c0 * s["t"],
                 lambda s: s["y"] + s["t"], lambda s: c1 * s["t"], jnp.tanh, lambda s: one + s["t"],
                 lambda s: half * s["y"], lambda s: s["h"] * s["t"]]
        unfused = _gelu_chain(steps)
    else:
        def fused(x, w, b):
            return jax.nn.relu(_contract_expr(preset, x, w) + b)

        def unfused():
            return jax.nn.relu(contract(x, w) + b)  # eager: three kernels, as TensorFlow's unfused graph
    return (x, w, b), jax.jit(fused), unfused


def _contract_expr(preset, x, w):
    from jax import lax

    if preset.startswith("matmul"):
        return x @ w
    return lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=("NHWC", "HWIO", "NHWC"))


def _gelu_chain(steps):
    """TensorFlow's approximate GELU op by op, each an eager JAX op (one kernel): y = MatMul + bias, then
    0.5·y·(1 + tanh(c·(y + 0.044715·y³)))."""
    def run():
        s = {"y": steps[0](None)}
        s["y"] = steps[1](s)
        s["t"] = steps[2](s)
        s["t"] = steps[3](s)
        s["t"] = steps[4](s)
        s["t"] = steps[5](s)
        s["t"] = steps[6](s["t"])  # Tanh
        s["t"] = steps[7](s)
        s["h"] = steps[8](s)
        return steps[9](s)
    return run


def timed(call, reps: int) -> list[float]:
    samples = []
    for _ in range(reps):
        start = time.perf_counter()
        call().block_until_ready()
        samples.append((time.perf_counter() - start) * 1e6)
    return samples


def measure(preset: str, params: dict, reps: int) -> dict:
    args, fused, unfused = variants(preset, params)
    proof = hlo_proof(fused.lower(*args).compile().as_text())
    calls = {"fused": lambda: fused(*args), "unfused": unfused}
    for call in calls.values():  # warm-up: compile, autotune, caches
        for _ in range(10):
            call().block_until_ready()
    samples = {"fused": [], "unfused": []}
    for i in range(reps):  # interleaved, alternating which goes first
        for name in (("fused", "unfused") if i % 2 == 0 else ("unfused", "fused")):
            samples[name] += timed(calls[name], 1)
    return {"fused_us": statistics.median(samples["fused"]), "unfused_us": statistics.median(samples["unfused"]),
            "proof": proof}


# ---- comparing and keeping --------------------------------------------------------------------

def error(predicted: float, measured: float) -> float:
    """Signed relative error of the prediction: +0.25 is 25 % above the measured time."""
    return (predicted - measured) / measured


def implied_overhead(pred: dict, measured: dict) -> list[float]:
    """Per kernel, what each measured variant took beyond its roofline: the overhead the profiles assume."""
    return [(measured[f"{v}_us"] - roof_us(pred, v)) / pred["kernel_count"][v]
            for v in ("fused", "unfused") if pred["kernel_count"][v]]


def row_words(case: str, pred: dict, measured: dict | None) -> str:
    head = f"{case:<28} predicted fused {pred['fused_us']:9.1f} µs  unfused {pred['unfused_us']:9.1f} µs  " \
           f"speedup {pred['speedup']:5.2f}×"
    if measured is None:
        return head
    return (head + f"  | measured fused {measured['fused_us']:9.1f} µs ({error(pred['fused_us'], measured['fused_us']):+.0%})"
            f"  unfused {measured['unfused_us']:9.1f} µs ({error(pred['unfused_us'], measured['unfused_us']):+.0%})"
            f"  speedup {measured['unfused_us'] / measured['fused_us']:5.2f}×  [{', '.join(measured['proof']['epilogues'] + measured['proof']['activations']) or 'no epilogue'}]")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--predict-only", action="store_true", help="print the predictions; no GPU, no JAX")
    parser.add_argument("--record", action="store_true", help="simulate the cases here (needs the explorer's TensorFlow)")
    parser.add_argument("--profile", help="the GPU profile to predict for (default: the GPU found, else h100)")
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--out", default=str(MEASUREMENTS))
    args = parser.parse_args(argv)
    if args.record:
        record()
        return 0
    identity = {} if args.predict_only else gpu_identity()
    profile = args.profile or profile_for(identity.get("gpu")) or RECORD_PROFILE
    try:
        profile = canonical(profile)
    except KeyError:
        parser.error(f"--profile: no profile {profile!r}; one of {', '.join(PROFILES)}")
    preds = predictions(profile)
    graphs = json.loads(GRAPHS.read_text())
    print(f"Predicted on {PROFILES[profile]['label']} from TensorFlow {graphs['tensorflow']}'s graphs "
          f"(simulated on {graphs['simulated_on']}, {graphs['recorded_at']}); {gpu_roofline.LABEL}")
    if float(PROFILES[profile]["compute_capability"]) < 8.0:
        print(f"note: the graphs were simulated on {graphs['simulated_on']}; on {profile} (compute capability "
              f"{PROFILES[profile]['compute_capability']}) the layout optimizer puts float32 convolutions in NCHW, "
              "with transposes these predictions leave out")
    if args.predict_only:
        for case, pred in preds.items():
            print(row_words(case, pred, None))
        print(f"tensorflow imported: {'yes' if 'tensorflow' in sys.modules else 'no'}")
        return 0
    os.environ.setdefault("XLA_FLAGS", "--xla_gpu_enable_triton_gemm=false")  # measured-gpu.md: else no BIAS_GELU
    if identity.get("gpu") is None:
        print("no NVIDIA GPU found (nvidia-smi): run with --predict-only here", file=sys.stderr)
        return 2
    try:
        import jax  # noqa: F401
    except ImportError:
        print("JAX is not installed: the measured side drives cuBLASLt and cuDNN through it", file=sys.stderr)
        return 2
    print(f"Measured on {identity['gpu']} (driver {identity['driver']}), {identity['date']}, "
          f"XLA_FLAGS={os.environ['XLA_FLAGS']}; libraries {identity.get('libraries')}")
    rows, overheads = [], []
    for case, (preset, params) in CASES.items():
        measured = measure(preset, params, args.reps)
        pred = preds[case]
        overheads += implied_overhead(pred, measured)
        print(row_words(case, pred, measured), flush=True)
        rows.append({"case": case, "preset": preset, "params": params, "measured": measured,
                     "predicted": {"fused_us": pred["fused_us"], "unfused_us": pred["unfused_us"],
                                   "speedup": pred["speedup"], "kernels": pred["kernel_count"]},
                     "error": {v: error(pred[f"{v}_us"], measured[f"{v}_us"]) for v in ("fused", "unfused")}})
    implied = statistics.median(overheads)
    figures = gpu_roofline.profile_figures(profile)
    print(f"per-kernel overhead the measurements imply (median): {implied:.1f} µs; the profiles assume "
          f"{figures['launch_us'] + figures['framework_us']:g} µs")
    out = Path(args.out)
    runs = json.loads(out.read_text()) if out.exists() else []
    runs.append(dict(identity, profile=profile, reps=args.reps, xla_flags=os.environ["XLA_FLAGS"],
                     implied_overhead_us=implied, graphs_recorded=graphs["recorded_at"], rows=rows))
    out.write_text(json.dumps(runs, indent=1))
    print(f"appended to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
