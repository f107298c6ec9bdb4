"""The one-line description of what ran a model, for each kind of device."""

from __future__ import annotations

from explorer.model.devices import INSTALL_CUDA, no_gpu_words
from explorer.present.machine import describe

CPU = {"tensorflow": "2.21.0", "device": "cpu", "cpu_model": "AMD EPYC 9B14", "cpu_count": 2, "onednn": True,
       "gpus": [], "cuda_version": "12.5.1", "cudnn_version": "9", "tf32": True}


def test_cpu_names_the_processor_and_onednn():
    assert describe(CPU) == "TensorFlow 2.21.0 · AMD EPYC 9B14, 2 cores · oneDNN on"
    assert describe(dict(CPU, onednn=False)).endswith("oneDNN off")


def test_gpu_names_the_gpu_its_capability_and_the_cuda_build():
    gpus = [{"name": "/physical_device:GPU:0", "model": "NVIDIA A100-SXM4-40GB", "compute_capability": [8, 0]}]
    line = describe(dict(CPU, device="gpu", gpus=gpus))
    assert line == ("TensorFlow 2.21.0 · GPU:0 NVIDIA A100-SXM4-40GB (compute capability 8.0) · "
                    "CUDA 12.5.1, cuDNN 9 · TF32 on")
    two = describe(dict(CPU, device="gpu", gpus=gpus * 2, tf32=False))
    assert "TF32 off" in two and two.endswith("2 GPUs visible, GPU:0 used")


def test_gpu_details_missing_still_read_well():
    line = describe(dict(CPU, device="gpu", gpus=[{"name": "/physical_device:GPU:0"}], cuda_version=""))
    assert "GPU:0 /physical_device:GPU:0 ·" in line and "CUDA ?" in line


def test_simulated_gpu_says_nothing_ran_on_a_gpu():
    line = describe(dict(CPU, device="gpu-sim:ampere", simulated_gpu={"label": "Ampere A100 (sm_80)"}))
    assert "simulated Ampere A100 (sm_80) (Grappler only, on AMD EPYC 9B14, 2 cores)" in line


def test_no_gpu_words_say_what_to_do():
    assert INSTALL_CUDA in no_gpu_words(True)
    assert "no NVIDIA GPU" in no_gpu_words(False)
