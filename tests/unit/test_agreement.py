"""How the benchmark decides that the fused and unfused outputs agree."""

from __future__ import annotations

import numpy as np

from explorer.worker.bench import TF32_TOLERANCE, TOLERANCE, agreement as _agreement


def outputs(scale_of_difference: float, dtype=np.float64):
    rng = np.random.default_rng(0)
    y = rng.normal(size=(64, 32)) * 8
    x = y * (1 + scale_of_difference * rng.choice([-1, 1], size=y.shape))
    return [x.astype(dtype)], [y.astype(dtype)]


def test_float32_rounding_agrees_and_a_real_difference_does_not():
    assert _agreement(*outputs(1e-5), "float32")["within_tolerance"]
    result = _agreement(*outputs(5e-3), "float32")
    assert not result["within_tolerance"]
    assert result["tolerance"] == TOLERANCE["float32"] and not result["tf32"]


def test_tf32_widens_only_the_float32_tolerance():
    # TF32 keeps 10 mantissa bits: a 5e-3 relative difference is rounding there, not a wrong kernel.
    result = _agreement(*outputs(5e-3), "float32", tf32=True)
    assert result["within_tolerance"] and result["tf32"] and result["tolerance"] == TF32_TOLERANCE
    assert not _agreement(*outputs(5e-2), "float32", tf32=True)["within_tolerance"]
    half = _agreement(*outputs(1e-2), "float16", tf32=True)
    assert half["tolerance"] == TOLERANCE["float16"] and not half["tf32"]


def test_integer_outputs_must_match_exactly():
    same = [np.arange(10)]
    assert _agreement(same, [np.arange(10)], "int64")["within_tolerance"]
    assert not _agreement(same, [np.arange(10) + (np.arange(10) == 3)], "int64")["within_tolerance"]


def test_relative_difference_is_floored_near_zero():
    y = np.array([0.0, 1e-12, 100.0])
    result = _agreement([y + 1e-9], [y], "float32")
    assert result["max_rel"] < 1e-9 / (100 * 1e-3) * 1.01
