"""What a GPU statement rests on, in words a student reads: one vocabulary for the page, the CLI and the lessons.

The explorer has no GPU of its own in most rooms, so every statement it makes about a GPU says which of four
kinds of evidence it has, and says no more than that evidence:

* simulated: TensorFlow's own Grappler run here on a virtual GPU (worker.simulate): its decisions are real,
  nothing ran on a GPU;
* measured: run on a real GPU, named, dated, with its library versions (shared/reference/measured-gpu.md);
* source: read from a compiler's or library's source, named by file and version;
* predicted: a roofline on vendor data-sheet figures (analysis.gpu_roofline), never a measurement.
"""

from __future__ import annotations

SIMULATED = "Simulated here (Grappler run on a virtual GPU; nothing ran on a GPU)"
MEASURED_H200 = ("Measured on a real GPU (NVIDIA H200, 2026-11-26; XLA through JAX 0.11.2, driver 580.159, CUDA 13; "
                 "XLA and cuBLASLt as TensorFlow uses them, not TensorFlow itself)")
PREDICTED = "Predicted (a roofline on the vendor's data-sheet figures, calibrated on a measured H100; not measured here)"

# The words that mark a statement's evidence; a GPU statement on the page carries one of them (tests walk them).
MARKS = ("Simulated", "simulated", "Measured on a real GPU", "Read from", "read from", "Predicted", "predicted")


def carries_evidence(text: str) -> bool:
    return any(mark in text for mark in MARKS)
