"""Why fusion pays: the benchmark's memory traffic, its estimate beside the measurement, the machine's curve."""

from __future__ import annotations

import streamlit as st

from ..analysis import traffic
from ..errors import ExplorerError
from ..present import traffic_charts

CHART_CONFIG = {"displayModeBar": False}
# For a class: the idea in plain words first, the technical name last (the model's terms in an expander).
PLAIN = ("Grey: the time each variant took. Blue: the time moving its data and doing its arithmetic would take on "
         "this machine, each op at the speed of the memory its data fits in; outlined: all of it from main memory. "
         "Fusing saves the trips the middle ops made through memory, so it pays where those trips are most of the "
         "time. Where grey stands above blue, something else costs time too (each op's own overhead, the cost of "
         "tanh and friends).")
ROOFLINE = ("Dashed lines: how long each variant would take if moving its data through memory and doing its "
            "arithmetic were all it had to do on this machine. When a model mostly moves data (little arithmetic per "
            "byte), fusing saves whole trips through memory, so it pays. When it mostly computes (a large matrix "
            "multiply), the trips saved are a small part of the time, so fusing changes little: a speedup near 1×. "
            "(This is a roofline estimate, op by op, at the bandwidth measured for each op's working set.)")


def attach(engine, result: dict, on_progress=None) -> dict:
    """The result with its traffic report; the first benchmark on a machine measures the machine (a few
    seconds, once)."""
    if "traffic" in result:
        return result
    try:
        return engine.traffic(result, on_progress=on_progress)
    except ExplorerError as exc:  # the benchmark stands without it
        return dict(result, traffic_error=str(exc))


def panel(engine, result: dict) -> None:
    """The traffic section under a benchmark's numbers."""
    report = result.get("traffic")
    if report is None:
        if result.get("traffic_error"):
            st.warning(f"The memory-traffic estimate is missing: {result['traffic_error']}")
        return
    with st.container(border=True, key="traffic.panel"):
        st.markdown("**Why fusion pays: memory traffic** — what each variant's executed ops read and write "
                    "(from their shapes and dtypes) and what that needs on this machine")
        f, u = report["variants"]["fused"], report["variants"]["unfused"]
        if report.get("unknown_tensors"):  # a sum of the known part would be a figure of another model
            said = traffic.not_known(report["unknown_tensors"], report.get("unreadable", False))
            st.info(f"Memory traffic and FLOPs: {said}.", icon=":material/help:")
            return
        c1, c2, c3, c4 = st.columns([1, 1, 1.4, 1])  # room for "Intermediates no longer written"
        c1.metric("Fused traffic", traffic.size_text(f["bytes"]), help="bytes read + written by its ops, per call")
        c2.metric("Unfused traffic", traffic.size_text(u["bytes"]))
        c3.metric("Intermediates no longer written", traffic.size_text(report["removed_bytes"]),
                  help="outputs of the unfused ops the fused graph no longer has, per call: "
                       + (", ".join(f"{r['op']} ({r['name']})" for r in report["removed"]) or "none"))
        c4.metric("FLOPs (unfused)", traffic.flops_text(u["flops"]),
                  help="MatMul 2·m·k·n, Conv2D 2 × outputs × filter height·width·input channels, elementwise "
                       "one per element (a tanh counts one)")
        if report.get("machine") is None:
            for note in report["notes"]:
                st.caption(note)
            return
        left, right = st.columns([1.15, 1])
        left.plotly_chart(traffic_charts.estimate_figure(report), width="stretch", key="traffic.estimate",
                          config=CHART_CONFIG)
        right.plotly_chart(traffic_charts.bandwidth_figure(report["machine"], report), width="stretch",
                           key="traffic.bandwidth", config=CHART_CONFIG)
        st.caption(PLAIN)
        with st.expander("How the estimate is made, and what it says here"):
            st.caption(_caption(report))
        if st.button("Measure this machine again", key="traffic.remeasure", icon=":material/speed:",
                     help="The profile is measured once per machine and kept; measure again on a quiet machine "
                          "(a few seconds, in the benchmark queue)"):
            if _remeasure(engine, result):
                st.rerun()
        with st.expander("Per-op account"):
            st.dataframe(_op_rows(report), hide_index=True, width="stretch")


def _remeasure(engine, result: dict) -> bool:
    """A new machine profile, and this result's report redone with it (in place: the session keeps it)."""
    try:
        with st.spinner("Measuring this machine's bandwidth and matmul rate"):
            engine.machine(result.get("config"), fingerprint=result.get("fingerprint"), use_cache=False)
            result["traffic"] = engine.traffic({k: v for k, v in result.items() if k != "traffic"})["traffic"]
    except ExplorerError as exc:
        st.warning(f"The machine could not be measured: {exc}")
        return False
    return True


def _caption(report: dict) -> str:
    f, u = report["variants"]["fused"], report["variants"]["unfused"]
    m = report["machine"]
    parts = [f"Model: {report['model']}.",
             f"Fused: {f['relation']['words']}. Unfused: {u['relation']['words']}."]
    saving = report["saving"]
    ratio = saving.get("dram_over_measured")
    if ratio:
        why = ("between ops the intermediates partly stay in cache, so DRAM's bandwidth overstates their cost"
               if ratio > 1 else "the ops fusion removes cost more than their bytes (dispatch, arithmetic), "
               "which the model leaves out")
        parts.append(f"Counting every byte at DRAM bandwidth ({m['dram_gbs']:.1f} GB/s) puts the saving at "
                     f"{saving['est_dram_ms']:.3f} ms, {ratio:.1f}× the measured {saving['measured_ms']:.3f} ms: {why}.")
    parts.append(f"Machine {m['key']}: {m['described']}.")
    parts += report["notes"]
    return " ".join(parts)


def _op_rows(report: dict) -> list[dict]:
    rows = []
    for name in ("fused", "unfused"):
        for o in report["variants"][name]["ops"]:
            rows.append({"variant": name, "op": o["op"] + (f" [{'+'.join(o['fused_ops'])}]" if o["fused_ops"] else ""),
                         "node": o["name"], "reads KiB": round(o["reads"] / 1024, 1),
                         "writes KiB": round(o["writes"] / 1024, 1), "MFLOP": round(o["flops"] / 1e6, 3),
                         "GB/s at its working set": o.get("bandwidth_gbs"), "bound": o.get("bound"),
                         "estimate ms": round(o["est_ms"], 4) if "est_ms" in o else None})
    return rows


# ---- the size sweep ------------------------------------------------------------------------------

def sweep_rows(engine, sweep: dict, on_progress=None) -> list[dict]:
    """The sweep's points with their traffic estimates (rows of ``analysis.traffic.sweep_rows``)."""
    try:
        points = [dict(p, result=engine.traffic(p["result"], on_progress=on_progress)) for p in sweep["points"]]
    except ExplorerError:
        return []
    return traffic.sweep_rows(points)


def sweep_section(rows: list[dict], param: str) -> None:
    if not rows:
        return
    st.plotly_chart(traffic_charts.sweep_estimate_figure(rows, param), width="stretch", key="traffic.sweep",
                    config=CHART_CONFIG)
    above = [r["value"] for r in rows if "above" in (r["fused_relation"], r["unfused_relation"])]
    st.caption(ROOFLINE
               + (f" At {param} = {', '.join(map(str, above))} an estimate lies above the measured time: there it is "
                  "not a bound (the intermediates stayed in cache)." if above else ""))
