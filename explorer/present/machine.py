"""What a result ran on, in words, from the worker's fingerprint (plain data)."""

from __future__ import annotations

from ..model.devices import is_simulated


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
