"""The memory traffic and FLOPs of imports served with an unknown batch come from the shapes that ran.

A model whose batch is left open (``[?, 16, 16, 3]``) runs a graph whose argument shapes say so; the
benchmark feeds it a batch of ``unknown_dim``. Every tensor's size, and so the traffic, the FLOPs and the
estimate beside the measured time, must be that batch's (issue 31: "FLOPs 5e-08 G", "measured 1758.99× the
estimate", every activation counted as unknown). The figures are worked out by hand for a frozen Conv2D
GraphDef and a Dense SavedModel, without oneDNN (TF_ENABLE_ONEDNN_OPTS=0: the stock kernels, so the
remapper-off variant runs Conv2D, BiasAdd and Relu as three ops on every CPU).
"""

from __future__ import annotations

import pytest

from explorer.analysis import traffic
from explorer.engine.uploads import spec_for_path
from explorer.model.flags import Config

pytestmark = pytest.mark.tf

STOCK = Config.make("cpu", {"TF_ENABLE_ONEDNN_OPTS": "0"})
F32 = 4
BATCH = 8
TINY_PROBE = {"sizes": [256 * 1024, 64 * 1024 ** 2], "matmul_size": 128, "min_time_s": 0.004}


def bench(engine, path):
    result = engine.bench(spec_for_path(str(path), unknown_dim=BATCH), STOCK, reps=3, warmup=0)
    return traffic.report(result, engine.machine(STOCK, request=TINY_PROBE))


def test_a_graphdefs_unknown_batch_is_counted_at_the_batch_fed(engine, unknown_batch_models):
    report = bench(engine, unknown_batch_models / "conv_relu.pb")
    fused, unfused = report["variants"]["fused"], report["variants"]["unfused"]
    x, w, bias = BATCH * 16 * 16 * 3 * F32, 3 * 3 * 3 * 8 * F32, 8 * F32  # 24576, 864, 32 bytes
    elements = BATCH * 16 * 16 * 8  # the [8, 16, 16, 8] output: 16384 values, 64 KiB
    out = elements * F32
    conv_flops = 2 * elements * (3 * 3 * 3)  # SAME: each output sums 3·3·3 products

    assert fused["unknown_tensors"] == unfused["unknown_tensors"] == 0, report["notes"]
    assert [o["op"] for o in unfused["ops"]] == ["Conv2D", "BiasAdd", "Relu"]
    assert [(o["reads"], o["writes"], o["flops"]) for o in unfused["ops"]] == [
        (x + w, out, conv_flops), (out + bias, out, elements), (out, out, elements)]
    (conv,) = fused["ops"]
    assert conv["fused_ops"] == ["BiasAdd", "Relu"] and conv["output_shape"] == [BATCH, 16, 16, 8]
    assert (conv["reads"], conv["writes"], conv["flops"]) == (x + w + bias, out, conv_flops + 2 * elements)
    assert unfused["bytes"] == 353152 and fused["bytes"] == 91008
    assert report["removed_bytes"] == 2 * out and report["saved_bytes"] == 353152 - 91008
    # like with like: an estimate from the fed shapes, beside the time those shapes took
    for v in (fused, unfused):
        assert v["est_ms"] > 0 and v["relation"]["code"] in ("below", "above")
    assert not any("unknown" in n or "not known" in n for n in report["notes"]), report["notes"]
    assert traffic.words(report)[0].startswith("traffic  fused 88.9 KiB, 918 kFLOP · unfused 345 KiB, 918 kFLOP")


def test_a_savedmodels_unknown_batch_is_counted_at_the_batch_fed(engine, unknown_batch_models):
    report = bench(engine, unknown_batch_models / "dense_relu_savedmodel")
    fused, unfused = report["variants"]["fused"], report["variants"]["unfused"]
    x, w, bias, out = BATCH * 8 * F32, 8 * 4 * F32, 4 * F32, BATCH * 4 * F32  # 256, 128, 16, 128 bytes

    assert fused["unknown_tensors"] == unfused["unknown_tensors"] == 0, report["notes"]
    (matmul,) = [o for o in fused["ops"] if "MatMul" in o["op"]]
    assert matmul["fused_ops"] == ["BiasAdd", "Relu"]
    assert (matmul["reads"], matmul["writes"]) == (x + w + bias, out)
    assert matmul["flops"] == 2 * BATCH * 8 * 4 + 2 * BATCH * 4  # [8,8]x[8,4], then bias and relu per output
    assert fused["flops"] == matmul["flops"] and unfused["flops"] == 2 * BATCH * 8 * 4 + 2 * BATCH * 4
    assert report["removed_bytes"] == 2 * out  # MatMul's and BiasAdd's outputs
