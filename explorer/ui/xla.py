"""The XLA tab: the same model compiled by XLA, its fusions mapped to the model's TF ops, beside Grappler's.

Nothing here runs until the tab's toggle asks: an XLA compile is a worker request of its own, and
the default page must not wait for it. It is a fragment, so the toggle reruns only this panel.
"""

from __future__ import annotations

import streamlit as st

from ..analysis import xla_fusion, xla_passes
from ..analysis.xla_bench import VARIANTS, WORDS
from ..analysis.xla_fusion import STATUS_WORDS, gpu_note
from ..errors import ExplorerError
from ..model import compilers
from ..model.devices import is_simulated
from ..model.sources import source_for_data
from ..present import hlo_dot, xla_charts
from ..present.scope_dot import LARGE
from ..present.text import ops_words
from . import cached, frame, linked, sidebar, state
from .bench import parse_values

MANY_FUSIONS = 40  # above this, XLA's module is drawn on request

INTRO = ("XLA is TensorFlow's other fusion engine: `tf.function(jit_compile=True)` lowers the whole model to "
         "HLO and XLA's own passes fuse it, instead of Grappler's remapper. This tab compiles the model shown "
         "with XLA and maps each XLA fusion back to the TF ops its HLO metadata names.")


@st.cache_data(show_spinner=False, max_entries=32)
def _hlo_dot(result_key: str, _result: dict) -> str:
    return hlo_dot.to_dot(_result["module"], _result["fusions"], title="XLA: optimised HLO")


@st.fragment
def panel(engine, choice: sidebar.Choice, grappler: dict) -> None:
    presenting = state.presenting()
    if not presenting:  # a projector's screen goes to the graphs first; the intro is for reading at a desk
        st.markdown(INTRO)
    if grappler.get("xla_clusters"):
        st.markdown("**XLA auto-clustering is on** (TF_XLA_FLAGS): in the graph after Grappler these ops were "
                    "replaced by XLA clusters, which XLA compiles and runs:\n"
                    + "\n".join(f"- {line}" for line in xla_fusion.cluster_lines(grappler["xla_clusters"])))
    if is_simulated(choice.config.device):
        st.info("A simulated GPU has no XLA compiler behind it, so there is nothing to compile here. "
                + gpu_note(_model_ops(grappler)))
        return
    if not st.toggle("Compile this model with XLA", key=state.XLA_ON, persist_state=state.KEEP_HIDDEN,
                     help="Runs experimental_get_compiler_ir and one real call in the worker (well under a second "
                          "for the ready models once the worker is warm)."):
        st.caption("Off: nothing is compiled until you switch it on.")
        _gpu_note(grappler)
        return
    try:
        with st.spinner("Compiling the model with XLA…"):
            result = engine.xla(choice.model, choice.config)
    except ExplorerError as exc:
        frame.show_error(exc, "XLA")
        st.caption("Grappler's view in the other tabs does not depend on XLA and is unaffected.")
        return
    if presenting:  # the graphs within the room's first screen, what they rest on below them
        _graphs(grappler, result, heading=False)
        _summary(grappler, result)
        _fusion_table(result)
    else:
        _summary(grappler, result)
        _fusion_table(result)
        _graphs(grappler, result)
    _downloads(result)
    _passes(result)
    _three_way(engine, choice)
    if choice.model.sizes():  # a model with size parameters to sweep
        _sweep(engine, choice)
    _gpu_note(grappler)


def _some(names: list, shown: int = 8) -> str:
    """A few names, and how many more: a network's module runs hundreds of instructions."""
    head = ", ".join(names[:shown])
    return head + (f" and {len(names) - shown} more" if len(names) > shown else "")


def _summary(grappler: dict, result: dict) -> None:
    made = "; ".join(f"`{f['description']}`" for f in grappler.get("fusions") or []) or "no fusion"
    st.markdown(f"**Grappler** made: {made}.  \n**XLA** made: {result['summary']}.")
    times, ran = result["timings"], result["executed"]
    proof = (f"A profiled call ran the compiled XLA module `{', '.join(ran['modules'])}` "
             f"({_some(ran['hlo_instructions'])})." if ran["xla_executable_ran"]
             else "A profiled call showed no XLA executable running.")
    same = result.get("executed_vs_shown") or {}
    if ran["xla_executable_ran"]:
        proof += " " + xla_fusion.executed_words(same, _some)
    st.caption(f"Shown: module `{result['module']['name']}`, from {result['source']}. XLA compile "
               f"{times['compile_s'] * 1e3:.0f} ms; first call {times['first_call_s'] * 1e3:.0f} ms (trace and "
               f"compile of the module a call runs). {proof}")


def _fusion_table(result: dict) -> None:
    st.markdown("**XLA's fusions and the TF ops each computes**")
    looped = any(g.get("within") for g in result["fusions"])  # a loop's body or a branch: where each sits
    st.dataframe([{"XLA instruction": g["node"], "what": g["words"],
                   **({"in": xla_fusion.where_words(g.get("within"))} if looped else {}),
                   "TF ops": ", ".join([*g["tf_ops"], *g.get("body_ops", ())]) or "(none named)",
                   "TF op types": ", ".join(g["tf_op_types"]), "HLO instructions": g["hlo_instructions"]}
                  for g in result["fusions"]], hide_index=True, width="stretch",
                 column_config={"what": st.column_config.TextColumn(width=110),  # whole at 1280 px
                                "in": st.column_config.TextColumn(width=170)})
    rows = [{"TF op": name, "type": a["op"], "where it went": STATUS_WORDS[a["status"]],
             "XLA instructions": ", ".join(a["where"]), "note": a["note"] or ""}
            for name, a in result["accounting"].items()]
    with st.expander(f"Every traced TF op accounted for ({len(rows)})"):
        st.dataframe(rows, hide_index=True, width="stretch")


def _graphs(grappler: dict, result: dict, heading: bool = True) -> None:
    xla_dot = _hlo_dot(result["key"], result)
    optimized = (grappler.get("stages") or {}).get("optimized")
    if optimized is None or len(optimized["nodes"]) > LARGE:
        st.markdown("**XLA's optimised HLO, one box per XLA fusion**")
        if optimized is not None:  # every node of a real network beside the HLO would be unreadable
            st.caption(f"The graph after Grappler has {len(optimized['nodes'])} nodes: it is drawn in *Graphs before "
                       "→ after* (one box per layer); the table above maps each XLA fusion to its TF ops.")
        if len(result["fusions"]) > MANY_FUSIONS:  # drawn to the column's width, a network's module is a smudge
            with st.expander(f"Draw XLA's module ({len(result['fusions'])} fusions and library calls: a tall drawing; "
                             "zoom in, or take its DOT below)"):
                st.graphviz_chart(xla_dot, width="stretch")
        else:
            st.graphviz_chart(xla_dot, width="stretch")
        return
    if heading:  # the presenter view's panes carry their own titles
        st.markdown("**After Grappler (left) and XLA's optimised HLO (right), one box per XLA fusion**")
    drawn = cached.stage_pair(grappler["key"], "traced", "optimized", True, grappler)
    groups = hlo_dot.link_groups(result["fusions"], grappler.get("fusions") or [], drawn["names"]["after"], "a-")
    hint = "Hover over an XLA fusion or a Grappler node: the TF ops it computes light up on the other side."
    if not linked.show(drawn["after"], xla_dot, groups, hint=hint, titles=("After Grappler", "XLA optimised HLO")):
        left, right = st.columns(2)
        left.graphviz_chart(drawn["after"], width="stretch")
        right.graphviz_chart(xla_dot, width="stretch")


def _downloads(result: dict) -> None:
    spec = result.get("spec", {})
    source = source_for_data(spec)
    name = source.stem(spec) if source else "model"
    cols = st.columns(4)
    files = (("HLO before optimisation", result["hlo"]["hlo"], f"{name}-hlo.txt", "text/plain"),
             ("Optimised HLO", result["hlo"]["optimized_hlo"], f"{name}-optimized-hlo.txt", "text/plain"),
             ("DOT (this drawing)", _hlo_dot(result["key"], result), f"{name}-xla.dot", "text/vnd.graphviz"),
             ("DOT (XLA's own)", result["hlo_dot"], f"{name}-xla-own.dot", "text/vnd.graphviz"))
    for col, (label, text, file_name, mime) in zip(cols, files):
        col.download_button(label, data=text, file_name=file_name, mime=mime, on_click="ignore",
                            key=f"xla.download.{file_name}", width="stretch")
    with st.expander("Optimised HLO text"):
        st.code(result["hlo"]["optimized_hlo"], language="text")


def _model_ops(grappler: dict) -> set[str]:
    """The TF op types of the model as traced (what the GPU note speaks of)."""
    traced = (grappler.get("stages") or {}).get("traced") or {}
    return {n.get("op", "") for n in traced.get("nodes") or ()}


def _gpu_note(grappler: dict) -> None:
    if not (grappler.get("fingerprint") or {}).get("gpus"):
        st.info(gpu_note(_model_ops(grappler)))


def _three_way(engine, choice: sidebar.Choice) -> None:
    st.markdown("**Three-way benchmark: unfused, Grappler-fused, XLA**")
    st.caption("The model as served, as the other tabs show it (an imported model's unknown dimensions left "
               "unknown in the trace, the values fed). "
               "The same inputs, the three variants called in turn (each goes first in turn), after warm-up. Each "
               "variant is proved from what ran: the executed graph for Grappler's two, the profiled XLA module "
               "for XLA. XLA's first call (trace and compile) is reported apart and is not in the medians.")
    key = engine.result_key("bench_xla", choice.model, choice.config)
    with st.form("xla.bench.form", border=False):
        left, right = st.columns([1, 1], vertical_alignment="bottom")
        reps = left.number_input("Timed calls per variant", min_value=3, max_value=500, step=10,
                                 key=state.XLA_BENCH_REPS, persist_state=state.KEEP_HIDDEN)
        submitted = right.form_submit_button("Run the three-way benchmark", width="stretch")
    if submitted:
        with st.spinner("Timing unfused, Grappler-fused and XLA…"):
            try:
                result = engine.bench(choice.model, choice.config, reps=int(reps), warmup=3, max_seconds=60.0,
                                      compiler=compilers.BOTH)
            except ExplorerError as exc:
                frame.show_error(exc, "The three-way benchmark failed")
                return
        state.remember(state.XLA_BENCH_RESULTS, key, result)
        engine.store("bench_xla", choice.model, choice.config, result)  # a reload finds it (ui/bench.measured)
    result = state.recall(state.XLA_BENCH_RESULTS, key) or engine.stored("bench_xla", choice.model, choice.config)
    if result is None:
        st.caption("Not measured yet for this model and configuration.")
        return
    s = result["summary"]
    cols = st.columns(4)
    for col, name in zip(cols, VARIANTS):
        col.metric(f"{WORDS[name]} median", f"{s['variants'][name]['median_ms']:.3f} ms")
    cols[3].metric("XLA's first call", f"{s['xla_first_call_ms']:.0f} ms", help="trace + tf2xla + XLA compile")
    left, right = st.columns(2)
    left.plotly_chart(xla_charts.three_way_distribution(result), width="stretch", key="xla.bench.dist")
    right.plotly_chart(xla_charts.three_way_speedups(s), width="stretch", key="xla.bench.speedups")
    st.dataframe([{"outputs": pair, "max abs diff": a["max_abs"], "elements differing": a["elements_differing"],
                   "of": a["elements"], "within tolerance": a["within_tolerance"], "tolerance": a["tolerance"]}
                  for pair, a in result["agreement"].items()], hide_index=True, width="stretch")
    proof = result["proof_summary"]
    st.caption(f"Unfused ran: {ops_words(proof['unfused_executed'])}. Grappler-fused ran: "
               f"{ops_words(proof['fused_executed'])}. XLA ran module `{proof['xla_module']}`: "
               f"{' '.join(proof['xla_instructions'])}. Measured {result.get('measured_at', '')}, load average "
               f"{(result.get('isolation') or {}).get('load_before', '?')}.")
    for problem in proof["problems"]:
        st.warning(problem)


def _passes(result: dict) -> None:
    table, counts = result.get("pass_table") or [], result.get("pass_summary")
    if not counts:
        return
    with st.expander(f"XLA's pass pipeline: {counts['passes']} passes ran, {counts['changed']} changed the module"):
        st.caption("Every pass from XLA's own log (TF_CPP_VMODULE=hlo_pass_pipeline=2), with the instruction count "
                   "before and after; 'changed' from the module's hash (which ignores layouts) or from the module "
                   "XLA dumped after the pass (it dumps only after a pass that changed something).")
        st.dataframe([{"pipeline": r["pipeline"], "pass": ("▸ " if r["is_pipeline"] else "") + r["pass"],
                       "changed": bool(r["changed"]), "instructions before": r["instructions_before"],
                       "after": r["instructions_after"], "time (ms)": (r["time_us"] or 0) / 1e3}
                      for r in table], hide_index=True, width="stretch", height=320)
        dumped = [r for r in table if r["dump"]]
        if not dumped:
            return
        files = {f"{r['pass']} ({r['pipeline']}): {r['instructions_before']} → {r['instructions_after']}": r["dump"]
                 for r in dumped}
        chosen = files[st.selectbox("The module before and after a pass that changed it", list(files), key="xla.pass",
                                    persist_state=state.KEEP_HIDDEN)]
        dumps = result["passes"]["dumps"]
        after = next(d for d in dumps if d["file"] == chosen)
        before = xla_passes.module_before(dumps, chosen)
        if before is None:
            st.code(after["text"], language="text")
        else:
            st.code(xla_passes.diff(before["text"], after["text"], (before["file"], after["file"])) or
                    "(no textual change: the pass changed only what the text does not show)", language="diff")


def _sweep(engine, choice: sidebar.Choice) -> None:
    """The size sweep's sizes (chosen in its own tab) timed three ways, XLA's line beside Grappler's."""
    param, text = st.session_state.get(state.SWEEP_PARAM), st.session_state.get(state.SWEEP_VALUES) or ""
    if not param:
        return
    try:
        values = parse_values(text)
    except ValueError as exc:
        st.caption(f"Size sweep with XLA: the sweep's values are not valid ({exc}); set them in 'Size sweep'.")
        return
    key = engine.result_key("sweep_xla", choice.model, choice.config, {"param": param, "values": values})
    st.markdown(f"**Size sweep with XLA**: {param} = {', '.join(map(str, values))} (chosen in 'Size sweep')")
    if st.button("Sweep three ways", key="xla.sweep.run"):
        with st.spinner(f"Timing three variants at {len(values)} values of {param}…"):
            try:
                points = engine.sweep(choice.model, choice.config, param=param, values=values,
                                      reps=int(st.session_state.get(state.SWEEP_REPS) or 20), warmup=3,
                                      max_seconds=30.0, compiler=compilers.BOTH)["points"]
            except ExplorerError as exc:
                frame.show_error(exc, "The sweep failed")
                return
        state.remember(state.XLA_BENCH_RESULTS, key, points)
    points = state.recall(state.XLA_BENCH_RESULTS, key)
    if points is None:
        return
    st.plotly_chart(xla_charts.three_way_sweep(points, param), width="stretch", key="xla.sweep.figure")
    st.dataframe([{param: pt["value"], **{f"{WORDS[n]} ms": round(pt["result"]["summary"]["variants"][n]["median_ms"], 4)
                                         for n in VARIANTS},
                   "XLA first call ms": round(pt["result"]["summary"]["xla_first_call_ms"], 1),
                   "proof": "ok" if pt["result"]["proof_summary"]["verified"] else "see the three-way run"}
                  for pt in points], hide_index=True, width="stretch")
