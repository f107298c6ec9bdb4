"""The stored coverage table is what TensorFlow does here, preset by preset, in both CPU modes."""

from __future__ import annotations

import pytest

from explorer.model import coverage
from explorer.model.catalog import EXPECT, PRESETS, fused_as_catalogued
from explorer.model.flags import Config

pytestmark = pytest.mark.tf

DATA = coverage.load()


def test_every_catalogue_row_has_a_preset_and_an_expectation():
    rows = {r for p in PRESETS.values() for r in p.rows}
    assert rows == set(range(1, coverage.TOTAL_ROWS + 1))
    assert set(EXPECT) == set(PRESETS)
    assert DATA is not None and set(DATA["table"]) == set(PRESETS)


@pytest.mark.parametrize("mode", ["cpu-onednn", "cpu-stock"])
@pytest.mark.parametrize("preset", list(PRESETS))
def test_stored_coverage_matches_a_live_run(engine, preset, mode):
    device, env = coverage.MODES[mode]
    result = engine.inspect({"preset": preset}, Config.make(device, env))
    fused = fused_as_catalogued(preset, result["stages"]["optimized"]["nodes"])
    assert DATA["table"][preset][mode].startswith("fused" if fused else "not fused")
    # the verdict shown to the user agrees with the graph for every preset
    assert result["explanation"]["agrees"], result["explanation"]
