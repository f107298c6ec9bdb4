"""What a result ran on, in words, from the worker's fingerprint (plain data)."""

from __future__ import annotations

import glob
import os

from .flags import is_simulated

# Where the NVIDIA kernel driver shows its GPUs; read without CUDA, so without starting TensorFlow.
NVIDIA_DRIVER_GPUS = "/proc/driver/nvidia/gpus"

INSTALL_CUDA = 'pip install "tensorflow[and-cuda]==2.21.0" (in the .venv), then restart the explorer'


def nvidia_gpus_present() -> bool:
    """Whether the NVIDIA driver shows a GPU (TensorFlow may still see none without CUDA's libraries)."""
    return bool(os.path.isdir(NVIDIA_DRIVER_GPUS) and os.listdir(NVIDIA_DRIVER_GPUS)) or bool(glob.glob("/dev/nvidia[0-9]*"))


def no_gpu_words(driver_present: bool) -> str:
    """Why TensorFlow sees no GPU, and what to do about it."""
    if driver_present:
        return ("An NVIDIA GPU is on this machine but TensorFlow sees none: it needs the CUDA libraries. "
                f"Install them with {INSTALL_CUDA}.")
    return "This machine shows no NVIDIA GPU (no GPU device from an NVIDIA driver)."


def gpu_words(gpu: dict) -> str:
    cc = gpu.get("compute_capability") or []
    capability = f" (compute capability {cc[0]}.{cc[1]})" if len(cc) == 2 else ""
    return f"{gpu.get('model') or gpu.get('name', 'GPU')}{capability}"


def describe(fp: dict) -> str:
    """One line: the device that ran the model and the build facts that decide its fusions."""
    tf_words = f"TensorFlow {fp.get('tensorflow', '?')}"
    device = fp.get("device", "cpu")
    cpu = f"{fp.get('cpu_model') or 'CPU'}, {fp.get('cpu_count', '?')} cores"
    onednn = f"oneDNN {'on' if fp.get('onednn') else 'off'}"
    if device == "gpu" and fp.get("gpus"):
        build = f"CUDA {fp.get('cuda_version') or '?'}, cuDNN {fp.get('cudnn_version') or '?'}"
        parts = [tf_words, f"GPU:0 {gpu_words(fp['gpus'][0])}", build, f"TF32 {'on' if fp.get('tf32') else 'off'}"]
        if len(fp["gpus"]) > 1:
            parts.append(f"{len(fp['gpus'])} GPUs visible, GPU:0 used")
        return " · ".join(parts)
    if is_simulated(device):
        label = (fp.get("simulated_gpu") or {}).get("label") or device
        return " · ".join([tf_words, f"simulated {label} (Grappler only, on {cpu})", onednn])
    return " · ".join([tf_words, cpu, onednn])
