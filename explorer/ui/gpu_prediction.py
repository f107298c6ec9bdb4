"""The simulated GPU's "Fused vs unfused" and "Size sweep" tabs: predicted time, never a measurement.

A simulated GPU runs nothing, so these tabs predict instead of timing: a roofline per kernel of the graphs
Grappler made on the virtual GPU (analysis.gpu_roofline), on the chosen profile's data-sheet figures. Every
number shown here is labelled as a prediction, with the figures and sources it rests on.
"""

from __future__ import annotations

import streamlit as st

from ..analysis import gpu_measured, gpu_roofline
from ..errors import ExplorerError
from ..model.devices import Device
from ..model.evidence import PREDICTED
from ..present import gpu_charts
from ..present.command import command_line
from . import frame, state
from .bench import parse_values, simulated_note, size_inputs
from .sidebar import Choice

CHART_CONFIG = {"displayModeBar": False}
MANY_KERNELS = 60  # above this, the per-kernel bar is drawn on request


def _profile_caption(p: dict) -> str:
    f = p["profile"]
    peaks = ", ".join(f"{gpu_roofline.UNITS[k]} {v:g}" for k, v in f["peak_tflops"].items())
    derived = f" Derived, not on the data sheet: {'; '.join(f['derived'])}." if f["derived"] else ""
    return (f"**{PREDICTED}.** Profile {f['label']}: memory {f['memory_gbs']:g} GB/s; peak TFLOP/s {peaks}; float32 "
            f"matmuls and convolutions {'in TF32 on tensor cores' if p['tf32'] else 'on the CUDA cores'}, as TensorFlow "
            f"runs them. Figures from: {'; '.join(f['sources'])}.{derived} Peaks taken at the {f['efficiency_source']}. "
            f"Launch {f['launch_us']:g} µs per kernel, at least {f['framework_us']:g} µs per op: {f['overhead_source']}. "
            f"Model: {p['model']}. It leaves out caches between kernels, autotuning, what an epilogue costs a fused "
            "kernel and the cost of a tanh.")


def panel(engine, choice: Choice, result: dict) -> None:
    """Predicted fused against unfused time of the simulated graphs on the chosen GPU profile."""
    simulated_note()
    p = gpu_roofline.predict(result)
    if p is None:
        st.warning("No prediction: this result carries no per-op tensors (a result recorded by an older explorer). "
                   "Run the model again to predict its GPU time.")
        return
    st.markdown(f"**Predicted GPU time, fused against unfused** — {PREDICTED}: the graphs Grappler made on the "
                f"simulated {p['profile']['label'].split(': ', 1)[0]}, each kernel timed by a roofline")
    # Words, not st.metric: a metric tile reads as a measurement, and nothing here was measured.
    speedup = f"{p['speedup']:.2f}×" if p["speedup"] else "none (see the note below)"
    st.markdown(f"Predicted: **fused {p['fused_us']:.1f} µs** ({_kernels(p['kernel_count']['fused'])}) · **unfused "
                f"{p['unfused_us']:.1f} µs** ({_kernels(p['kernel_count']['unfused'])}) · **predicted speedup "
                f"{speedup}**" + (f" · kernels removed: {', '.join(f'`{k}`' for k in p['removed_kernels'][:8])}"
                                  if p["removed_kernels"] else ""))
    measured = gpu_measured.find(result, p["profile"]["profile"])
    if measured:
        st.success(gpu_measured.words(measured))
    for note in p["notes"]:
        st.caption(f"Predicted: {note}.")
    many = max(p["kernel_count"].values()) > MANY_KERNELS
    if not many or st.toggle("Draw every kernel", key="gpu.predict.draw", persist_state=state.KEEP_HIDDEN):
        st.plotly_chart(gpu_charts.prediction_figure(p), width="stretch", key="gpu.predict.figure", config=CHART_CONFIG)
    st.caption(_profile_caption(p))
    with st.expander("Per-kernel account (predicted)"):
        for variant in ("fused", "unfused"):
            st.markdown(f"**{variant}** — {p['kernel_count'][variant]} kernels, {p[f'{variant}_us']:.1f} µs predicted")
            st.dataframe([_row(k) for k in p["kernels"][variant]], hide_index=True, width="stretch")
    st.code(command_line(choice.spec, choice.config, "bench") + " --json", language="bash")


def _kernels(n: int) -> str:
    return f"{n} GPU kernel{'s' if n != 1 else ''}"


def _row(k: dict) -> dict:
    return {"kernel": k["name"], "op": k["op"] + (f" [{', '.join(k['fused_ops'])}]" if k["fused_ops"] else ""),
            "dtype": k["dtype"], "MiB read + written": round(k["bytes"] / 2**20, 3),
            "GFLOP": round(k["flops"] / 1e9, 4), "unit": k["unit"],
            "predicted µs": round(k["us"], 2) if k["kernel"] else None,
            "bound": k["bound"] if k["kernel"] else k["why"]}


def _around(current: int, low: int, high: int) -> list[int]:
    """Sizes from 1/16 to 16 times the current one, within the parameter's bounds."""
    return sorted({min(max(current * m // 16, low), high) for m in (1, 4, 16, 64, 256)})


def sweep_panel(engine, choice: Choice) -> None:
    """Predicted speedup over one size on the simulated GPU: where does fusion stop paying?"""
    st.caption(f"{PREDICTED}. Each size is simulated (Grappler on the virtual GPU) and its kernels timed by the "
               "roofline: small sizes are dominated by per-kernel overhead, which fusion removes; large compute-bound "
               "ones by the matmul or convolution itself, which fusion does not shorten.")
    sizes = choice.model.sizes()
    if not sizes:
        st.info(f"A sweep varies one size parameter of a preset or op chain; {choice.model.label()} has its sizes "
                "in its own definition.", icon=":material/info:")
        return
    c1, c2, c3 = st.columns([1, 2, 1.2], vertical_alignment="bottom")
    param, text = size_inputs(choice, sizes, _around, (c1, c2), "Values (comma-separated)")
    clicked = c3.button("Predict over sizes", type="primary", key="gpu.sweep.run", width="stretch")
    try:
        values = parse_values(text)
    except ValueError as exc:
        st.error(f"sweep values: {exc}")
        return
    key = engine.result_key("inspect", choice.model, choice.config, {"gpu_sweep": param, "values": values})
    if clicked:
        _predict_sweep(engine, choice, param, values, key)
    rows = state.recall(state.SWEEP_RESULTS, key)
    if rows is None:
        st.info(f"Not predicted yet: {len(values)} sizes, each simulated on the virtual GPU (a second or two each).")
        return
    gpu = Device.of(choice.config.device).profile
    st.plotly_chart(gpu_charts.sweep_figure(rows, param, gpu), width="stretch", key="gpu.sweep.figure",
                    config=CHART_CONFIG)
    stop = gpu_roofline.stops_paying(rows)
    st.caption(f"Predicted: from {param} = {stop} on, fusion gains less than {gpu_roofline.PAYS - 1:.0%} on {gpu}."
               if stop is not None else
               f"Predicted: fusion still gains {gpu_roofline.PAYS - 1:.0%} or more at every swept size on {gpu}.")
    st.dataframe([{param: r["value"], "fused µs (predicted)": round(r["fused_us"], 1),
                   "unfused µs (predicted)": round(r["unfused_us"], 1), "speedup (predicted)": round(r["speedup"], 3),
                   "kernels fused / unfused": f"{r['kernels_fused']} / {r['kernels_unfused']}",
                   "heaviest fused kernel": r["heaviest"]} for r in rows], hide_index=True, width="stretch")


def _predict_sweep(engine, choice: Choice, param: str, values: list[int], key: str) -> None:
    rows = []
    with st.status(f"Simulating {param} over {len(values)} values", expanded=False) as status:
        try:
            for value in values:
                status.update(label=f"Simulating {param} = {value}")
                result = engine.inspect(choice.model.with_params(**{param: value}), choice.config)
                row = gpu_roofline.sweep_row(value, gpu_roofline.predict(result))
                if row is not None:
                    rows.append(row)
        except ExplorerError as exc:
            status.update(label="The sweep failed", state="error")
            frame.show_error(exc, "The sweep failed")
            return
        status.update(label=f"Predicted {len(rows)} sizes", state="complete")
    state.remember(state.SWEEP_RESULTS, key, rows)
