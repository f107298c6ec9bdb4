"""Plotly figures for the memory-traffic model: estimate beside measurement, the bandwidth curve, the sweep.

Inputs are ``analysis.traffic`` reports and sweep rows and an ``engine.machine_profile`` profile. Where an
estimate lies above the measured time the figure says so in words on the chart ("not a bound"):
the model's blind spots (intermediates kept in cache) show instead of hiding.
"""

from __future__ import annotations

import math

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..analysis import traffic
from .charts import COLORS, INK, NEUTRAL_COLOR, rgba, styled

MEASURED_COLOR = INK  # read on the light and the dark theme alike
ESTIMATE_COLOR = "#56B4E9"  # Okabe-Ito sky blue
DRAM_COLOR = "#D55E00"  # Okabe-Ito vermillion
ABOVE_COLOR = "#CC0000"


def estimate_figure(report: dict, *, height: int = 420) -> go.Figure:
    """Measured median (p10–p90) beside the two estimates, for each variant and for the saving."""
    if report.get("machine") is None:
        raise ValueError("estimate_figure: the report has no machine profile, so no estimate")
    f, u = report["variants"]["fused"], report["variants"]["unfused"]
    saving = report["saving"]
    groups = ["fused", "unfused", "saving (unfused − fused)"]
    measured = [f["measured_ms"], u["measured_ms"], saving["measured_ms"]]
    est = [f["est_ms"], u["est_ms"], saving["est_ms"]]
    dram = [f["est_dram_ms"], u["est_dram_ms"], saving["est_dram_ms"]]
    fig = go.Figure()
    fig.add_trace(go.Bar(
        x=groups, y=measured, name="measured (median)", marker=dict(color=MEASURED_COLOR),
        error_y=dict(type="data", symmetric=False, color=NEUTRAL_COLOR, thickness=1.2,
                     array=[(v["p90_ms"] or m) - m for v, m in zip((f, u), measured)] + [0],
                     arrayminus=[m - (v["p10_ms"] or m) for v, m in zip((f, u), measured)] + [0]),
        hovertemplate="%{x}<br>measured %{y:.4f} ms<extra></extra>"))
    fig.add_trace(go.Bar(
        x=groups, y=est, name="estimate: bandwidth at each op's working set", marker=dict(
            color=rgba(ESTIMATE_COLOR, 0.85), pattern=dict(shape="/", fgcolor="rgba(255,255,255,0.6)")),
        hovertemplate="%{x}<br>estimate %{y:.4f} ms<extra></extra>"))
    fig.add_trace(go.Bar(
        x=groups, y=dram, name="estimate: all traffic at DRAM bandwidth",
        marker=dict(color="rgba(0,0,0,0)", line=dict(color=DRAM_COLOR, width=2)),  # hollow on either theme
        hovertemplate="%{x}<br>all at DRAM bandwidth %{y:.4f} ms<extra></extra>"))
    highs = [f["p90_ms"], u["p90_ms"], None]  # above the error bar, where the label cannot cover it
    tops = [max(v for v in (*triple, high) if v is not None) for *triple, high in zip(measured, est, dram, highs)]
    for i, v in enumerate((f, u)):
        rel = v["relation"]
        if rel["code"] == "above":
            text, color = f"estimate {1 / rel['ratio']:.2f}× ABOVE measured:<br>not a bound here", ABOVE_COLOR
        else:
            text, color = f"measured {rel['ratio']:.2f}×<br>the estimate", MEASURED_COLOR  # two lines: no overlap
        fig.add_annotation(x=groups[i], y=tops[i], text=text, showarrow=False, yanchor="bottom", yshift=4,
                           font=dict(size=11, color=color))
    if saving["measured_ms"] is not None and saving.get("dram_over_measured"):
        fig.add_annotation(x=groups[2], y=tops[2], yanchor="bottom", yshift=4, showarrow=False,
                           font=dict(size=11, color=DRAM_COLOR if saving["dram_over_measured"] > 1 else MEASURED_COLOR),
                           text=f"DRAM estimate {saving['dram_over_measured']:.1f}× the measured gap")
    fig.update_layout(barmode="group", bargap=0.25)
    fig.update_yaxes(title_text="time per call (ms)", rangemode="tozero")
    fig.add_hline(y=0, line=dict(color=NEUTRAL_COLOR, width=1))
    fig = styled(fig, "Measured time beside what the traffic and FLOPs need", height)
    return _legend_below(fig)


def _legend_below(fig: go.Figure) -> go.Figure:
    """Legend under the plot: above it, three long entries ran into the title in a half-width column."""
    fig.update_layout(legend=dict(orientation="h", yanchor="top", y=-0.22, xanchor="left", x=0),
                      margin=dict(t=60, b=40))
    return fig


def bandwidth_figure(profile: dict, report: dict | None = None, *, height: int = 380) -> go.Figure:
    """The machine's copy and triad bandwidth over working-set sizes, its caches marked; with a report,
    each unfused op's working set sits on the curve where the estimate read it."""
    points = sorted(profile["bandwidth"], key=lambda p: p["bytes"])
    xs = [p["bytes"] for p in points]
    fig = go.Figure()
    for curve, color, dash in (("triad", ESTIMATE_COLOR, "solid"), ("copy", NEUTRAL_COLOR, "dot")):
        used = " (the estimate uses this)" if curve == traffic.BANDWIDTH_CURVE else ""
        fig.add_trace(go.Scatter(
            x=xs, y=[p[f"{curve}_gbs"] for p in points], name=curve + used, mode="lines+markers",
            line=dict(color=color, dash=dash, width=2), text=[traffic.size_text(x) for x in xs],
            hovertemplate=f"{curve}<br>working set %{{text}}<br>%{{y:.1f}} GB/s<extra></extra>"))
    if report is not None and report.get("machine"):
        for name in ("unfused", "fused"):
            ops = [o for o in report["variants"][name]["ops"] if o["bytes"] > 0]
            fig.add_trace(go.Scatter(
                x=[o["bytes"] for o in ops], y=[o["bandwidth_gbs"] for o in ops], mode="markers",
                name=f"{name} ops' working sets",  # many coincide: unfused large and hollow, fused inside
                marker=dict(color=COLORS[name], size=13 if name == "unfused" else 7,
                            symbol="circle-open" if name == "unfused" else "diamond", line=dict(width=2)),
                text=[f"{o['op']} ({o['name']}): {traffic.size_text(o['bytes'])}, {o['bound']}-bound" for o in ops],
                hovertemplate="%{text}<br>%{y:.1f} GB/s<extra></extra>"))
    for level, size in sorted((profile.get("caches") or {}).items()):
        fig.add_vline(x=size, line=dict(color=NEUTRAL_COLOR, width=1, dash="dash"))
        fig.add_annotation(x=math.log10(size), y=1, yref="paper", text=level, showarrow=False, yanchor="bottom",
                           font=dict(size=11, color=NEUTRAL_COLOR))
    fig.update_xaxes(type="log", title_text="working set (all arrays together)",
                     tickvals=xs, ticktext=[traffic.size_text(x) for x in xs])
    fig.update_yaxes(title_text="GB/s", rangemode="tozero")
    fp = profile.get("fingerprint") or {}
    title = (f"Memory bandwidth of {fp.get('cpu_model') or 'this CPU'}"
             f"<br><sup>{profile.get('key', '')} · {profile.get('measured_at', '?')}</sup>")
    fig = styled(fig, title, height + 80)
    fig = _legend_below(fig)
    # the x axis's title and tick labels take the first 70 px under the plot: the legend goes below them
    fig.update_layout(margin=dict(t=80, b=110), legend=dict(y=-0.32, yanchor="top"))
    return fig


def sweep_estimate_figure(rows: list[dict], param: str, *, height: int = 520) -> go.Figure:
    """Top: measured medians (solid) and estimates (dashed) of both variants across the swept size; a red
    ring marks each point whose estimate lies above its measurement. Bottom: measured speedup beside
    the speedup the traffic model predicts."""
    if not rows:
        raise ValueError("sweep_estimate_figure: no sweep rows with an estimate to plot")
    rows = sorted(rows, key=lambda r: r["value"])
    xs = [r["value"] for r in rows]
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.1, row_heights=[0.6, 0.4])
    for name in ("fused", "unfused"):
        color = COLORS[name]
        fig.add_trace(go.Scatter(
            x=xs, y=[r[f"{name}_ms"] for r in rows], name=f"{name} measured", mode="lines+markers",
            line=dict(color=color, width=2), legendgroup=name,
            hovertemplate=f"{name} measured<br>{param}=%{{x}}<br>%{{y:.4f}} ms<extra></extra>"), row=1, col=1)
        fig.add_trace(go.Scatter(
            x=xs, y=[r[f"est_{name}_ms"] for r in rows], name=f"{name} estimate", mode="lines+markers",
            line=dict(color=color, width=2, dash="dash"), marker=dict(symbol="circle-open", size=8),
            legendgroup=name, text=[f"{r['unfused_mib']:.3g} MiB unfused traffic, {r['intensity']:.2g} FLOP/byte"
                                    for r in rows],
            hovertemplate=f"{name} estimate<br>{param}=%{{x}}<br>%{{y:.4f}} ms<br>%{{text}}<extra></extra>"),
            row=1, col=1)
        above = [r for r in rows if r[f"{name}_relation"] == "above"]
        if above:
            fig.add_trace(go.Scatter(
                x=[r["value"] for r in above], y=[r[f"est_{name}_ms"] for r in above], mode="markers",
                name="estimate above measured: not a bound", legendgroup="above", showlegend=name == "fused" or
                not any(r["fused_relation"] == "above" for r in rows),
                marker=dict(symbol="circle-open", size=16, color=ABOVE_COLOR, line=dict(width=2)),
                hovertemplate=f"{name}: the estimate is above the measured time here, so it is not a bound"
                              "<extra></extra>"), row=1, col=1)
    fig.add_trace(go.Scatter(
        x=xs, y=[r["unfused_ms"] / r["fused_ms"] for r in rows], name="speedup measured", mode="lines+markers",
        line=dict(color=MEASURED_COLOR, width=2),
        hovertemplate=f"{param}=%{{x}}<br>measured speedup %{{y:.2f}}×<extra></extra>"), row=2, col=1)
    fig.add_trace(go.Scatter(
        x=xs, y=[r["est_unfused_ms"] / r["est_fused_ms"] for r in rows], name="speedup the traffic predicts",
        mode="lines+markers", line=dict(color=ESTIMATE_COLOR, width=2, dash="dash"),
        hovertemplate=f"{param}=%{{x}}<br>predicted speedup %{{y:.2f}}×<extra></extra>"), row=2, col=1)
    fig.add_hline(y=1.0, line=dict(color=NEUTRAL_COLOR, width=1.5, dash="dash"), row=2, col=1)
    log_x = len(xs) > 1 and min(xs) > 0 and max(xs) / min(xs) >= 8
    fig.update_xaxes(type="log" if log_x else "linear")
    if log_x:
        fig.update_xaxes(tickvals=xs, ticktext=[f"{x:g}" for x in xs], minor=dict(showgrid=False))
    fig.update_xaxes(title_text=param, row=2, col=1)
    times = [r[k] for r in rows for k in ("fused_ms", "unfused_ms", "est_fused_ms", "est_unfused_ms") if r[k] > 0]
    log_y = times and max(times) / min(times) >= 20
    fig.update_yaxes(title_text="time per call (ms)", type="log" if log_y else "linear", row=1, col=1)
    if log_y:  # 1-2-5 ticks labelled in full: plotly's own log ticks read "2, 10, 5" for 20, 10, 5
        ticks = [m * 10 ** e for e in range(-4, 5) for m in (1, 2, 5) if min(times) / 2 <= m * 10 ** e <= max(times) * 2]
        fig.update_yaxes(tickvals=ticks, ticktext=[f"{v:g}" for v in ticks], row=1, col=1)
    fig.update_yaxes(title_text="speedup (×)", row=2, col=1)
    fig = styled(fig, f"Measured against the traffic estimate across {param}", height + 60)
    fig.update_layout(legend=dict(orientation="h", yanchor="top", y=-0.14, xanchor="left", x=0),
                      margin=dict(t=60, b=40))
    return fig
