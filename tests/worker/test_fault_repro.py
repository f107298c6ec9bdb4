"""The fault repro script a diagnosis writes, run with TensorFlow alone: on a fusion that works it must say so.
Its weights were drawn inside the traced function, so the remapper-on and -off runs (two traces) got other numbers
and a working Conv2D + BiasAdd + Relu read as "disagrees: max abs diff 19.68"."""

from __future__ import annotations

import pytest

from explorer.present.fault_repro import script
from tests.tf_script import run_tf_script

pytestmark = pytest.mark.tf

CONV_BIAS_RELU = {
    "target": "_FusedConv2D [BiasAdd, Relu]", "node": "Relu", "absorbed_ops": ["Conv2D", "BiasAdd", "Relu"], "output": "t2",
    "args": [{"var": "x0", "name": "Pad:0", "dtype": "float32", "shape": [2, 8, 8, 3]}],
    "consts": [{"var": "c0", "name": "Conv2D/filter", "dtype": "float32", "shape": [3, 3, 3, 4], "mean": 0.07,
                "std": 0.95},
               {"var": "c1", "name": "BiasAdd/bias", "dtype": "float32", "shape": [4], "value": [-2.25, 0.39, -0.58, 0.11]}],
    "ops": [{"var": "t0", "op": "Conv2D", "inputs": {"input": "x0", "filter": "c0"},
             "attrs": {"padding": "'VALID'", "strides": [1, 1, 1, 1]}},
            {"var": "t1", "op": "BiasAdd", "inputs": {"value": "t0", "bias": "c1"}, "attrs": {}},
            {"var": "t2", "op": "Relu", "inputs": {"features": "t1"}, "attrs": {}}]}


@pytest.mark.parametrize("onednn", ["0", "1"])
def test_a_fusion_that_works_is_reported_ok_by_its_repro(tmp_path, onednn):
    path = tmp_path / "fusion_repro.py"
    path.write_text(script(CONV_BIAS_RELU, {"env": {"TF_ENABLE_ONEDNN_OPTS": onednn}, "dtype": "float32"}))
    out = run_tf_script(path)
    assert out.startswith("OK: fused and unfused agree"), out
