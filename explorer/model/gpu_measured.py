"""What ran on a real GPU, as kept: the seed patterns' graphs as the simulated GPU made them, and their times.

Both files are written by benchmarks/gpu_predict.py: ``gpu_measured_graphs.json`` holds TensorFlow's graphs
of each case (``--record``, here: Grappler on a virtual GPU), and ``gpu_measurements.json`` each run on a lent
GPU machine (date, GPU, driver, library versions; per case the device and eager times of the fused and the
unfused graph and the kernels that ran). TensorFlow itself was not on that machine: the graphs were replayed
through the libraries TensorFlow's kernels call (cuBLASLt, cuDNN) from PyTorch.
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path

HERE = Path(__file__).resolve().parent
GRAPHS = HERE / "gpu_measured_graphs.json"
MEASUREMENTS = HERE / "gpu_measurements.json"
HOW_SHORT = "cuBLASLt/cuDNN from PyTorch, not TensorFlow"
HOW = ("TensorFlow's graphs replayed kernel by kernel through cuBLASLt and cuDNN from PyTorch (TensorFlow cannot "
       "run on the GPU machine); device time: the kernels back to back in a CUDA graph")


@lru_cache(maxsize=1)
def graphs() -> dict:
    return json.loads(GRAPHS.read_text())


@lru_cache(maxsize=1)
def runs() -> tuple[dict, ...]:
    return tuple(json.loads(MEASUREMENTS.read_text()))
