"""GPU statements say what they rest on, and none says more: the XLA GPU note and the lessons' GPU steps
against what was measured on a real GPU (shared/reference/measured-gpu.md: XLA on an NVIDIA H200)."""

from __future__ import annotations

import json
from pathlib import Path

from explorer.analysis import xla_fusion
from explorer.model import evidence

ROOT = Path(__file__).resolve().parents[2]
GELU_MODEL = {"MatMul", "BiasAdd", "Mul", "Pow", "Tanh", "AddV2"}


def gpu_steps():
    for path in sorted((ROOT / "lessons").glob("*.json")):
        for i, step in enumerate(json.loads(path.read_text())["steps"]):
            if "device=gpu" in step["experiment"]:
                yield f"{path.stem}#{i}", step


def test_the_xla_gelu_note_says_what_was_measured_on_the_h200():
    note = xla_fusion.gpu_note(GELU_MODEL)
    assert evidence.MEASURED_H200 in note and "H200, 2026-11-26" in note and "JAX 0.11.2" in note
    # the epilogue fired for one exact form, only with Triton GEMMs off; TensorFlow's form never matched
    assert "jax.nn.gelu(approximate=True)" in note and "--xla_gpu_enable_triton_gemm=false" in note
    assert "TensorFlow's own GELU form" in note and "was never matched" in note
    assert "loop fusion" in note and "BIAS epilogue" in note
    # the claim the source reading made, unconditionally, is gone
    assert "matches the tanh form of GELU (approximate=True) on a cuBLASLt matmul and turns it into" not in note


def test_every_sentence_of_the_xla_gpu_note_carries_its_evidence():
    for ops in (GELU_MODEL, {"MatMul", "BiasAdd", "Relu"}, {"Conv2D", "BiasAdd", "Relu"}):
        note = xla_fusion.gpu_note(ops)
        claims = note.replace(xla_fusion.GPU_NOT_MEASURED, "").replace(xla_fusion.GPU_ONLY_THERE, "").strip()
        assert claims and evidence.carries_evidence(claims), ops
        if "GELU" not in claims:  # what was only read is said to be only read
            assert "Read from XLA's source" in claims and "not measured" in claims and "version" in claims


def test_the_xla_lesson_gpu_step_agrees_with_the_measurement():
    step = dict(gpu_steps())["xla-gelu#5"]
    text = step["text"]
    assert "Measured on a real GPU".lower() in text.lower() and "H200" in text and "2026-11-26" in text
    assert "Triton GEMMs switched off" in text and "TensorFlow's own GELU form was never matched" in text
    assert "turns it into the matmul's GELU epilogue" not in text
    assert "Simulated here" in text  # Grappler's half of the step is the simulation


def test_every_lesson_gpu_step_carries_its_evidence():
    steps = dict(gpu_steps())
    assert len(steps) >= 5, sorted(steps)
    for name, step in steps.items():
        assert evidence.carries_evidence(step["text"]), name
