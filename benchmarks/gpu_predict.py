"""Predicted against measured GPU time of the seed patterns, fused and unfused, on a real NVIDIA GPU.

    python benchmarks/gpu_predict.py --predict-only [--profile h100]   # anywhere: the predictions alone
    python3 benchmarks/gpu_predict.py [--reps 200] [--profile NAME]     # on a GPU machine with PyTorch
    .venv/bin/python benchmarks/gpu_predict.py --record                 # here (TensorFlow in workers): the graphs

TensorFlow is not on the lent GPU machines (shared/reference/measured-gpu.md), so this script imports nothing of
it. Its two sides:

* predicted: the explorer's own roofline (analysis.gpu_roofline) on TensorFlow's graphs for each case, as the
  simulated GPU made them (Grappler on a virtual GPU, recorded here with --record into explorer/model/gpu_measured_graphs.json,
  so the GPU machine needs no TensorFlow);
* measured: the same recorded graphs replayed kernel by kernel through the libraries TensorFlow's kernels call
  (benchmarks/gpu_kernels.py: cuBLASLt with its bias/activation epilogue, cuDNN's fused convolution-bias-ReLU,
  one kernel per other op), driven from PyTorch, with the kernels that ran read back from its profiler. Two
  times per variant: on the device (a CUDA graph replayed: the kernels back to back, no host cost) and eager
  (one call from Python and a wait: PyTorch's dispatch standing in for TensorFlow's executor, which is not
  there to measure).

Each row prints predicted against measured and the error; the run (date, GPU, driver, library versions, every
row) is appended to explorer/model/gpu_measurements.json, with the per-kernel costs the measurements imply: on the device
beyond the roofline (what the profiles call the launch) and on the host (the framework's dispatch).
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))  # gpu_kernels, beside it

from explorer.analysis import gpu_roofline  # noqa: E402  (pure Python: no TensorFlow)
from explorer.analysis.gpu_measured import medians  # noqa: E402
from explorer.model import gpu_measured  # noqa: E402
from explorer.model.gpu_profiles import PROFILES, canonical, profile_for  # noqa: E402

GRAPHS, MEASUREMENTS = gpu_measured.GRAPHS, gpu_measured.MEASUREMENTS  # the explorer shows them (analysis.gpu_measured)
FLAGS = {"TF_USE_CUBLASLT": "1", "TF_ENABLE_ONEDNN_OPTS": "0"}
RECORD_PROFILE = "h100"  # Grappler's decisions are those of every compute capability 8.0+ profile

# id -> (preset, params): the seed posts' patterns at a small, two memory-bound and a compute-bound size.
CASES = {
    "gelu f32 256x256x256": ("matmul_bias_gelu_approx", {"m": 256, "k": 256, "n": 256}),
    "gelu f32 4096x256x1024": ("matmul_bias_gelu_approx", {"m": 4096, "k": 256, "n": 1024}),
    "gelu f32 16384x64x256": ("matmul_bias_gelu_approx", {"m": 16384, "k": 64, "n": 256}),
    "gelu f32 4096x1024x4096": ("matmul_bias_gelu_approx", {"m": 4096, "k": 1024, "n": 4096}),
    "gelu f16 4096x1024x4096": ("matmul_bias_gelu_approx", {"m": 4096, "k": 1024, "n": 4096, "dtype": "float16"}),
    "relu f32 64x64x64": ("matmul_bias_relu", {"m": 64, "k": 64, "n": 64}),
    "relu f32 4096x256x1024": ("matmul_bias_relu", {"m": 4096, "k": 256, "n": 1024}),
    "relu f32 4096x4096x4096": ("matmul_bias_relu", {"m": 4096, "k": 4096, "n": 4096}),
    "conv3x3 f32 8x56x56x64": ("conv2d_bias_relu", {"batch": 8, "height": 56, "width": 56, "in_channels": 64,
                                                    "out_channels": 64, "filter_size": 3}),
    "conv3x3 f32 32x28x28x128": ("conv2d_bias_relu", {"batch": 32, "height": 28, "width": 28, "in_channels": 128,
                                                      "out_channels": 128, "filter_size": 3}),
    "conv3x3 f16 32x28x28x128": ("conv2d_bias_relu", {"batch": 32, "height": 28, "width": 28, "in_channels": 128,
                                                      "out_channels": 128, "filter_size": 3, "dtype": "float16"}),
    "bias f32 4096x1024x4096": ("matmul_bias", {"m": 4096, "k": 1024, "n": 4096}),
    # square sizes: where does the fusion stop paying on this GPU?
    **{f"relu f32 {n}^3": ("matmul_bias_relu", {"m": n, "k": n, "n": n}) for n in (256, 1024, 2048, 6144)},
    **{f"gelu f32 {n}^3": ("matmul_bias_gelu_approx", {"m": n, "k": n, "n": n}) for n in (1024, 2048, 6144)},
}


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


# ---- the measured side (PyTorch on the GPU; imported only there) --------------------------------

def gpu_identity() -> dict:
    out: dict = {"date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}
    try:
        line = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
                              capture_output=True, text=True, timeout=30).stdout.strip().splitlines()[0]
        out["gpu"], out["driver"], out["memory"] = [p.strip() for p in line.split(",")][:3]
    except (OSError, IndexError, subprocess.SubprocessError, ValueError):
        out["gpu"] = out["driver"] = None
    from importlib import metadata

    for package in ("torch", "nvidia-cublas", "nvidia-cublas-cu12", "nvidia-cudnn-cu13", "nvidia-cudnn-cu12",
                    "nvidia-cuda-runtime"):
        try:
            out.setdefault("libraries", {})[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    try:
        import torch

        out.setdefault("libraries", {}).update(cuda=torch.version.cuda, cudnn=torch.backends.cudnn.version())
    except ImportError:
        pass
    return out


def measure(case: str, reps: int) -> dict:
    """The recorded graphs of a case replayed on this GPU through the libraries TensorFlow's kernels call."""
    import gpu_kernels  # PyTorch: imported only on the GPU machine

    graphs = json.loads(GRAPHS.read_text())["cases"][case]["tensors"]
    try:
        return gpu_kernels.measure(graphs, reps)
    except gpu_kernels.Unsupported as exc:
        return {"unsupported": str(exc)}
    except Exception as exc:  # noqa: BLE001  (one case's library error must not lose the others' rows)
        import traceback

        return {"unsupported": f"{type(exc).__name__}: {exc}".splitlines()[0][:300],
                "traceback": traceback.format_exc()[-1500:]}


# ---- comparing and keeping --------------------------------------------------------------------

def error(predicted: float, measured: float) -> float:
    """Signed relative error of the prediction: +0.25 is 25 % above the measured time."""
    return (predicted - measured) / measured


def device_us(pred: dict, variant: str, launch: float | None = None) -> float:
    """A variant's predicted time on the device alone: its kernels' rooflines plus a launch each (no dispatch)."""
    launch = pred["profile"]["launch_us"] if launch is None else launch
    return roof_us(pred, variant) + launch * pred["kernel_count"][variant]


def fit_launch(pairs: list[tuple[dict, dict]]) -> float:
    """The per-kernel launch (µs, in steps of 0.5) with which the predicted device times come closest to the
    measured ones (least median relative error): what the profiles' launch is calibrated from."""
    def spread(launch: float) -> float:
        return statistics.median(abs(error(device_us(p, v, launch), m[v]["device_us"]))
                                 for p, m in pairs for v in ("fused", "unfused") if m[v].get("device_us"))
    return min((step / 2 for step in range(0, 17)), key=spread)


def host_per_kernel(measured: dict) -> list[float]:
    """PyTorch's eager cost on the host per kernel that ran: what a framework's dispatch adds to the device."""
    return [(m["eager_us"] - m["device_us"]) / len(m["kernels"]) for m in (measured["fused"], measured["unfused"])
            if m.get("kernels") and m.get("device_us")]


def row_words(case: str, pred: dict, measured: dict | None) -> str:
    head = f"{case:<28} predicted fused {pred['fused_us']:9.1f} µs  unfused {pred['unfused_us']:9.1f} µs  " \
           f"speedup {pred['speedup']:5.2f}×"
    if measured is None:
        return head
    if "unsupported" in measured:
        return head + f"  | not measured: {measured['unsupported']}" + ("\n" + measured["traceback"]
                                                                          if "traceback" in measured else "")
    f, u = measured["fused"], measured["unfused"]
    lines = [head,
             f"{'':<28} on the device: predicted fused {device_us(pred, 'fused'):9.1f} µs  unfused "
             f"{device_us(pred, 'unfused'):9.1f} µs  | measured fused {_us(f.get('device_us'))} "
             f"({_err(device_us(pred, 'fused'), f.get('device_us'))})  unfused {_us(u.get('device_us'))} "
             f"({_err(device_us(pred, 'unfused'), u.get('device_us'))})",
             f"{'':<28} eager (PyTorch dispatch) fused {_us(f['eager_us'])} ({_err(pred['fused_us'], f['eager_us'])})"
             f"  unfused {_us(u['eager_us'])} ({_err(pred['unfused_us'], u['eager_us'])})"
             f"  speedup {u['eager_us'] / f['eager_us']:5.2f}× eager, "
             + (f"{u['device_us'] / f['device_us']:5.2f}× on the device" if f.get("device_us") and u.get("device_us")
                else "device time not measured"),
             f"{'':<28} kernels predicted {pred['kernel_count']['fused']}/{pred['kernel_count']['unfused']}, ran "
             f"{_count(f)}/{_count(u)}; fused ran: {'; '.join(_short(n) for n in (f.get('kernels') or []))}"]
    return "\n".join(lines)


def _us(value) -> str:
    return f"{value:9.1f} µs" if value is not None else "      n/a"


def _err(predicted, measured) -> str:
    return f"{error(predicted, measured):+.0%}" if measured else "n/a"


def _count(m: dict) -> str:
    return str(len(m["kernels"])) if m.get("kernels") is not None else "?"


def _short(name: str) -> str:
    return name if len(name) <= 70 else name[:67] + "..."


def compare(preds: dict, measured: dict, profile: str) -> tuple[list[dict], dict]:
    """Print predicted against measured for each case, then the calibration the measurements imply."""
    rows, pairs, host = [], [], []
    for case, m in measured.items():
        pred = preds[case]
        print(row_words(case, pred, m), flush=True)
        row = {"case": case, "preset": CASES[case][0], "params": CASES[case][1], "measured": m,
               "predicted": {"fused_us": pred["fused_us"], "unfused_us": pred["unfused_us"],
                             "device_us": {v: device_us(pred, v) for v in ("fused", "unfused")},
                             "speedup": pred["speedup"], "kernels": pred["kernel_count"]}}
        if "unsupported" not in m:
            pairs.append((pred, m))
            host += host_per_kernel(m)
            row["error"] = {v: error(device_us(pred, v), m[v]["device_us"]) for v in ("fused", "unfused")
                            if m[v].get("device_us")}
        rows.append(row)
    figures = gpu_roofline.profile_figures(profile)
    implied = {"launch": fit_launch(pairs) if pairs else None, "framework": statistics.median(host) if host else None}
    errors = [abs(e) for row in rows for e in (row.get("error") or {}).values()]
    print(f"device time predicted within {statistics.median(errors):.0%} of measured (median over {len(errors)} "
          f"variants; worst {max(errors):.0%})" if errors else "nothing measured")
    print(f"calibration: the launch that best fits the device times is {implied['launch']} µs per kernel (the profiles "
          f"use {figures['launch_us']:g}); PyTorch's eager dispatch from Python adds {implied['framework'] or 0:.1f} µs "
          f"per kernel on the host (median; the profiles assume {figures['framework_us']:g} µs for TensorFlow's "
          "executor, which is not here to measure)")
    return rows, implied


def markdown(preds: dict, runs: list[dict]) -> str:
    """The kept runs as docs/gpu-simulation.md shows them: per case, the device times of all runs' median."""
    lines = ["| case | kernels predicted → ran (fused / unfused) | device µs predicted (fused / unfused) | device µs "
             "measured | error (fused / unfused) | speedup predicted | measured on the device | measured eager |",
             "|---|---|---|---|---|---|---|---|"]
    for case, pred in preds.items():
        rows = [row["measured"] for run in runs for row in run["rows"] if row["case"] == case]
        rows = [m for m in rows if "unsupported" not in m]
        if not rows:
            continue
        figure = medians(rows)
        dev, eager = figure["device_us"], figure["eager_us"]
        ran = "/".join(str(len(figure["kernels"][v])) for v in ("fused", "unfused"))
        p_dev = {v: device_us(pred, v) for v in ("fused", "unfused")}
        lines.append(f"| {case} | {pred['kernel_count']['fused']}/{pred['kernel_count']['unfused']} → {ran} "
                     f"| {p_dev['fused']:.1f} / {p_dev['unfused']:.1f} | {dev['fused']:.1f} / {dev['unfused']:.1f} "
                     f"| {error(p_dev['fused'], dev['fused']):+.0%} / {error(p_dev['unfused'], dev['unfused']):+.0%} "
                     f"| {p_dev['unfused'] / p_dev['fused']:.2f}× | {dev['unfused'] / dev['fused']:.2f}× "
                     f"| {eager['unfused'] / eager['fused']:.2f}× |")
    return "\n".join(lines)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--predict-only", action="store_true", help="print the predictions; no GPU, no PyTorch")
    parser.add_argument("--record", action="store_true", help="simulate the cases here (needs the explorer's TensorFlow)")
    parser.add_argument("--profile", help="the GPU profile to predict for (default: the GPU found, else h100)")
    parser.add_argument("--reps", type=int, default=200)
    parser.add_argument("--out", default=str(MEASUREMENTS))
    parser.add_argument("--stored", action="store_true",
                        help="compare today's predictions with the measurements kept in --out; no GPU")
    parser.add_argument("--markdown", action="store_true", help="with --stored: the table docs/ shows")
    parser.add_argument("--cases", nargs="*", help="only the cases whose names hold one of these words")
    args = parser.parse_args(argv)
    if args.record:
        record()
        return 0
    identity = {} if args.predict_only or args.stored else gpu_identity()
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
    if args.stored and args.markdown:
        print(markdown(preds, json.loads(Path(args.out).read_text())))
        return 0
    if args.stored:
        for run in json.loads(Path(args.out).read_text()):
            print(f"Measured on {run['gpu']} (driver {run['driver']}), {run['date']}; libraries {run['libraries']}")
            compare(preds, {row["case"]: row["measured"] for row in run["rows"] if row["case"] in preds}, profile)
        return 0
    if identity.get("gpu") is None:
        print("no NVIDIA GPU found (nvidia-smi): run with --predict-only here", file=sys.stderr)
        return 2
    try:
        import torch  # noqa: F401
    except ImportError:
        print("PyTorch is not installed: the measured side drives cuBLASLt and cuDNN through it", file=sys.stderr)
        return 2
    print(f"Measured on {identity['gpu']} (driver {identity['driver']}), {identity['date']}; "
          f"libraries {identity.get('libraries')}; float32 contractions in TF32 (TensorFlow's default)")
    import gpu_kernels

    reached = gpu_kernels.ceilings()
    peaks = gpu_roofline.profile_figures(profile)
    print(f"this GPU reaches: copy {reached['copy_gbs']:,.0f} GB/s (data sheet {peaks['memory_gbs']:,.0f}), "
          f"matmul TF32 {reached['tf32_tflops']:,.0f} TFLOP/s (data sheet {peaks['peak_tflops'].get('tf32_tc', 0):,.0f}), "
          f"float16 {reached['fp16_tflops']:,.0f} TFLOP/s (data sheet {peaks['peak_tflops'].get('fp16_tc', 0):,.0f})",
          flush=True)
    measured = {case: measure(case, args.reps) for case in CASES
                if not args.cases or any(word in case for word in args.cases)}
    rows, implied = compare(preds, measured, profile)
    out = Path(args.out)
    runs = json.loads(out.read_text()) if out.exists() else []
    figures = gpu_roofline.profile_figures(profile)
    runs.append(dict(identity, profile=profile, reps=args.reps, tf32=True, implied_per_kernel_us=implied, reached=reached,
                     efficiency_used=figures["efficiency"], launch_used=figures["launch_us"],
                     graphs_recorded=graphs["recorded_at"], rows=rows))
    out.write_text(json.dumps(runs, indent=1))
    print(f"appended to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
