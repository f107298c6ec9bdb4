"""Where the time goes, in the Fusion report: each op timed by TensorFlow's profiler, the graph coloured by it.

The per-op time is a request of its own (``engine.profile``: the model run ``CALLS`` times under the
profiler, in the benchmark queue), made when the person asks; once stored, the report shows it with
every result of that model and configuration: near-misses and fusions with their time and share, the
graph after Grappler coloured from white (no time) to red (the slowest node), the slowest labelled.
"""

from __future__ import annotations

import streamlit as st

from ..analysis import op_time
from ..errors import ExplorerError
from ..model.graph import Graph
from ..present.dot import to_dot
from . import cached, frame

CALLS = 10
TOP = 5  # the slowest nodes labelled on the graph


def timed(engine, result: dict, choice) -> dict:
    """The result with its per-op times attached, when they were measured (else as it is). ``choice``: the
    sidebar's (its spec names the model's file, which the result leaves out)."""
    if engine is None or choice is None or not _timeable(result, choice):
        return result
    try:
        profile = engine.stored("profile", choice.spec, choice.config, {"calls": CALLS}) \
            if engine.is_ready("profile", choice.spec, choice.config, {"calls": CALLS}) else None
    except ExplorerError:
        return result
    return op_time.attach(result, profile) if profile else result


def _timeable(result: dict, choice) -> bool:
    """A model with the report as a tab of its own (model.sources), run here (not simulated)."""
    return "report" in choice.source.offers and "executed" in (result.get("stages") or {})


def panel(engine, result: dict, choice, key: str) -> None:
    """The per-op time's summary and the coloured graph, or the button that measures it."""
    if engine is None or choice is None or not _timeable(result, choice):
        return
    timing = (result.get("report") or {}).get("op_time")
    if not timing:
        left, right = st.columns([3, 1], vertical_alignment="center")
        left.caption(f"Which near-miss costs the most? Time each op: the model runs {CALLS} times under "
                     "TensorFlow's profiler (it waits for any benchmark running on this server), and the "
                     "near-misses are ranked by the time their ops take.")
        if right.button("Time each op", key=f"{key}.time_ops", icon=":material/timer:", width="stretch"):
            try:
                with st.spinner("Running the model under TensorFlow's profiler…"):
                    engine.profile(choice.spec, choice.config, calls=CALLS)
            except ExplorerError as exc:
                frame.show_error(exc, "Timing the ops failed")
                return
            st.rerun()
        return
    total = timing["total_ms"]
    cols = st.columns(4)
    cols[0].metric("Op time per call", f"{total:.3f} ms", help=f"The sum of every op's median time ({timing['method']}).")
    cols[1].metric("Call (wall)", f"{timing['call_ms']:.3f} ms" if timing.get("call_ms") else "?",
                   help="The median call under the profiler: less than the sum where the executor ran ops at once.")
    def share(ms: float) -> str:
        return f"{ms:.3f} ms · {ms / total * 100 if total else 0:.0f}%"

    cols[2].metric("In near-misses", share(timing["near_misses_ms"]),
                   help="The time of the ops of every near-miss chain (their contraction included), and its share "
                        "of the op time: what fixing them can act on.")
    cols[3].metric("In fused kernels", share(timing["fused_ms"]), help="The time of the fused kernels Grappler made.")
    with st.expander("The graph after Grappler, coloured by time", icon=":material/palette:"):
        colour_graph(result, timing)


def colour_graph(result: dict, timing: dict) -> None:
    graph = Graph.from_dict(result["stages"]["optimized"])
    colours, slowest, largest = op_time.colour_scale(timing["nodes"], TOP)
    attrs = {name: {"fillcolor": f'"{colour}"', "style": '"rounded,filled"'} for name, colour in colours.items()}
    for rank, name in enumerate(slowest, 1):
        ms = timing["nodes"][name]
        attrs[name].update(xlabel=f'"#{rank} {ms:.3f} ms"', penwidth="2.5", color='"#7f0000"')
    st.markdown(legend(largest), unsafe_allow_html=True)
    dot = to_dot(graph, fold_boilerplate=True, node_attrs=attrs)
    with st.container(height=min(900, 160 + 90 * len(graph))):
        try:
            st.image(cached.svg(dot))  # its own size, scrolling: a network's graph is hundreds of nodes tall
        except ExplorerError:  # no Graphviz here: the browser draws the DOT
            st.graphviz_chart(dot, width="stretch")


def legend(largest: float) -> str:
    """A colour bar from no time to the slowest node's time."""
    stops = ", ".join(op_time.heat(i / 10) for i in range(11))
    return (f'<div style="font-size:0.8rem;display:flex;align-items:center;gap:0.5em">0 ms'
            f'<span style="display:inline-block;width:14em;height:0.9em;border-radius:3px;'
            f'background:linear-gradient(to right, {stops})"></span>{largest:.3f} ms (the slowest node); '
            f"the {TOP} slowest are numbered. Grey: no time of its own (constants, plumbing).</div>")
