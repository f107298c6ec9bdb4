"""TensorFlow's GPU kernels stood in for by the libraries they call, driven from PyTorch (on the GPU machines).

TensorFlow is not on the lent GPU machines, so benchmarks/gpu_predict.py replays each recorded TensorFlow graph
(every op with its tensors' dtypes and shapes, as the simulated GPU placed them) one kernel per op, through the
same libraries TensorFlow's kernels call:

* ``_FusedMatMul`` [BiasAdd(, Relu | GeluApproximate)]: one cuBLASLt matmul with its BIAS / RELU_BIAS /
  GELU_BIAS epilogue (``torch.addmm`` / ``torch._addmm_activation``, which call cublasLt with that epilogue, as
  TensorFlow does with TF_USE_CUBLASLT=1);
* ``_FusedConv2D`` [BiasAdd, Relu]: cuDNN's fused convolution-bias-activation (``torch.cudnn_convolution_relu``),
  channels-last (NHWC, as TensorFlow keeps float32 on compute capability 8.0+ and float16 everywhere);
* every other op: the one kernel PyTorch launches for it (MatMul: cuBLAS; element-wise ops: one kernel each).

Which kernels really ran is read back from PyTorch's profiler (CUPTI) and kept with each row: the proof of what
was timed. float32 contractions run in TF32, as TensorFlow runs them by default on Ampere and newer.
"""

from __future__ import annotations

import os
import statistics
import time

DEVICE = os.environ.get("GPU_KERNELS_DEVICE", "cuda")  # "cpu": a dry run of the replay where no GPU is

UNARY = {"Relu": "relu", "Tanh": "tanh", "Sigmoid": "sigmoid", "Exp": "exp", "Erf": "erf", "Neg": "neg",
         "Sqrt": "sqrt", "Rsqrt": "rsqrt", "Square": "square", "Identity": "clone", "Softplus": "softplus"}
BINARY = {"AddV2": "add", "Add": "add", "BiasAdd": "add", "Sub": "sub", "Mul": "mul", "RealDiv": "div",
          "Maximum": "maximum", "Minimum": "minimum", "Pow": "pow"}
NO_KERNEL = {"Reshape", "Squeeze", "ExpandDims", "Shape", "Identity", "Const", "NoOp", "Snapshot", "StopGradient"}


class Unsupported(Exception):
    """An op this replay has no library stand-in for: the case is reported as not measured."""


def _torch():
    import torch

    torch.backends.cuda.matmul.allow_tf32 = True  # TensorFlow's default on Ampere and newer
    torch.backends.cudnn.allow_tf32 = True
    torch.backends.cudnn.benchmark = True  # TensorFlow autotunes its convolutions too
    return torch


def _tensor(torch, spec, like=None):
    dtype, shape = getattr(torch, spec[0]), [max(int(d), 1) for d in spec[1]]
    if like is not None and like.dtype == dtype:  # the previous kernel's output, read back as the real chain does
        if list(like.shape) == shape:
            return like
        if like.dim() == 4 and list(like.permute(0, 2, 3, 1).shape) == shape:
            return like.permute(0, 2, 3, 1)  # a channels-last convolution's output seen as TensorFlow's NHWC
    return (torch.randn(shape, device=DEVICE, dtype=torch.float32) * 0.5).to(dtype)


def _conv_parts(torch, op, previous):
    """NHWC input seen as channels-last NCHW (same buffer), HWIO filter as channels-last OIHW, SAME or VALID."""
    x = _tensor(torch, op["inputs"][0], previous).permute(0, 3, 1, 2)
    kh, kw, ci, co = [int(d) for d in op["inputs"][1][1]]
    weight = (torch.randn([co, ci, kh, kw], device=DEVICE) * 0.05).to(x.dtype)
    weight = weight.contiguous(memory_format=torch.channels_last)
    h, oh = x.shape[2], int(op["outputs"][0][1][1])
    stride = max(1, round(h / oh)) if oh else 1
    padding = (kh // 2, kw // 2) if oh == -(-h // stride) else (0, 0)
    return x, weight, (stride, stride), padding


def kernel(torch, op: dict, previous):
    """A closure launching this op's kernel(s), and the tensor it returns (for the next op to read)."""
    name, fused = op["op"], tuple(op.get("fused_ops") or ())
    ins = op.get("inputs") or []
    if name in NO_KERNEL:
        return None
    if name in ("MatMul", "_FusedMatMul"):
        a = _tensor(torch, ins[0], previous)
        k = a.shape[-1]
        b_spec = ins[1]
        b = _tensor(torch, b_spec)
        if b.shape[0] != k:
            b = b.t()
        if name == "MatMul":
            return lambda: torch.mm(a, b)
        bias = _tensor(torch, ins[2])
        if fused == ("BiasAdd",):
            return lambda: torch.addmm(bias, a, b)
        if fused in (("BiasAdd", "Relu"), ("BiasAdd", "GeluApproximate")):
            gelu = fused[1] == "GeluApproximate"
            return lambda: torch._addmm_activation(bias, a, b, use_gelu=gelu)  # noqa: SLF001  (cuBLASLt epilogue)
        raise Unsupported(f"_FusedMatMul {list(fused)}")
    if name in ("Conv2D", "_FusedConv2D"):
        x, weight, stride, padding = _conv_parts(torch, op, previous)
        if name == "Conv2D":
            return lambda: torch.nn.functional.conv2d(x, weight, None, stride, padding)
        bias = _tensor(torch, ins[2])
        if fused == ("BiasAdd", "Relu"):
            return lambda: torch.cudnn_convolution_relu(x, weight, bias, stride, padding, (1, 1), 1)
        raise Unsupported(f"_FusedConv2D {list(fused)}")
    if name in UNARY and len(ins) >= 1:
        x = _tensor(torch, ins[0], previous)
        fn = getattr(torch, UNARY[name])
        return lambda: fn(x)
    if name in BINARY and len(ins) == 2:
        first = _tensor(torch, ins[0], previous)
        second = _tensor(torch, ins[1], None if first is previous else previous)
        if name == "Pow":  # TensorFlow's GELU raises to a constant 3
            return lambda: torch.pow(first, 3.0)
        fn = getattr(torch, BINARY[name])
        return lambda: fn(first, second)
    raise Unsupported(name)


def build(ops: list[dict]):
    """One callable running the recorded graph's GPU ops one after another, and how many ops launched kernels."""
    torch = _torch()
    steps, previous = [], None
    for op in ops:
        if op.get("device", "GPU") != "GPU":
            continue
        step = kernel(torch, op, previous)
        if step is None:
            continue
        previous = step()
        steps.append(step)

    def run():
        out = None
        for step in steps:
            out = step()
        return out
    return run, len(steps)


def launched(run) -> list[str]:
    """The GPU kernels one call launches, by name, as CUPTI saw them (memsets and copies left out)."""
    torch = _torch()
    from torch.profiler import ProfilerActivity, profile

    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        run()
        torch.cuda.synchronize()
    return [e.name for e in prof.events()
            if str(getattr(e, "device_type", "")).endswith("CUDA") and not e.name.startswith(("Memset", "Memcpy"))]


def device_us(run, batches: int = 15, replays: int = 40) -> float | None:
    """Median time of one call with the kernels back to back on the GPU (a CUDA graph replayed): no host cost."""
    torch = _torch()
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            run()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        run()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    samples = []
    for _ in range(batches):
        start.record()
        for _ in range(replays):
            graph.replay()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1e3 / replays)
    return statistics.median(samples)


def eager_samples(run, reps: int) -> list[float]:
    """Host wall time of single calls (launches from Python, then wait for the GPU), µs."""
    torch = _torch()
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        run()
        torch.cuda.synchronize()
        out.append((time.perf_counter() - t0) * 1e6)
    return out


def measure(graphs: dict, reps: int) -> dict:
    """Fused against unfused, as recorded: device time, eager time and the kernels that ran, per variant."""
    torch = _torch()
    runs = {v: build(graphs[v]) for v in ("fused", "unfused")}
    for run, _ in runs.values():
        for _ in range(10):
            run()
    torch.cuda.synchronize()
    out: dict = {}
    for v, (run, n) in runs.items():
        try:
            out[v] = {"ops": n, "kernels": launched(run)}
        except Exception as exc:  # noqa: BLE001  (no CUPTI: the times stand, the proof is missing and says so)
            out[v] = {"ops": n, "kernels": None, "profiler_error": str(exc).splitlines()[0][:200]}
    samples = {"fused": [], "unfused": []}
    for i in range(reps):  # interleaved, alternating which goes first
        for v in (("fused", "unfused") if i % 2 == 0 else ("unfused", "fused")):
            samples[v] += eager_samples(runs[v][0], 1)
    for v, (run, _) in runs.items():
        out[v]["eager_us"] = statistics.median(samples[v])
        try:
            out[v]["device_us"] = device_us(run)
        except Exception as exc:  # noqa: BLE001  (a library that refuses graph capture: say so, keep the eager time)
            out[v]["device_us"], out[v]["device_error"] = None, str(exc).splitlines()[0][:200]
    return out


def ceilings() -> dict:
    """What this GPU reaches, against which the data sheet's peaks are read: a device-to-device copy (bytes read
    and written) and a large matmul in TF32 and in float16, each the median of CUDA-event-timed runs."""
    torch = _torch()

    def timed(fn, reps=20):
        for _ in range(3):
            fn()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        samples = []
        for _ in range(reps):
            start.record()
            fn()
            end.record()
            end.synchronize()
            samples.append(start.elapsed_time(end) / 1e3)
        return statistics.median(samples)

    src = torch.empty(256 * 2**20, device=DEVICE, dtype=torch.float32)  # 1 GiB
    dst = torch.empty_like(src)
    out = {"copy_gbs": 2 * src.numel() * 4 / timed(lambda: dst.copy_(src)) / 1e9}
    n = 8192
    for name, dtype in (("tf32_tflops", torch.float32), ("fp16_tflops", torch.float16)):
        a, b = torch.randn(n, n, device=DEVICE).to(dtype), torch.randn(n, n, device=DEVICE).to(dtype)
        out[name] = 2 * n**3 / timed(lambda a=a, b=b: torch.mm(a, b)) / 1e12
    return out
