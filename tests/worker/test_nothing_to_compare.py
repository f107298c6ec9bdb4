"""A benchmark compares what the configuration does: with the remapper off, nothing fused, so a "fused"
speedup would be another configuration's (issue 22, case 7). Real workers, small sizes."""

from __future__ import annotations

import pytest

from explorer.engine import matrix

pytestmark = pytest.mark.tf
SMALL = {"batch": 1, "height": 8, "width": 8, "in_channels": 4, "out_channels": 4}
SPEC = {"preset": "conv2d_bias_relu", "params": SMALL}


def test_remapper_off_is_labelled_and_grappler_off_has_nothing_to_compare(engine):
    off = engine.bench(SPEC, {"grappler": {"remapping": "off"}}, reps=5, warmup=1, max_seconds=20)
    assert engine.inspect(SPEC, {"grappler": {"remapping": "off"}})["explanation"]["verdict"] == "not fused"
    assert "same configuration with the remapper switched on" in off["comparison"]
    none = engine.bench(SPEC, {"grappler": {"disable_meta_optimizer": "on"}}, reps=5, warmup=1, max_seconds=20)
    assert none["nothing_to_compare"].startswith("nothing to compare")
    plain = engine.bench(SPEC, reps=5, warmup=1, max_seconds=20)
    assert "comparison" not in plain and "nothing_to_compare" not in plain


def test_the_matrix_shows_no_speedup_in_a_not_fused_cell(engine):
    cells = matrix.plan(["conv2d_bias_relu"], [matrix.parse_vary("remapping=on,off")], params=SMALL)
    rows = matrix.run_local(engine, cells, bench=matrix.BenchOptions(reps=5, warmup=1, max_seconds=20))
    on, off = rows
    assert on["verdict"] == "fused" and on["speedup"] > 0
    assert off["verdict"] == "not fused" and off["speedup"] is None and "nothing to compare" in off["bench_error"]
