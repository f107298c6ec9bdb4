"""The memory-traffic model against bytes and FLOPs worked out by hand, on real benchmark results of tiny
models (the session engine's warm worker), and the machine probe: it runs, its curve is positive and
falls (or holds) beyond the caches, and the engine keeps it per machine."""

from __future__ import annotations

import math

import pytest

from explorer.analysis import traffic
from explorer.engine.cache import ResultCache
from explorer.engine.machine_profile import machine_key
from explorer.model.flags import Config

pytestmark = pytest.mark.tf

CONFIG = Config.make("cpu", {"TF_ENABLE_ONEDNN_OPTS": "1"})  # GELU fuses whole only with oneDNN
# without oneDNN: with it, even the remapper-off variant runs Conv2D+BiasAdd as one _MklNativeConv2DWithBias
STOCK = Config.make("cpu", {"TF_ENABLE_ONEDNN_OPTS": "0"})
F32 = 4
KIB, MIB = 1024, 1024 ** 2
TINY_PROBE = {"sizes": [256 * KIB, 64 * MIB], "matmul_size": 128, "min_time_s": 0.004}


@pytest.fixture(scope="module")
def profile(engine):
    return engine.machine(CONFIG, request=TINY_PROBE)


def bench(engine, preset, params, config=CONFIG):
    return engine.bench({"preset": preset, "params": params}, config, reps=3, warmup=0)


def contraction(ops):
    (op,) = [o for o in ops if "MatMul" in o["op"] or "Conv" in o["op"]]
    return op


def test_matmul_bias_gelu_bytes_and_flops(engine, profile):
    m, k, n = 8, 4, 6
    result = bench(engine, "matmul_bias_gelu_approx", {"m": m, "k": k, "n": n})
    report = traffic.report(result, profile)
    fused, unfused = report["variants"]["fused"], report["variants"]["unfused"]
    a, b, bias, out = m * k * F32, k * n * F32, n * F32, m * n * F32  # 128, 96, 24, 192 bytes

    mm = contraction(unfused["ops"])
    assert (mm["reads"], mm["writes"], mm["flops"]) == (a + b, out, 2 * m * k * n)  # 224 B, 192 B, 384
    bias_add = next(o for o in unfused["ops"] if o["op"] == "BiasAdd")
    assert (bias_add["reads"], bias_add["writes"], bias_add["flops"]) == (out + bias, out, m * n)
    # every other unfused op is GELU's elementwise arithmetic on the [8,6] output
    assert all(o["writes"] == out for o in unfused["ops"])

    fmm = contraction(fused["ops"])
    assert fmm["fused_ops"] == ["BiasAdd", "GeluApproximate"], "oneDNN fuses the whole chain"
    assert (fmm["reads"], fmm["writes"]) == (a + b + bias, out)
    assert fmm["flops"] == 2 * m * k * n + m * n * (1 + 8)  # bias 1, tanh-GELU 8 per element
    assert len(fused["ops"]) == 1
    # fusion writes one [8,6] tensor where the unfused graph wrote one per op: all but the last are gone
    assert report["removed_bytes"] == out * (len(unfused["ops"]) - 1)
    assert report["saved_bytes"] == unfused["bytes"] - (a + b + bias + out)

    for v in (fused, unfused):  # an estimate beside each measured median, and words on which side it is
        assert v["est_ms"] > 0 and v["measured_ms"] > 0
        assert v["relation"]["code"] == ("below" if v["est_ms"] <= v["measured_ms"] else "above")
        if v["relation"]["code"] == "above":
            assert "not a bound" in v["relation"]["words"]
    assert any(line.startswith("estimate fused") for line in traffic.words(report))


def test_conv2d_bias_relu_bytes_and_flops(engine, profile):
    params = {"batch": 1, "height": 5, "width": 5, "in_channels": 2, "out_channels": 3, "filter_size": 3}
    result = bench(engine, "conv2d_bias_relu", params, STOCK)
    report = traffic.report(result, profile)
    fused, unfused = report["variants"]["fused"], report["variants"]["unfused"]
    x, w, bias, out = 1 * 5 * 5 * 2 * F32, 3 * 3 * 2 * 3 * F32, 3 * F32, 1 * 5 * 5 * 3 * F32  # 200, 216, 12, 300
    conv_flops = 2 * (5 * 5 * 3) * (3 * 3 * 2)  # SAME padding: 75 outputs, 18 products each -> 2700

    assert [o["op"] for o in unfused["ops"]] == ["Conv2D", "BiasAdd", "Relu"]
    assert [(o["reads"], o["writes"], o["flops"]) for o in unfused["ops"]] == [
        (x + w, out, conv_flops), (out + bias, out, 75), (out, out, 75)]
    assert unfused["bytes"] == 1928
    (fconv,) = fused["ops"]
    assert fconv["fused_ops"] == ["BiasAdd", "Relu"]
    assert (fconv["reads"], fconv["writes"], fconv["flops"]) == (x + w + bias, out, conv_flops + 2 * 75)
    assert report["removed_bytes"] == 2 * out  # Conv2D's and BiasAdd's outputs
    assert report["saved_bytes"] == 1928 - 728


def padded_stack(pad_type: str, conv: str, shape: list, pad, filters: int = 8) -> dict:
    return {"stack": {"input": {"shape": shape, "dtype": "float32"}, "layers": [
        {"type": pad_type, "padding": pad},
        {"type": conv, "filters": filters, "kernel_size": 3, "padding": "valid", "activation": "relu"}]}}


@pytest.mark.parametrize("pad_type, conv, shape, pad, out_spatial", [
    # oneDNN folds the Pad into the Conv2D (_MklNativePadWithFusedConv2D), the remapper into the Conv3D
    # (_FusedConv3D's padding_list); both shape functions ignore the padding, which made the output 6x6 (4x4x4)
    ("ZeroPadding2D", "Conv2D", [1, 8, 8, 4], [1, 2], (8, 10)),
    ("ZeroPadding3D", "Conv3D", [1, 6, 6, 6, 4], 1, (6, 6, 6))])
def test_a_convolution_that_took_its_pad_in_is_counted_at_the_padded_size(engine, profile, pad_type, conv, shape,
                                                                          pad, out_spatial):
    result = engine.bench(padded_stack(pad_type, conv, shape, pad), CONFIG, reps=3, warmup=0)
    report = traffic.report(result, profile)
    fused = report["variants"]["fused"]
    (op,) = [o for o in fused["ops"] if "Conv" in o["op"]]
    assert "Pad" not in [o["op"] for o in fused["ops"]], "the Pad was folded into the convolution"
    assert "PadWith" in op["op"] or conv == "Conv3D", op
    cin, filters, taps = shape[-1], 8, 3 ** (len(shape) - 2)
    outputs = math.prod(out_spatial) * filters
    assert op["writes"] == outputs * F32
    assert op["flops"] == 2 * outputs * taps * cin + 2 * outputs  # bias and Relu: one each per element
    x, w, bias = math.prod(shape) * F32, taps * cin * filters * F32, filters * F32
    assert x + w + bias <= op["reads"] <= x + w + bias + 2 * len(shape) * 8  # the paddings, if an input


def test_machine_probe_curve_is_positive_and_cached(engine, profile, tmp_path):
    points = sorted(profile["bandwidth"], key=lambda p: p["bytes"])
    assert len(points) == 2
    assert all(p["copy_gbs"] > 0 and p["triad_gbs"] > 0 for p in points)
    # monotone-ish: a working set in L2 moves at least about as fast as one far beyond the last-level cache
    assert points[0]["triad_gbs"] >= 0.7 * points[-1]["triad_gbs"], points
    assert profile["matmul"]["gflops"] > 0 and profile["threads"] >= 1
    assert profile["key"].startswith(machine_key(profile["fingerprint"]) + "-"), "a tiny probe has a key of its own"

    saved = engine.cache
    engine.cache = ResultCache(tmp_path)  # a real disk cache of this test's own, where the results would live
    try:
        first = engine.machine(CONFIG, request=TINY_PROBE)
        again = engine.machine(CONFIG, request=TINY_PROBE)
        assert first["cached"] is False and again["cached"] is True
        assert again["bandwidth"] == first["bandwidth"]
        assert (tmp_path / f"{first['key']}.json").exists()
        assert first["key"].startswith("machine-")
    finally:
        engine.cache = saved
