"""explorer.present.charts: figure structure (traces, colours, reference lines, error bars) and the CSV."""

from __future__ import annotations

import csv
import io
import json
import math

import numpy as np
import plotly.graph_objects as go
import pytest

from explorer.analysis import stats
from explorer.present import charts


def lognormal_ns(median_ns: float, n: int, seed: int, sigma: float = 0.1) -> list[int]:
    rng = np.random.default_rng(seed)
    return [int(v) for v in median_ns * rng.lognormal(0.0, sigma, n)]


@pytest.fixture
def raw():
    return {"samples_ns": {"fused": lognormal_ns(1e6, 40, 1), "unfused": lognormal_ns(2e6, 40, 2)},
            "reps_done": 40, "reps_requested": 40}


@pytest.fixture
def rows():
    points = [(size, {"samples_ns": {"fused": lognormal_ns(size * 1e4, 30, size),
                                     "unfused": lognormal_ns(size * 1e4 * ratio, 30, size + 1)}})
              for size, ratio in [(8, 1.0), (32, 1.0), (128, 1.6), (512, 2.0)]]
    return stats.sweep_table(points)


def vertical_lines_at(fig: go.Figure, x: float) -> list:
    return [s for s in fig.layout.shapes if s.type == "line" and s.x0 == x and s.x1 == x]


def horizontal_lines_at(fig: go.Figure, y: float) -> list:
    return [s for s in fig.layout.shapes if s.type == "line" and s.y0 == y and s.y1 == y]


def assert_clean_layout(fig: go.Figure):
    assert fig.layout.title.text
    assert 200 <= fig.layout.height <= 520
    assert fig.layout.template.layout.paper_bgcolor in ("white", "#fff", "#ffffff", "rgb(255,255,255)")
    json.loads(fig.to_json())  # st.plotly_chart serialises it


def _luminance(hex_color: str) -> float:
    """WCAG relative luminance of an sRGB colour."""
    channels = [int(hex_color.lstrip("#")[i:i + 2], 16) / 255 for i in (0, 2, 4)]
    r, g, b = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _contrast(a: str, b: str) -> float:
    light, dark = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (light + 0.05) / (dark + 0.05)


def test_fused_and_unfused_stay_apart_without_hue():
    # Fused and unfused must be told apart by lightness alone (a washed-out projector, a greyscale print,
    # any colour-blindness), and the neutral grey of reference lines must be neither.
    assert _contrast(charts.FUSED_COLOR, charts.UNFUSED_COLOR) >= 2.0
    hues = {c.lower() for c in (charts.FUSED_COLOR, charts.UNFUSED_COLOR, charts.NEUTRAL_COLOR)}
    assert len(hues) == 3


@pytest.mark.parametrize("kind, trace_type", [("violin", go.Violin), ("box", go.Box)])
def test_latency_distribution_from_samples(raw, kind, trace_type):
    fig = charts.latency_distribution(raw, kind=kind)
    assert [t.name for t in fig.data] == ["fused", "unfused"]
    assert all(isinstance(t, trace_type) for t in fig.data)
    assert [t.marker.color for t in fig.data] == [charts.FUSED_COLOR, charts.UNFUSED_COLOR]
    # Values are in ms: the fused median is ~1 ms.
    assert np.median(fig.data[0].y) == pytest.approx(1.0, rel=0.1)
    assert len(fig.data[0].y) == 40
    assert "ms" in fig.layout.yaxis.title.text
    assert_clean_layout(fig)


@pytest.mark.parametrize("kind, attribute", [("violin", "points"), ("box", "boxpoints")])
def test_latency_distribution_hides_points_when_there_are_many(kind, attribute):
    def shown(n):
        samples = {"fused": lognormal_ns(1e6, n, 3), "unfused": lognormal_ns(1e6, n, 4)}
        return {getattr(t, attribute) for t in charts.latency_distribution(samples, kind=kind).data}

    assert shown(1000) == {"outliers"}
    assert shown(charts.MAX_POINTS_SHOWN + 1) == {"outliers"}
    assert shown(charts.MAX_POINTS_SHOWN) == {"all"}  # up to the limit every call is drawn


def test_latency_distribution_from_a_summary(raw):
    summary = stats.bench_summary(raw)
    fig = charts.latency_distribution(summary)
    assert [t.name for t in fig.data] == ["fused", "unfused"]
    box = fig.data[0]
    assert box.median[0] == summary["fused"]["median_ms"]
    assert box.lowerfence[0] == summary["fused"]["p10_ms"] and box.upperfence[0] == summary["fused"]["p90_ms"]


def test_latency_distribution_rejects_unknown_kind(raw):
    with pytest.raises(ValueError, match="kind"):
        charts.latency_distribution(raw, kind="pie")


def test_latency_trace(raw):
    fig = charts.latency_trace(raw)
    assert [t.name for t in fig.data] == ["fused", "unfused"]
    assert list(fig.data[0].x) == list(range(40))
    # Pair 0 ran fused first, pair 1 unfused first.
    assert list(fig.data[0].customdata[:2]) == ["first", "second"]
    assert list(fig.data[1].customdata[:2]) == ["second", "first"]
    summary = stats.bench_summary(raw)
    for name in ("fused", "unfused"):
        assert horizontal_lines_at(fig, summary[name]["median_ms"]), f"no median line for {name}"
    assert "iteration" in fig.layout.xaxis.title.text and "ms" in fig.layout.yaxis.title.text
    assert_clean_layout(fig)


@pytest.mark.parametrize("chart", [charts.latency_distribution, charts.latency_trace])
def test_charts_reject_empty_samples(chart):
    with pytest.raises(ValueError, match="fused: no samples"):
        chart({"samples_ns": {"fused": [], "unfused": [1]}})


def test_speedup_figure_with_ci(raw):
    sp = stats.speedup(raw["samples_ns"]["fused"], raw["samples_ns"]["unfused"])
    fig = charts.speedup_figure(sp)
    assert len(fig.data) == 1
    point = fig.data[0]
    assert point.x[0] == sp["estimate"]
    err = point.error_x
    assert err.array[0] == pytest.approx(sp["ci_high"] - sp["estimate"])
    assert err.arrayminus[0] == pytest.approx(sp["estimate"] - sp["ci_low"])
    assert vertical_lines_at(fig, 1.0), "the 1.0x 'no difference' line is missing"
    texts = [a.text for a in fig.layout.annotations]
    assert any(stats.format_speedup(sp) in t for t in texts)
    assert any("no difference" in t for t in texts)
    assert "fused is faster" in fig.layout.title.text
    lo, hi = fig.layout.xaxis.range
    assert lo < 1.0 and hi > sp["ci_high"]
    assert_clean_layout(fig)


def test_speedup_figure_accepts_a_bench_summary(raw):
    summary = stats.bench_summary(raw)
    assert charts.speedup_figure(summary).data[0].x[0] == summary["speedup"]["estimate"]


def test_speedup_figure_without_ci():
    fig = charts.speedup_figure(stats.speedup([1_000_000], [2_000_000]))
    assert fig.data[0].error_x.array is None
    assert vertical_lines_at(fig, 1.0)
    assert any("no CI" in a.text for a in fig.layout.annotations)
    assert "too few samples" in fig.layout.title.text


def test_sweep_figure(rows):
    fig = charts.sweep_figure(rows, "batch")
    assert [t.name for t in fig.data] == ["fused", "unfused", "95% CI", "speedup"]
    fused, unfused, band, speed = fig.data
    assert list(fused.x) == [8, 32, 128, 512]
    assert list(fused.y) == [r["fused_median_ms"] for r in rows]
    assert fused.error_y.array is not None  # p10-p90 bars
    assert band.fill == "toself" and len(band.x) == 2 * len(rows)
    assert list(speed.y) == [r["speedup"] for r in rows]
    assert fused.yaxis == "y" and speed.yaxis == "y2"
    assert [s for s in horizontal_lines_at(fig, 1.0) if s.yref == "y2"], "no 1.0x line on the speedup panel"
    # 8..512 spans well over a decade: log x, ticks at the swept values.
    assert fig.layout.xaxis.type == "log" and list(fig.layout.xaxis2.tickvals) == [8, 32, 128, 512]
    assert "batch" in fig.layout.xaxis2.title.text
    assert "ms" in fig.layout.yaxis.title.text
    pays = stats.fusion_pays_from(rows)
    assert pays == 128
    assert vertical_lines_at(fig, pays)
    note = [a for a in fig.layout.annotations if "fused faster from batch=128" in a.text]
    assert note and note[0].x == pytest.approx(math.log10(128))  # log axes place annotations in log10
    assert_clean_layout(fig)


def test_sweep_figure_narrow_range_is_linear(rows):
    narrow = [dict(r, value=v) for r, v in zip(rows, [4, 5, 6, 7])]
    fig = charts.sweep_figure(narrow, "width")
    assert fig.layout.xaxis.type == "linear"


def test_sweep_figure_skips_points_without_ci():
    points = [(1, {"samples_ns": {"fused": [1_000_000], "unfused": [2_000_000]}}),
              (2, {"samples_ns": {"fused": [1_000_000] * 5, "unfused": [2_000_000] * 5}})]
    fig = charts.sweep_figure(stats.sweep_table(points), "n")
    band = [t for t in fig.data if t.name == "95% CI"][0]
    assert list(band.x) == [2, 2]


def test_sweep_figure_needs_rows():
    with pytest.raises(ValueError, match="no sweep rows"):
        charts.sweep_figure([], "batch")


def test_samples_csv(raw):
    text = charts.samples_csv(raw)
    parsed = list(csv.DictReader(io.StringIO(text)))
    assert text.splitlines()[0] == "iteration,pair,order,variant,latency_ms"
    assert len(parsed) == 80
    assert [int(r["iteration"]) for r in parsed] == list(range(80))
    first_four = [(r["pair"], r["order"], r["variant"]) for r in parsed[:4]]
    assert first_four == [("0", "1", "fused"), ("0", "2", "unfused"), ("1", "1", "unfused"), ("1", "2", "fused")]
    assert float(parsed[0]["latency_ms"]) * 1e6 == pytest.approx(raw["samples_ns"]["fused"][0], abs=0.5)
    fused_ms = [float(r["latency_ms"]) for r in parsed if r["variant"] == "fused"]
    assert fused_ms == pytest.approx([v / 1e6 for v in raw["samples_ns"]["fused"]])


def test_samples_csv_unequal_lengths_keeps_every_sample():
    text = charts.samples_csv({"samples_ns": {"fused": [1, 2, 3], "unfused": [4, 5]}})
    assert len(text.splitlines()) == 1 + 5


def test_samples_csv_without_samples():
    with pytest.raises(ValueError, match="samples_ns"):
        charts.samples_csv({"proof": {}})
