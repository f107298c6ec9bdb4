"""The GPUs a class names, as plain data: what Grappler reads of each (the simulation) and what a roofline needs.

Two kinds of figures, kept apart:

* ``compute_capability``, SM count, clock, memory, caches: the ``DeviceProperties`` TensorFlow's own
  ``GetLocalGPUInfo`` would report, which the simulated GPU hands Grappler (worker.simulate).
* ``memory_gbs`` and ``peak_tflops``: the vendor's data-sheet figures for the predicted GPU time
  (analysis.gpu_roofline), dense (a data sheet that quotes "with sparsity" is halved, and says so in
  ``sources``). A figure the data sheet does not give is derived and marked in ``derived``.

``peak_tflops`` keys: ``fp64``, ``fp64_tc`` (tensor cores), ``fp32`` (CUDA cores), ``tf32_tc``,
``fp16`` (CUDA cores, half2), ``fp16_tc``, ``bf16_tc``. A key that is absent: the GPU has no such unit.

The names are the GPUs'; ``volta``, ``ampere`` and ``hopper`` (the first three profiles' names) stay as
aliases, so links, lesson files and scripts written with them keep working.
"""

from __future__ import annotations

# What the roofline adds to the data sheets, calibrated on a real GPU (explorer/model/gpu_measurements.json: an
# NVIDIA H100 80GB HBM3, 2026-11-27, through cuBLASLt 13.1 and cuDNN 9.19 from PyTorch 2.11; TensorFlow is not
# on that machine). A kernel's device time is its roofline at the fractions of the peaks real kernels reached
# there, plus the launch; TensorFlow's executor dispatches ops from the host while earlier kernels run, so an op
# takes the longer of that device time and the dispatch. The dispatch is an assumption: only PyTorch's eager
# dispatch (15-17 µs per kernel, from Python) could be measured there.
OVERHEAD = {"launch_us": 5.5, "framework_us": 6.0,
            "source": "launch measured on an H100 (2026-11-27: kernels replayed back to back in a CUDA graph, about "
                      "2 µs each beyond their roofline); TensorFlow's dispatch of 6 µs per op assumed, not measured "
                      "(no TensorFlow on the GPU machine), and hidden behind kernels that run longer"}
# The fractions of the data-sheet peaks reached on that H100 (two runs' mean): a 1 GiB device-to-device copy
# (2,905-2,942 GB/s of 3,350) and an 8192³ matmul in TF32 (383-398 of 494 TFLOP/s) and float16 (719-742 of
# 990). Taken for every profile: measured on the H100 only, assumed for the others.
EFFICIENCY = {"memory": 0.87, "tf32_tc": 0.79, "fp16_tc": 0.74, "bf16_tc": 0.74,
              "source": "fractions of the data-sheet peaks reached on an NVIDIA H100 (2026-11-27, "
                        "benchmarks/gpu_predict.py): memory 87 %, TF32 tensor cores 79 %, float16 74 %; "
                        "assumed the same for the other GPUs and units (100 % where not measured)"}

# How the calibrated roofline did against the kept measurements (benchmarks/gpu_predict.py --stored --markdown).
MEASURED_AGAINST = ("on an NVIDIA H100 (2026-11-27, 19 cases through cuBLASLt and cuDNN, explorer/model/gpu_"
                    "measurements.json) this roofline came within 16-18 % of the measured device time (median), but fused kernels "
                    "ran up to 65 % slower than predicted, so the predicted speedups were a median 1.5× (0.96-4.3×) the "
                    "measured ones, and at 256³ a fused matmul + bias + ReLU was slower than the unfused ops (0.84×): "
                    "read a predicted speedup as an upper estimate")

_V100 = "NVIDIA Tesla V100 GPU Accelerator data sheet (V100 SXM2: 7.8 FP64, 15.7 FP32, 125 Tensor TFLOPS; 900 GB/s HBM2)"
_T4 = ("NVIDIA T4 Tensor Core GPU data sheet (8.1 FP32 TFLOPS, 65 FP16/FP32 mixed-precision Tensor TFLOPS; "
       "320 GB/s GDDR6)")
_A100 = ("NVIDIA A100 Tensor Core GPU data sheet (A100 40GB SXM: 9.7 FP64, 19.5 FP64 Tensor, 19.5 FP32, 156 TF32, "
         "312 BF16, 312 FP16 Tensor TFLOPS; 1,555 GB/s HBM2)")
_L4 = ("NVIDIA L4 Tensor Core GPU data sheet (30.3 FP32 TFLOPS; 120 TF32, 242 BF16, 242 FP16 Tensor TFLOPS quoted "
       "with sparsity, halved here for dense; 300 GB/s GDDR6)")
_H100 = ("NVIDIA H100 Tensor Core GPU data sheet (H100 SXM: 34 FP64, 67 FP64 Tensor, 67 FP32; 989 TF32, 1,979 BF16, "
         "1,979 FP16 Tensor TFLOPS quoted with sparsity, halved here for dense; 3.35 TB/s HBM3)")
_H200 = ("NVIDIA H200 Tensor Core GPU data sheet (H200 SXM: 34 FP64, 67 FP64 Tensor, 67 FP32; 989 TF32, 1,979 BF16, "
         "1,979 FP16 Tensor TFLOPS quoted with sparsity, halved here for dense; 4.8 TB/s HBM3e)")

PROFILES: dict[str, dict] = {
    "v100": {
        "label": "V100: Tesla V100-SXM2-16GB (sm_70)", "model": "Tesla V100-SXM2-16GB", "compute_capability": "7.0",
        "num_sms": 80, "clock_mhz": 1530, "memory_bytes": 16 * 2**30, "memory_bandwidth_kbps": 900 * 10**6,
        "l2_cache_bytes": 6 * 2**20, "shared_memory_per_sm_bytes": 96 * 2**10, "registers_per_sm": 65536,
        "memory_gbs": 900, "peak_tflops": {"fp64": 7.8, "fp32": 15.7, "fp16": 31.4, "fp16_tc": 125.0},
        "sources": [_V100], "derived": ["fp16 on CUDA cores: twice FP32 (half2), not on the data sheet"],
        "notes": "Tensor cores for float16 only. Below compute capability 8.0, so cuDNN runtime fusion "
                 "(Relu6/Elu/LeakyRelu after Conv2D, Tanh/Sigmoid/exact GELU after MatMul) is never "
                 "used, and the layout optimizer turns float32 NHWC convolutions into NCHW.",
    },
    "t4": {
        "label": "T4: Tesla T4 16GB (sm_75)", "model": "Tesla T4", "compute_capability": "7.5",
        "num_sms": 40, "clock_mhz": 1590, "memory_bytes": 16 * 2**30, "memory_bandwidth_kbps": 320 * 10**6,
        "l2_cache_bytes": 4 * 2**20, "shared_memory_per_sm_bytes": 64 * 2**10, "registers_per_sm": 65536,
        "memory_gbs": 320, "peak_tflops": {"fp64": 0.25, "fp32": 8.1, "fp16": 16.2, "fp16_tc": 65.0},
        "sources": [_T4], "derived": ["FP64: 1/32 of FP32 (Turing), not on the data sheet",
                                      "fp16 on CUDA cores: twice FP32 (half2), not on the data sheet"],
        "notes": "A small inference GPU: tensor cores for float16, no TF32. Below compute capability 8.0, so no cuDNN "
                 "runtime fusion, and float32 NHWC convolutions become NCHW.",
    },
    "a100": {
        "label": "A100: A100-SXM4-40GB (sm_80)", "model": "NVIDIA A100-SXM4-40GB", "compute_capability": "8.0",
        "num_sms": 108, "clock_mhz": 1410, "memory_bytes": 40 * 2**30, "memory_bandwidth_kbps": 1555 * 10**6,
        "l2_cache_bytes": 40 * 2**20, "shared_memory_per_sm_bytes": 164 * 2**10, "registers_per_sm": 65536,
        "memory_gbs": 1555,
        "peak_tflops": {"fp64": 9.7, "fp64_tc": 19.5, "fp32": 19.5, "tf32_tc": 156.0, "fp16": 78.0,
                        "fp16_tc": 312.0, "bf16_tc": 312.0},
        "sources": [_A100, "NVIDIA A100 Tensor Core GPU Architecture whitepaper (78 FP16 non-Tensor TFLOPS)"],
        "derived": [],
        "notes": "First generation where cuDNN runtime fusion may be used (with "
                 "TF_CUDNN_USE_RUNTIME_FUSION=1); TF32 lets float32 convolutions stay NHWC.",
    },
    "l4": {
        "label": "L4: NVIDIA L4 24GB (sm_89)", "model": "NVIDIA L4", "compute_capability": "8.9",
        "num_sms": 58, "clock_mhz": 2040, "memory_bytes": 24 * 2**30, "memory_bandwidth_kbps": 300 * 10**6,
        "l2_cache_bytes": 48 * 2**20, "shared_memory_per_sm_bytes": 100 * 2**10, "registers_per_sm": 65536,
        "memory_gbs": 300,
        "peak_tflops": {"fp64": 0.47, "fp32": 30.3, "tf32_tc": 60.0, "fp16": 30.3, "fp16_tc": 121.0, "bf16_tc": 121.0},
        "sources": [_L4], "derived": ["FP64: 1/64 of FP32 (Ada), not on the data sheet",
                                      "fp16 on CUDA cores: the FP32 rate (Ada), not on the data sheet"],
        "notes": "An inference GPU with much compute for little memory bandwidth (300 GB/s): most element-wise "
                 "work is memory-bound on it. Grappler's decisions are those of compute capability 8.0+.",
    },
    "h100": {
        "label": "H100: H100-SXM5-80GB (sm_90)", "model": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0",
        "num_sms": 132, "clock_mhz": 1980, "memory_bytes": 80 * 2**30, "memory_bandwidth_kbps": 3350 * 10**6,
        "l2_cache_bytes": 50 * 2**20, "shared_memory_per_sm_bytes": 228 * 2**10, "registers_per_sm": 65536,
        "memory_gbs": 3350,
        "peak_tflops": {"fp64": 34.0, "fp64_tc": 67.0, "fp32": 67.0, "tf32_tc": 494.5, "fp16": 134.0,
                        "fp16_tc": 989.5, "bf16_tc": 989.5},
        "sources": [_H100], "derived": ["fp16 on CUDA cores: twice FP32 (half2), not on the data sheet"],
        "notes": "The TF 2.21 wheel carries compute_90 PTX (no sm_90 SASS): a real H100 JIT-compiles "
                 "TensorFlow's own kernels at first use. Grappler's decisions are those of Ampere.",
    },
    "h200": {
        "label": "H200: H200 SXM 141GB (sm_90)", "model": "NVIDIA H200", "compute_capability": "9.0",
        "num_sms": 132, "clock_mhz": 1980, "memory_bytes": 141 * 10**9, "memory_bandwidth_kbps": 4800 * 10**6,
        "l2_cache_bytes": 50 * 2**20, "shared_memory_per_sm_bytes": 228 * 2**10, "registers_per_sm": 65536,
        "memory_gbs": 4800,
        "peak_tflops": {"fp64": 34.0, "fp64_tc": 67.0, "fp32": 67.0, "tf32_tc": 494.5, "fp16": 134.0,
                        "fp16_tc": 989.5, "bf16_tc": 989.5},
        "sources": [_H200], "derived": ["fp16 on CUDA cores: twice FP32 (half2), not on the data sheet"],
        "notes": "The H100's compute with more and faster memory (141 GB, 4.8 TB/s); the GPU XLA was measured on "
                 "(shared/reference/measured-gpu.md). Grappler's decisions are those of Ampere.",
    },
}

ALIASES = {"volta": "v100", "ampere": "a100", "hopper": "h100"}  # the first profiles' names, still accepted


def profile_for(gpu_name: str | None) -> str | None:
    """The profile of a GPU by the name its driver gives (nvidia-smi: "NVIDIA H100 80GB HBM3"), or None."""
    for word in ("H200", "H100", "A100", "L4", "T4", "V100"):
        if gpu_name and word in gpu_name.upper():
            return word.lower()
    return None


def canonical(name: str) -> str:
    """The profile a name or alias stands for ('ampere' -> 'a100'); KeyError for neither."""
    name = ALIASES.get(name, name)
    if name not in PROFILES:
        raise KeyError(name)
    return name


def every_name() -> dict[str, dict]:
    """Every accepted name with its data: the profiles, then the aliases (labelled as such)."""
    out = dict(PROFILES)
    for alias, target in ALIASES.items():
        out[alias] = dict(PROFILES[target], alias_of=target,
                          label=f"{alias}: the former name of {target} ({PROFILES[target]['label'].split(': ', 1)[1]})")
    return out
