"""Charts a class can read: one stray call does not set the latency axis (it is named at the axis's top instead),
and every line, bar edge and label colour reads on the page's light and dark backgrounds alike (Streamlit draws
the figures on its theme's background; a near-black label vanished on the dark one)."""

from __future__ import annotations

import json
import re

import numpy as np
import pytest

from explorer.analysis import stats, traffic
from explorer.present import charts, traffic_charts, xla_charts  # noqa: F401 - every module's colours in one place
from tests.unit.test_traffic_model import PROFILE, result

LIGHT, DARK = "#ffffff", "#0e1117"  # Streamlit's two page backgrounds
MIN_CONTRAST = 2.0


def _samples(median_ns: float, n: int, seed: int) -> list[int]:
    return [int(v) for v in median_ns * np.random.default_rng(seed).lognormal(0.0, 0.1, n)]


@pytest.fixture
def with_a_stray_call():
    fused, unfused = _samples(1e6, 60, 1), _samples(2e6, 60, 2)
    fused[17] = int(500e6)  # one 500 ms pause (a page fault storm, another process) among 1 ms calls
    return {"samples_ns": {"fused": fused, "unfused": unfused}, "reps_done": 60, "reps_requested": 60}


@pytest.mark.parametrize("chart", [lambda r: charts.latency_distribution(r, kind="violin"),
                                   lambda r: charts.latency_distribution(r, kind="box"), charts.latency_trace])
def test_one_500_ms_call_does_not_squash_the_latency_chart_and_is_marked(with_a_stray_call, chart):
    fig = chart(with_a_stray_call)
    top = fig.layout.yaxis.range[1]
    assert 2.0 < top < 10.0  # the 1-2 ms calls fill the plot
    notes = [a.text for a in fig.layout.annotations if "above" in (a.text or "")]
    assert notes == ["▲ 1 call above, up to 500 ms"]
    assert [t.name for t in fig.data][:2] == ["fused", "unfused"]  # every call is still in the data


def test_without_a_stray_call_the_axis_is_plotlys_own():
    raw = {"samples_ns": {"fused": _samples(1e6, 60, 3), "unfused": _samples(2e6, 60, 4)}}
    for fig in (charts.latency_distribution(raw), charts.latency_trace(raw)):
        assert fig.layout.yaxis.range is None
        assert not [a for a in fig.layout.annotations if "above" in (a.text or "")]


def _luminance(colour: str) -> float:
    values = [float(v) for v in re.findall(r"[\d.]+", colour)[:3]] if colour.startswith("rgb") else \
        [int(colour[i:i + 2], 16) for i in (1, 3, 5)]
    linear = [(c / 255) / 12.92 if c / 255 <= 0.03928 else ((c / 255 + 0.055) / 1.055) ** 2.4 for c in values]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def _contrast(a: str, b: str) -> float:
    la, lb = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (la + 0.05) / (lb + 0.05)


def _colours(node, key=""):
    """Every colour a figure's traces and annotations name (not its template, not a colour scale's fills)."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k != "colorscale":
                yield from _colours(v, k)
    elif isinstance(node, list):
        for v in node:
            yield from _colours(v, key)
    elif key in ("color", "fgcolor") and isinstance(node, str) and re.match(r"#[0-9a-fA-F]{6}$|rgb\(", node):
        yield node


def _figures():
    raw = {"samples_ns": {"fused": _samples(1e6, 40, 5), "unfused": _samples(2e6, 40, 6)}}
    summary = stats.bench_summary(raw)
    yield "distribution", charts.latency_distribution(raw)
    yield "trace", charts.latency_trace(raw)
    yield "speedup", charts.speedup_figure(stats.speedup(raw["samples_ns"]["fused"], raw["samples_ns"]["unfused"]))
    for fused_ms, unfused_ms in ((5.0, 6.0), (50.0, 60.0)):  # estimate below and above the measurement
        yield f"estimate {fused_ms}", traffic_charts.estimate_figure(traffic.report(result(fused_ms, unfused_ms), PROFILE))
    yield "summary boxes", charts.latency_distribution(summary)


@pytest.mark.parametrize("name,fig", list(_figures()))
def test_every_chart_colour_reads_on_the_light_and_the_dark_theme(name, fig):
    data = json.loads(fig.to_json())
    used = set(_colours(data.get("data"))) | set(_colours(data["layout"].get("annotations")))
    used |= set(_colours(data["layout"].get("shapes")))
    assert used
    for colour in used:
        for page in (LIGHT, DARK):
            assert _contrast(colour, page) >= MIN_CONTRAST, (name, colour, page, round(_contrast(colour, page), 2))
