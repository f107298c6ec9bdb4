"""The benchmark panel's memory-traffic section on a real benchmark (AppTest, real worker, small sizes)."""

from __future__ import annotations

import re
import json

from explorer.ui import state
from tests.page_tabs import open_tab


def test_bench_shows_traffic_estimate_beside_measurement(make_app):
    at = open_tab(make_app(**{state.BENCH_REPS: 5, state.BENCH_WARMUP: 1, state.BENCH_SECONDS: 20}), "bench")
    at.button(key="bench.run").click().run()
    assert not at.exception
    assert not at.error, [e.value for e in at.error]
    metrics = {m.label: m.value for m in at.metric}
    # m=64, k=32, n=16 float32 with oneDNN: the whole chain fuses, so the unfused graph's [64,16]
    # intermediates (4 KiB each) are what fusion no longer writes
    assert re.fullmatch(r"[\d.]+ (B|KiB|MiB)", metrics["Fused traffic"])
    assert metrics["Intermediates no longer written"] not in ("0 B", "not known")
    figures = {}
    for chart in at.get("plotly_chart"):
        spec = json.loads(chart.proto.spec)
        figures[spec["layout"]["title"]["text"].split("<br>")[0]] = spec
    estimate = figures["Measured time beside what the traffic and FLOPs need"]
    names = [t["name"] for t in estimate["data"]]
    assert names == ["measured (median)", "estimate: bandwidth at each op's working set",
                     "estimate: all traffic at DRAM bandwidth"]
    # each variant's bar pair says on which side the estimate lies, never "bound" when it is above
    notes = [a["text"] for a in estimate["layout"]["annotations"]]
    assert any("measured" in n and "the estimate" in n or "not a bound" in n for n in notes), notes
    assert not any("ABOVE" in n and "not a bound" not in n for n in notes)
    curve = next(s for title, s in figures.items() if title.startswith("Memory bandwidth of"))
    assert "machine-" in curve["layout"]["title"]["text"]  # the machine's key, with the fingerprint's CPU
    triad = next(t for t in curve["data"] if t["name"].startswith("triad"))
    assert len(triad["x"]) >= 5 and min(triad["y"]) > 0

    # measured again on request: a new profile (a later time stamp or the same second), shown at once
    before = curve["layout"]["title"]["text"]
    at.button(key="traffic.remeasure").click().run()
    assert not at.exception and not at.error
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]
    after = next(t for t in titles if t.startswith("Memory bandwidth of"))
    assert after.split("·")[0] == before.split("·")[0]  # the same machine key
    assert after.split("·")[1] > before.split("·")[1]  # measured now (the probe takes seconds)
