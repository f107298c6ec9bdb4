"""How the benchmarks (fused against unfused, the three-way XLA one, a fix against its original) decide that two
variants' outputs agree: one rule, inspect's check's (worker.agreement.bench_agreement on a graph's basis)."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from explorer.analysis.agreement import SUMS, TF32
from explorer.worker.agreement import bench_agreement

CONV = ["Conv2D", "BiasAdd", "Relu"]


def basis(ops=CONV, tf32=False, computed=("float32",), varies=None) -> dict:
    return {"ops": list(ops), "tf32": tf32, "computed": list(computed), "random": [], "varies": varies}


def outputs(scale_of_difference: float, dtype=np.float32):
    rng = np.random.default_rng(0)
    y = rng.normal(size=(64, 32)) * 8
    x = y * (1 + scale_of_difference * rng.choice([-1, 1], size=y.shape))
    return [x.astype(dtype)], [y.astype(dtype)]


def test_float32_rounding_agrees_and_a_real_difference_does_not():
    assert bench_agreement(*outputs(1e-5), basis())["within_tolerance"]
    result = bench_agreement(*outputs(5e-3), basis())
    assert result["within_tolerance"] is False and result["varies"] is None
    assert result["tolerance"] == SUMS["float32"] and not result["tf32"]


def test_tf32_widens_only_the_float32_tolerance():
    # TF32 keeps 10 mantissa bits: a 5e-3 relative difference is rounding there, not a wrong kernel.
    result = bench_agreement(*outputs(5e-3), basis(tf32=True))
    assert result["within_tolerance"] and result["tf32"] and result["tolerance"] == TF32
    assert not bench_agreement(*outputs(5e-2), basis(tf32=True))["within_tolerance"]
    half = bench_agreement(*outputs(1e-2, np.float16), basis(tf32=True, computed=("float16",)))
    assert half["tolerance"] == SUMS["float16"] and not half["tf32"]


def test_a_model_computing_in_bfloat16_is_judged_by_bfloat16s_tolerance_behind_float32_outputs():
    # The three-way XLA benchmark of a mixed-precision model said OUTSIDE tolerance 0.001 for every pair.
    assert not bench_agreement(*outputs(1e-2), basis())["within_tolerance"]
    mixed = bench_agreement(*outputs(1e-2), basis(computed=("bfloat16", "float32")))
    assert mixed["within_tolerance"] and mixed["tolerance"] == SUMS["bfloat16"]
    assert bench_agreement(*outputs(1e-2, ml_dtypes.bfloat16), basis(computed=("bfloat16",)))["within_tolerance"]


def test_integer_outputs_must_match_exactly():
    same = [np.arange(10)]
    assert bench_agreement(same, [np.arange(10)], basis())["within_tolerance"]
    assert not bench_agreement(same, [np.arange(10) + (np.arange(10) == 3)], basis())["within_tolerance"]


def test_outputs_that_vary_are_neither_within_nor_outside_the_tolerance():
    varies = "the model's outputs vary from call to call: it calls RandomUniform, and two calls ... differ"
    result = bench_agreement(*outputs(5e-2), basis(varies=varies))
    assert result["within_tolerance"] is None and result["varies"] == varies
    assert bench_agreement(*outputs(1e-6), basis(varies=varies))["within_tolerance"] is True


def test_relative_difference_is_floored_near_zero():
    y = np.array([0.0, 1e-12, 100.0], dtype=np.float32)
    result = bench_agreement([y + np.float32(1e-5)], [y], basis())
    assert result["within_tolerance"] and result["max_rel"] < 1e-5 / 57 * 1.01  # rms of [0, 1e-12, 100]: 57.7
