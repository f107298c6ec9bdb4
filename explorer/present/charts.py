"""Plotly figures for the benchmark: latency distributions, traces, the speedup and size sweeps.

Every function returns a ``go.Figure`` and nothing else; the page decides where it goes. This is
the only module that imports plotly. Inputs are the worker's bench result (or its ``samples_ns``),
``stats.speedup`` / ``stats.bench_summary`` dicts and ``stats.sweep_table`` rows.
"""

from __future__ import annotations

import csv
import io
import math

import plotly.graph_objects as go
from plotly.subplots import make_subplots

from ..analysis import stats
from .agreement import cell_words as agreement_cell

# Okabe-Ito blue/orange: distinguishable with the common colour-vision deficiencies.
FUSED_COLOR = "#0072B2"
UNFUSED_COLOR = "#E69F00"
NEUTRAL_COLOR = "#7F7F7F"
COLORS = {"fused": FUSED_COLOR, "unfused": UNFUSED_COLOR}
LABELS = {"fused": "fused (remapper on)", "unfused": "unfused (remapper off)"}
# Lines and text that must read on the page's light and dark themes alike (a near-black vanished on the dark one).
INK = "#8a8fa0"
TEMPLATE = "plotly_white"
HEIGHT = 380
MAX_POINTS_SHOWN = 300  # above this, distributions show outliers only; all points are clutter


def rgba(hex_color: str, alpha: float) -> str:
    """'#1f77b4' at ``alpha`` as a CSS rgba() colour (a band or a fill under a line)."""
    r, g, b = (int(hex_color[i:i + 2], 16) for i in (1, 3, 5))
    return f"rgba({r},{g},{b},{alpha})"


def styled(fig: go.Figure, title: str, height: int) -> go.Figure:
    """The explorer's look for every figure (template, title, fonts, margins, legend on top)."""
    fig.update_layout(
        template=TEMPLATE,
        height=height,
        title=dict(text=title, x=0, xanchor="left", font=dict(size=16)),
        font=dict(size=13),
        margin=dict(l=60, r=20, t=70, b=50),
        legend=dict(orientation="h", yanchor="bottom", y=1.0, xanchor="right", x=1),
        hoverlabel=dict(font_size=12),
    )
    return fig


def to_ms(samples_ns) -> list[float]:
    return [v / 1e6 for v in samples_ns]


def _variant_samples(raw: dict) -> dict[str, list]:
    fused, unfused = stats.split_samples(raw)
    for name, values in (("fused", fused), ("unfused", unfused)):
        if not values:
            raise stats.SampleError(f"{name}: no samples (the benchmark recorded 0 timings)")
    return {"fused": fused, "unfused": unfused}


def _is_summary(data: dict) -> bool:
    return isinstance(data.get("fused"), dict) and "median_ms" in data["fused"]


def latency_distribution(data: dict, *, kind: str = "violin", height: int = HEIGHT) -> go.Figure:
    """Per-call latency of both variants side by side (ms).

    ``data`` is a bench result / ``samples_ns`` dict (violin or box with the points), or a
    ``stats.bench_summary`` dict, drawn as boxes from its quartiles with p10-p90 whiskers.
    """
    if kind not in ("violin", "box"):
        raise ValueError(f"latency_distribution: kind must be 'violin' or 'box', got {kind!r}")
    fig = go.Figure()
    if _is_summary(data):
        for name in stats.VARIANTS:
            s = data[name]
            fig.add_trace(go.Box(
                name=name, x=[name], q1=[s["p25_ms"]], median=[s["median_ms"]], q3=[s["p75_ms"]],
                lowerfence=[s["p10_ms"]], upperfence=[s["p90_ms"]], mean=[s["mean_ms"]],
                marker_color=COLORS[name], fillcolor=rgba(COLORS[name], 0.25), showlegend=False,
            ))
        title = "Latency per call (box: quartiles, whiskers: p10–p90)"
    else:
        samples = _variant_samples(data)
        for name in stats.VARIANTS:
            ms = to_ms(samples[name])
            points = "all" if len(ms) <= MAX_POINTS_SHOWN else "outliers"
            common = dict(
                y=ms, name=name, marker=dict(color=COLORS[name], size=4, opacity=0.55),
                line=dict(color=COLORS[name]), fillcolor=rgba(COLORS[name], 0.25), showlegend=False,
                hovertemplate=f"{LABELS[name]}<br>%{{y:.4f}} ms<extra></extra>",
            )
            if kind == "violin":
                # spanmode "hard": the density must not spill below the fastest call.
                fig.add_trace(go.Violin(points=points, jitter=0.35, pointpos=0, box_visible=True,
                                        spanmode="hard", **common))
            else:
                fig.add_trace(go.Box(boxpoints=points, jitter=0.35, pointpos=0, **common))
        title = "Latency per call: fused (remapper on) vs unfused (remapper off)"
    fig.update_yaxes(title_text="latency per call (ms)", rangemode="tozero")
    fig.update_xaxes(title_text=None)
    if not _is_summary(data):
        top, above = _outlier_cut({name: to_ms(v) for name, v in samples.items()})
        if top is not None:
            _mark_outliers(fig, top, above, lambda name: name)
    return styled(fig, title, height)


FENCE = 3.0  # interquartile ranges above the upper quartile: beyond it a call is an outlier the axis leaves out


def _outlier_cut(series: dict[str, list[float]]) -> tuple[float | None, dict[str, list[float]]]:
    """The top of a latency axis that one stray call (a 500 ms pause among 1 ms calls) must not set: each
    variant's upper quartile plus FENCE interquartile ranges, the larger of the two; with the calls above it
    per variant. (None, {}) when nothing lies above."""
    fences = []
    for values in series.values():
        ordered = sorted(values)
        q1, q3 = ordered[len(ordered) // 4], ordered[(3 * len(ordered)) // 4]
        fences.append(q3 + FENCE * max(q3 - q1, 0.02 * q3))
    top = max(fences)
    above = {name: [v for v in values if v > top] for name, values in series.items()}
    if not any(above.values()):
        return None, {}
    return top * 1.08, {name: vs for name, vs in above.items() if vs}


def _mark_outliers(fig: go.Figure, top: float, above: dict[str, list[float]], x_of) -> None:
    """The cut axis, and each variant's calls above it named at its top edge (they are left out, not hidden)."""
    fig.update_yaxes(range=[0, top], autorange=False)
    for name, values in above.items():
        fig.add_annotation(x=x_of(name), y=top, yanchor="top", showarrow=False, font=dict(size=11, color=COLORS[name]),
                           text=f"▲ {len(values)} call{'s' if len(values) > 1 else ''} above, up to {max(values):.3g} ms")


def latency_trace(raw: dict, *, height: int = HEIGHT) -> go.Figure:
    """Latency of each timed call in order, both variants, with each variant's median dashed."""
    samples = _variant_samples(raw)
    fig = go.Figure()
    for name in stats.VARIANTS:
        ms = to_ms(samples[name])
        # Pair i ran fused first on even i, unfused first on odd i (see worker.bench).
        first = ["first" if (i % 2 == 0) == (name == "fused") else "second" for i in range(len(ms))]
        fig.add_trace(go.Scatter(
            x=list(range(len(ms))), y=ms, name=name, mode="lines+markers",
            line=dict(color=COLORS[name], width=1), marker=dict(color=COLORS[name], size=4),
            customdata=first,
            hovertemplate=f"{LABELS[name]}<br>pair %{{x}} (ran %{{customdata}})<br>%{{y:.4f}} ms<extra></extra>",
        ))
        median = stats.summarize(samples[name])["median_ms"]
        fig.add_hline(y=median, line=dict(color=COLORS[name], width=1, dash="dash"), opacity=0.8)
    fig.update_xaxes(title_text="iteration (pair index)")
    fig.update_yaxes(title_text="latency per call (ms)", rangemode="tozero")
    top, above = _outlier_cut({name: to_ms(v) for name, v in samples.items()})
    if top is not None:
        n = max(len(v) for v in samples.values())
        _mark_outliers(fig, top, above, lambda name: (n - 1) * (0.25 if name == "fused" else 0.75))
    return styled(fig, "Latency over the run (dashed: median)", height)


def speedup_figure(sp: dict, *, height: int = 260) -> go.Figure:
    """The speedup with its CI as an error bar, against a dashed 'no difference' line at 1.0×.

    Takes a ``stats.speedup`` dict (or a ``bench_summary``, whose ``speedup`` is used).
    """
    if "speedup" in sp and isinstance(sp["speedup"], dict):
        sp = sp["speedup"]
    est, lo, hi = sp["estimate"], sp.get("ci_low"), sp.get("ci_high")
    code = sp.get("verdict_code", "unknown")
    color = {"faster": FUSED_COLOR, "slower": UNFUSED_COLOR}.get(code, NEUTRAL_COLOR)
    has_ci = lo is not None and hi is not None
    label = stats.format_speedup(sp)
    trace = go.Scatter(
        x=[est], y=[0], mode="markers", name="speedup",
        marker=dict(color=color, size=14, symbol="diamond"), showlegend=False,
        hovertemplate=f"{label}<extra></extra>",
    )
    if has_ci:
        trace.error_x = dict(type="data", symmetric=False, array=[hi - est], arrayminus=[est - lo],
                             color=color, thickness=2.5, width=10)
    fig = go.Figure(trace)
    fig.add_vline(x=1.0, line=dict(color=NEUTRAL_COLOR, width=1.5, dash="dash"))
    fig.add_annotation(x=1.0, xref="x", y=0.02, yref="paper", xanchor="left", yanchor="bottom",
                       text="1.0×: no difference", showarrow=False, font=dict(size=11, color=NEUTRAL_COLOR),
                       xshift=4)
    fig.add_annotation(x=est, y=0, text=f"<b>{label}</b>", showarrow=False, yshift=26,
                       font=dict(size=14, color=color))
    values = [1.0, est] + ([lo, hi] if has_ci else [])
    left, right = min(values), max(values)
    pad = max(0.25 * (right - left), 0.05 * right, 0.02)  # room for the centred label
    fig.update_xaxes(range=[max(0.0, left - pad), right + pad], zeroline=False,
                     title_text="speedup: median unfused ÷ median fused (×)")
    fig.update_yaxes(showticklabels=False, showgrid=False, zeroline=False, range=[-0.6, 0.9])
    verdict = sp.get("verdict", stats.VERDICTS[code])
    fig = styled(fig, f"Speedup of the fused graph: {verdict}", height)
    fig.update_layout(margin=dict(l=20, r=20, t=60, b=70))
    return fig


def _log_worthy(values) -> bool:
    positive = [v for v in values if v is not None and v > 0]
    return len(positive) == len(values) and len(values) > 1 and max(positive) / min(positive) >= 10


def sweep_figure(rows: list[dict], param_name: str, *, height: int = 480) -> go.Figure:
    """Top: median latency of both variants vs the swept parameter (bars: p10-p90).
    Bottom: speedup with its CI band and the 1.0× line; a dotted line marks where fusion pays."""
    if not rows:
        raise ValueError("sweep_figure: no sweep rows to plot")
    rows = sorted(rows, key=lambda r: r["value"])
    xs = [r["value"] for r in rows]
    fig = make_subplots(rows=2, cols=1, shared_xaxes=True, vertical_spacing=0.08, row_heights=[0.55, 0.45])
    for name in stats.VARIANTS:
        med = [r[f"{name}_median_ms"] for r in rows]
        fig.add_trace(go.Scatter(
            x=xs, y=med, name=name, mode="lines+markers", legendgroup=name,
            line=dict(color=COLORS[name], width=2), marker=dict(color=COLORS[name], size=7),
            error_y=dict(type="data", symmetric=False, thickness=1, width=3, color=rgba(COLORS[name], 0.6),
                         array=[r[f"{name}_p90_ms"] - m for r, m in zip(rows, med)],
                         arrayminus=[m - r[f"{name}_p10_ms"] for r, m in zip(rows, med)]),
            hovertemplate=f"{LABELS[name]}<br>{param_name}=%{{x}}<br>median %{{y:.4f}} ms<extra></extra>",
        ), row=1, col=1)
    ci_rows = [r for r in rows if r["ci_low"] is not None and r["ci_high"] is not None]
    if ci_rows:
        band_x = [r["value"] for r in ci_rows]
        fig.add_trace(go.Scatter(
            x=band_x + band_x[::-1], y=[r["ci_high"] for r in ci_rows] + [r["ci_low"] for r in ci_rows][::-1],
            mode="lines", fill="toself", fillcolor=rgba(FUSED_COLOR, 0.15), line=dict(width=0),
            name=f"{_confidence_label(rows)} CI", hoverinfo="skip",
        ), row=2, col=1)
    fig.add_trace(go.Scatter(
        x=xs, y=[r["speedup"] for r in rows], name="speedup", mode="lines+markers",
        line=dict(color=INK, width=2), marker=dict(size=7),
        text=[_sweep_hover(r, param_name) for r in rows], hovertemplate="%{text}<extra></extra>",
    ), row=2, col=1)
    fig.add_hline(y=1.0, line=dict(color=NEUTRAL_COLOR, width=1.5, dash="dash"), row=2, col=1)

    log_x = _log_worthy(xs)
    lat = [r[f"{v}_median_ms"] for r in rows for v in stats.VARIANTS]
    fig.update_xaxes(type="log" if log_x else "linear")
    if log_x and len(xs) <= 12:
        # Label the swept values themselves; plotly's log ticks (2, 5, ...) are clutter here.
        fig.update_xaxes(tickvals=xs, ticktext=[f"{x:g}" for x in xs], minor=dict(showgrid=False))
    fig.update_xaxes(title_text=param_name, row=2, col=1)
    log_y = _log_worthy(lat) and max(lat) / min(lat) >= 20
    fig.update_yaxes(title_text="median latency (ms)", type="log" if log_y else "linear", row=1, col=1)
    if log_y:
        fig.update_yaxes(dtick=1, row=1, col=1)  # decades only
    fig.update_yaxes(title_text="speedup (×)", row=2, col=1)

    pays = stats.fusion_pays_from(rows)
    if pays is not None:
        fig.add_vline(x=pays, line=dict(color=FUSED_COLOR, width=1, dash="dot"), row="all", col=1)
        text = "fused faster at every size" if pays == xs[0] else f"fused faster from {param_name}={pays}"
        # Annotations on a log axis take log10 coordinates (shapes do not).
        fig.add_annotation(x=math.log10(pays) if log_x else pays, xref="x2", y=1.0, yref="y2 domain",
                           xanchor="left", yanchor="top", text=text, showarrow=False,
                           font=dict(size=11, color=FUSED_COLOR), xshift=4)
    return styled(fig, f"Fused vs unfused across {param_name}", height)


def row_speedup(row: dict) -> dict:
    """A ``stats.sweep_table`` row's speedup in the shape ``stats.format_speedup`` takes."""
    return {"estimate": row["speedup"], "ci_low": row["ci_low"], "ci_high": row["ci_high"],
            "confidence": row.get("confidence", 0.95)}


def _sweep_hover(row: dict, param_name: str) -> str:
    return f"{param_name}={row['value']}<br>speedup {stats.format_speedup(row_speedup(row))}"


def _confidence_label(rows) -> str:
    conf = rows[0].get("confidence", 0.95) if rows else 0.95
    return f"{conf * 100:g}%"


def samples_csv(raw: dict) -> str:
    """All timed calls as CSV: iteration (call order), pair, order within the pair, variant, latency_ms."""
    samples = stats.split_samples(raw)
    by_name = dict(zip(stats.VARIANTS, samples))
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["iteration", "pair", "order", "variant", "latency_ms"])
    iteration = 0
    for pair in range(max(len(s) for s in samples)):
        names = stats.VARIANTS if pair % 2 == 0 else stats.VARIANTS[::-1]
        for order, name in enumerate(names, start=1):
            if pair < len(by_name[name]):
                # ns / 1e6 with 6 decimals is exact for integer nanoseconds.
                writer.writerow([iteration, pair, order, name, f"{by_name[name][pair] / 1e6:.6f}"])
                iteration += 1
    return out.getvalue()


# ---- the what-if matrix --------------------------------------------------------------------------

VERDICT_LEVEL = {"fused": 2, "decomposed": 2, "partly fused": 1, "not fused": 0, "not decomposed": 0}


def _row_name(row: dict) -> str:
    return row.get("model") or row.get("preset") or "?"


def _wrapped(name: str, width: int = 26) -> str:
    """A long row name on a few lines, broken after its ' + ' parts (then its spaces)."""
    words, lines = name.replace(" + ", " +\u00a0").split(" "), [""]
    for word in words:
        if lines[-1] and len(lines[-1]) + 1 + len(word) > width:
            lines.append(word)
        else:
            lines[-1] = f"{lines[-1]} {word}".strip()
    return "<br>".join(line.replace("\u00a0", " ") for line in lines)


def matrix_heatmap(rows: list[dict], *, by: str = "verdict") -> go.Figure:
    """Presets down, combinations across; colour = verdict (or measured speedup); a cell's text says
    what fused. ``customdata`` holds each cell's index in ``rows``, so a click finds its run."""
    presets = list(dict.fromkeys(_row_name(r) for r in rows))
    labels = list(dict.fromkeys(r["label"] for r in rows))
    z = [[None] * len(labels) for _ in presets]
    text = [[""] * len(labels) for _ in presets]
    index = [[-1] * len(labels) for _ in presets]
    for i, row in enumerate(rows):
        y, x = presets.index(_row_name(row)), labels.index(row["label"])
        index[y][x] = i
        if row.get("status") != "ok":
            text[y][x] = row.get("status", "")
            continue
        if by == "speedup":
            z[y][x] = row.get("speedup")
            text[y][x] = f"{row['speedup']:.2f}×" if row.get("speedup") is not None else "no timing"
        else:
            z[y][x] = VERDICT_LEVEL.get(row.get("verdict"), 0)
            timed = f" · {row['speedup']:.2f}×" if row.get("speedup") is not None else ""
            # The fused op split at its bracket: a cell is a few words wide.
            op = (row.get("fused_op") or "").replace("[", "<br>[").replace("+", "+<br>") if row.get("fused_op") else ""
            broke = agreement_cell(row.get("agreement"))  # the fusion breaks the model or its numbers: first
            text[y][x] = (f"<b>{broke}</b><br>" if broke else "") + (row.get("verdict") or "") + timed + \
                (f"<br>{op}" if op else "")
    if by == "speedup":
        colors = dict(colorscale="RdBu", zmid=1.0, colorbar=dict(title="speedup ×"))
    else:
        colors = dict(colorscale=[[0, "#E69F00"], [0.5, "#F0E442"], [1, "#0072B2"]], zmin=0, zmax=2,
                      colorbar=dict(tickvals=[0, 1, 2], ticktext=["not fused", "partly", "fused"]))
    # One setting per line under each column (rotated, a combination of settings runs off the chart).
    ticks = [label.replace(", ", "<br>") for label in labels]
    fig = go.Figure(go.Heatmap(z=z, x=labels, y=presets, text=text, texttemplate="%{text}", customdata=index,
                               hovertemplate="%{y}<br>%{x}<br>%{text}<extra></extra>", xgap=2, ygap=2, **colors))
    fig.update_xaxes(tickvals=labels, ticktext=ticks, tickangle=0, automargin=True)
    # Rows by name (a preset's title), wrapped at its parts; the margin grows to fit them instead of cutting them.
    fig.update_yaxes(autorange="reversed", tickvals=presets, ticktext=[_wrapped(p) for p in presets], automargin=True)
    rows_high = 90 if by != "speedup" else 70
    return styled(fig, "Measured speedup per cell" if by == "speedup" else "What fused, per cell",
                  max(300, 120 + rows_high * len(presets)))
