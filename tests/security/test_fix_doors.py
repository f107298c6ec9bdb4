"""Issue 30: the fixes' rewrites read a node's attributes with their op's defaults. A GraphDef written without
default attributes (a MatMul with no transpose_a/transpose_b, as TensorFlow itself writes graphs) failed inside
the batch-norm fold ("Failed to bind all placeholders"): the rewrite's lookup wrote an empty attribute in."""

from __future__ import annotations

import pytest
from hostile_graphs import binary, const, dtype, graph, node, placeholder, unary

from explorer.engine.uploads import spec_for_path

pytestmark = pytest.mark.tf


def _dense_with_batchnorm_arithmetic() -> bytes:
    """x[1,4] -> MatMul (no transpose attributes) -> BiasAdd -> Mul scale -> AddV2 shift -> Relu."""
    weights = [0.1 * (i + 1) * (-1) ** i for i in range(12)]
    return graph([placeholder("x", (1, 4)), const("w", weights, dims=(4, 3)),
                  node("mm", "MatMul", "x", "w", attrs=dtype()), const("b", [0.5, -0.25, 0.125]),
                  node("bias", "BiasAdd", "mm", "b", attrs=dtype()), const("scale", [1.5, 0.5, 2.0]),
                  binary("mul", "Mul", "bias", "scale"), const("shift", [0.1, 0.2, -0.3]),
                  binary("add", "AddV2", "mul", "shift"), unary("y", "Relu", "add")])


def test_the_batchnorm_fold_reads_a_matmuls_default_transposes(engine, tmp_path):
    model = tmp_path / "dense_bn.pbtxt"
    model.write_bytes(_dense_with_batchnorm_arithmetic())
    result = engine.fix(spec_for_path(str(model)), {"env": {"TF_ENABLE_ONEDNN_OPTS": "1"}}, apply=["fold-batchnorm"],
                        measure=False, out=str(tmp_path / "fixed"))
    applied = {a["fix"]: a for a in result["applied"]}
    assert len(applied["fold-batchnorm"]["chains"]) == 1, result["applied"]
    assert result["within_tolerance"] is True and result["max_abs_diff"] < 1e-4, result
