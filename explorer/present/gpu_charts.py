"""Plotly figures of the predicted GPU time (analysis.gpu_roofline): per kernel, and over a size sweep.

Every figure says in its title that it is a prediction on a named GPU profile: nothing in it was measured.
"""

from __future__ import annotations

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from .charts import COLORS, NEUTRAL_COLOR, rgba, styled

BOUND_COLORS = {"memory": "#56B4E9", "compute": "#E69F00"}  # Okabe-Ito sky blue, orange
OVERHEAD_COLOR = "#BBBBBB"


def prediction_figure(p: dict, *, height: int = 300) -> go.Figure:
    """Each variant a bar of its kernels one after another: each kernel's roofline time (coloured by what bounds
    it) and its launch and dispatch overhead (grey)."""
    fig = go.Figure()
    shown = set()
    for variant in ("unfused", "fused"):
        for k in p["kernels"][variant]:
            if not k["kernel"]:
                continue
            roof = k["us"] - k["overhead_us"]
            legend = f"{k['bound']}-bound kernel"
            fig.add_trace(go.Bar(
                y=[variant], x=[roof], orientation="h", name=legend, legendgroup=k["bound"],
                showlegend=legend not in shown, marker=dict(color=BOUND_COLORS[k["bound"]], line=dict(color="white", width=1)),
                hovertemplate=(f"{variant}: {k['name']} ({k['op']})<br>{roof:.2f} µs {k['bound']}-bound on {k['unit']}"
                               f"<br>{k['bytes'] / 2**20:.2f} MiB, {k['flops'] / 1e9:.3g} GFLOP<extra></extra>")))
            shown.add(legend)
            fig.add_trace(go.Bar(
                y=[variant], x=[k["overhead_us"]], orientation="h", name="launch + dispatch overhead",
                legendgroup="overhead", showlegend="overhead" not in shown,
                marker=dict(color=OVERHEAD_COLOR, line=dict(color="white", width=1)),
                hovertemplate=f"{variant}: {k['name']} overhead {k['overhead_us']:.1f} µs (launch measured on an H100, dispatch assumed)<extra></extra>"))
            shown.add("overhead")
    for variant in ("unfused", "fused"):
        total = p[f"{variant}_us"]
        n = p["kernel_count"][variant]
        fig.add_annotation(y=variant, x=total, text=f"{total:.1f} µs · {n} kernel{'s' if n != 1 else ''}",
                           showarrow=False, xanchor="left", xshift=6, font=dict(size=12, color=COLORS[variant]))
    fig.update_layout(barmode="stack", bargap=0.35)
    fig.update_xaxes(title_text="predicted time per call (µs)", rangemode="tozero")
    title = f"PREDICTED on {p['profile']['label'].split(': ', 1)[0]} (a roofline, not measured)"
    fig = styled(fig, title, height)
    fig.update_layout(margin=dict(r=140))
    return fig


def sweep_figure(rows: list[dict], param: str, gpu: str, *, height: int = 380) -> go.Figure:
    """Predicted fused and unfused time over the swept size, and the predicted speedup beside them."""
    fig = make_subplots(specs=[[{"secondary_y": True}]])
    x = [r["value"] for r in rows]
    for variant in ("unfused", "fused"):
        fig.add_trace(go.Scatter(x=x, y=[r[f"{variant}_us"] for r in rows], name=f"{variant} (predicted)",
                                 mode="lines+markers", line=dict(color=COLORS[variant], dash="dot"),
                                 hovertemplate=f"{param}=%{{x}}<br>{variant} %{{y:.1f}} µs predicted<extra></extra>"),
                      secondary_y=False)
    fig.add_trace(go.Scatter(x=x, y=[r["speedup"] for r in rows], name="predicted speedup", mode="lines+markers",
                             line=dict(color=NEUTRAL_COLOR), marker=dict(symbol="diamond", size=9),
                             hovertemplate=f"{param}=%{{x}}<br>speedup %{{y:.2f}}× predicted<extra></extra>"),
                  secondary_y=True)
    fig.add_hline(y=1.0, line=dict(color=rgba(NEUTRAL_COLOR, 0.7), dash="dash"), secondary_y=True)
    log = len(x) > 1 and min(x) > 0 and max(x) / min(x) >= 8
    fig.update_xaxes(title_text=param, type="log" if log else "linear")
    fig.update_yaxes(title_text="predicted time per call (µs)", rangemode="tozero", secondary_y=False)
    fig.update_yaxes(title_text="predicted speedup (×)", rangemode="tozero", secondary_y=True, showgrid=False)
    return styled(fig, f"PREDICTED over {param} on {gpu} (a roofline, not measured)", height)
