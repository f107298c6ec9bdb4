"""Facts about the host the worker runs on: TensorFlow's build, oneDNN, the CPU, the flags set.

Imported only in the worker process (the functions that take ``tf`` need TensorFlow).
"""

from __future__ import annotations

import os
import platform

from ..model.flags import ENV_FLAGS
from ..model.results import Fingerprint


def fingerprint(tf, device: str, gpus: list, import_s: float) -> Fingerprint:
    """What ran the model: TensorFlow's build, the devices, the CPU's features and the flags."""
    build = dict(tf.sysconfig.get_build_info())
    gpu_details = []
    for gpu in gpus:
        try:
            details = tf.config.experimental.get_device_details(gpu)
        except Exception:  # noqa: BLE001 - a GPU's details are an extra: its name stands without them
            details = {}
        gpu_details.append({"name": gpu.name, "model": details.get("device_name", ""),
                            "compute_capability": list(details.get("compute_capability", ()) or ())})
    return {
        "tensorflow": tf.__version__,
        "python": platform.python_version(),
        "onednn": onednn_enabled(),
        "cuda_build": bool(build.get("is_cuda_build")),
        "cuda_version": build.get("cuda_version", ""),
        "cudnn_version": build.get("cudnn_version", ""),
        "devices": [d.name for d in tf.config.list_physical_devices()],
        "gpus": gpu_details,
        "cpu_model": cpu_model(),
        "cpu_flags": cpu_flags(),
        "cpu_count": os.cpu_count(),
        "flags": env_flags(),
        # GPU settings that change results or whether workers can share a GPU.
        "tf32": bool(tf.config.experimental.tensor_float_32_execution_enabled()),
        "gpu_memory_growth": os.environ.get("TF_FORCE_GPU_ALLOW_GROWTH", "") == "true",
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "device": device,
        "import_s": round(import_s, 3),
        "pid": os.getpid(),
    }


def onednn_enabled() -> bool | None:
    """Whether this TensorFlow runs with oneDNN; None when the build cannot say."""
    try:
        from tensorflow.python.util import _pywrap_util_port

        return bool(_pywrap_util_port.IsMklEnabled())
    except Exception:  # noqa: BLE001 - an internal module: absent in some builds
        return None


def env_flags() -> dict:
    """The explorer's TF flags set in this process's environment."""
    return {name: os.environ[name] for name in ENV_FLAGS if name in os.environ}


# CPU features that decide which dtypes oneDNN fuses (IsDataTypeSupportedByOneDNNOnThisCPU).
ONEDNN_CPU_FLAGS = ("avx512f", "avx512bw", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_fp16",
                    "avx_vnni", "avx512_vnni", "avx_ne_convert")


def _cpuinfo(field: str) -> str | None:
    """The value of the first /proc/cpuinfo line for field; None when there is none."""
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith(field):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def cpu_flags() -> list[str]:
    present = set((_cpuinfo("flags") or "").split())
    return [f for f in ONEDNN_CPU_FLAGS if f in present]


def cpu_model() -> str:
    model = _cpuinfo("model name")
    return model if model is not None else (platform.processor() or platform.machine())
