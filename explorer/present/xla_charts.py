"""Plotly figures of the three-way benchmark (unfused, Grappler-fused, XLA), in the two-way charts' style."""

from __future__ import annotations

import plotly.graph_objects as go

from ..analysis.xla_bench import COMPARISONS, VARIANTS, WORDS
from .charts import COLORS, HEIGHT, rgba, styled, to_ms

XLA_COLOR = "#009E73"  # Okabe-Ito green, beside the two-way charts' blue and orange
THREE_COLORS = {**COLORS, "xla": XLA_COLOR}


def three_way_distribution(raw: dict, *, height: int = HEIGHT) -> go.Figure:
    """Per-call latency of the three variants as box plots with every point (ms)."""
    fig = go.Figure()
    for name in VARIANTS:
        color = THREE_COLORS[name]
        fig.add_trace(go.Box(
            y=to_ms(raw["samples_ns"][name]), name=WORDS[name], boxpoints="all", jitter=0.35, pointpos=0,
            marker={"color": color, "size": 4, "opacity": 0.55}, line={"color": color},
            fillcolor=rgba(color, 0.25), showlegend=False,
            hovertemplate=f"{WORDS[name]}<br>%{{y:.4f}} ms<extra></extra>"))
    fig.update_yaxes(title_text="latency per call (ms)", rangemode="tozero")
    return styled(fig, "Latency per call: unfused, Grappler-fused, XLA (XLA's compile not included)", height)


def three_way_speedups(summary: dict, *, height: int = 300) -> go.Figure:
    """Each speedup (ratio of medians) with its bootstrap CI as an error bar; 1x dashed."""
    labels, estimates, low, high = [], [], [], []
    for a, b in COMPARISONS:
        sp = summary["speedups"][f"{a}/{b}"]
        labels.append(f"{WORDS[a]} vs {WORDS[b]}")
        estimates.append(sp["estimate"])
        low.append(sp["estimate"] - sp["ci_low"] if sp.get("ci_low") is not None else 0)
        high.append(sp["ci_high"] - sp["estimate"] if sp.get("ci_high") is not None else 0)
    fig = go.Figure(go.Bar(
        x=estimates, y=labels, orientation="h", marker_color=[THREE_COLORS[a] for a, _ in COMPARISONS],
        error_x={"type": "data", "array": high, "arrayminus": low, "symmetric": False},
        hovertemplate="%{y}: %{x:.2f}×<extra></extra>"))
    fig.add_vline(x=1.0, line={"dash": "dash", "color": "#444444"})
    fig.update_xaxes(title_text="times faster (median ratio, 95% CI)")
    fig.update_yaxes(autorange="reversed")
    return styled(fig, "Speedups", height)


def three_way_sweep(points: list[dict], param: str, *, height: int = HEIGHT) -> go.Figure:
    """Median latency of the three variants against one size (whiskers: p25-p75), log axes when wide."""
    fig = go.Figure()
    xs = [pt["value"] for pt in points]
    for name in VARIANTS:
        stats = [pt["result"]["summary"]["variants"][name] for pt in points]
        medians = [s["median_ms"] for s in stats]
        fig.add_trace(go.Scatter(
            x=xs, y=medians, name=WORDS[name], mode="lines+markers", line={"color": THREE_COLORS[name]},
            error_y={"type": "data", "symmetric": False, "array": [s["p75_ms"] - s["median_ms"] for s in stats],
                     "arrayminus": [s["median_ms"] - s["p25_ms"] for s in stats]},
            hovertemplate=f"{WORDS[name]}<br>{param}=%{{x}}<br>%{{y:.4f}} ms<extra></extra>"))
    wide = len(xs) > 1 and max(xs) / max(min(xs), 1) >= 8
    fig.update_xaxes(title_text=param, type="log" if wide else "linear")
    fig.update_yaxes(title_text="median latency per call (ms)", type="log" if wide else "linear")
    return styled(fig, f"Unfused, Grappler-fused and XLA against {param}", height)
