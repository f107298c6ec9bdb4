"""The pass pipeline tab: every Grappler pass of every iteration on the model's function, and the graphs
around one (the table's rows and the choice of graphs are ``analysis.grappler_passes``)."""

from __future__ import annotations

import html

import streamlit as st

from ..analysis.grappler_log import main_run
from ..analysis.grappler_passes import base_name, default_pass, graphs_around, rows
from ..present.linked import link_groups
from ..present.scope_dot import LARGE
from ..errors import ExplorerError
from ..model.limits import PASS_GRAPHS_AUTO_NODES
from . import cached, frame, graph_views, linked, state


RECORD = "passes.record"  # the button that records a big model's every-pass graphs


def _delta(value: int) -> str:
    if not value:
        return "<span style='color:#888'>±0</span>"
    colour = "#2e8b45" if value < 0 else "#c0392b"
    return f"<span style='color:{colour};font-weight:600'>{value:+d}</span>"


def table_html(table: list[dict]) -> str:
    """The passes as an HTML table: changed ones marked, ones that did not run greyed, log lines beside."""
    head = ("<tr><th>iter.</th><th>#</th><th>pass</th><th>nodes</th><th>edges</th><th>time</th>"
            "<th>the pass's own log lines</th></tr>")
    body = []
    for r in table:
        name = html.escape(r["pass"])
        title = html.escape(r["full_name"], quote=True)
        if not r["ran"]:
            style = "color:#a0a0a0"
            mark = "<span title='did not run: nothing to do on this graph'>○</span>"
            nodes = edges = time = "did not run"
        else:
            style = "background:rgba(201,138,11,0.16)" if r["changed"] else ""  # amber over either theme's page
            mark = ("<span style='color:#c98a0b' title='changed the graph'>●</span>" if r["changed"]
                    else "<span style='color:#bbb' title='ran, changed nothing'>·</span>")
            nodes = f"{r['nodes_before']} → {r['nodes']} {_delta(r['nodes_delta'])}"
            edges = f"{r['edges_before']} → {r['edges']} {_delta(r['edges_delta'])}"
            time = f"{r['time_ms']:.3f} ms" if r["time_ms"] is not None else ""
        log = "<br>".join(f"<code>{html.escape(line)}</code>" for line in r["log"])
        if not log and r["pass"] == "remapper" and r["changed"]:
            log = ("<i style='color:#888'>(no line: this rewrite logs nothing at remapper=2; the graphs below "
                   "show what it did)</i>")
        weight = "font-weight:700;" if r["pass"] == "remapper" else ""
        body.append(
            f"<tr style='{style}'><td>{r['iteration']}</td><td>{r['position']}</td>"
            f"<td title='{title}' style='{weight}white-space:nowrap'>{mark} {name}</td><td style='white-space:nowrap'>"
            f"{nodes}</td><td style='white-space:nowrap'>{edges}</td><td style='white-space:nowrap'>{time}</td>"
            f"<td style='font-size:0.8rem'>{log}</td></tr>")
    return ("<table style='width:100%;font-size:0.88rem;border-collapse:collapse'>" + head + "".join(body)
            + "</table>")


def _summary_line(line: str) -> str:
    """'fused: A + B → C' as a list item with the ops in code (TF names carry underscores)."""
    head, sep, rest = line.partition(": ")
    if sep and head in ("fused", "renamed", "rewritten"):
        return f"- {head}: `{rest}`"
    return f"- {line}"


def _label(r: dict) -> str:
    if not r["ran"]:
        what = "did not run"
    elif r["changed"]:
        what = f"{r['nodes_before']} → {r['nodes']} nodes"
    else:
        what = "no change"
    return f"pass {r['position']} of iteration {r['iteration']}: {r['pass']} ({what})"


def panel(engine, result: dict, choice) -> None:
    grappler = result.get("grappler") or {}
    run = main_run(grappler)
    if run is None:
        st.info("Grappler's per-pass account was not captured for this result: TensorFlow logged no optimisation "
                "of the model's function" + (" (a simulated GPU runs Grappler outside the function runtime)."
                                             if result.get("simulated") else "."))
        return
    table = rows(run)
    changed = sum(r["changed"] for r in table)
    skipped = sum(not r["ran"] for r in table)
    others = [it for it in grappler.get("items") or [] if it is not run]
    other_text = ", ".join(sorted({f"{it['item']}: {it['optimizers']} optimizer(s)" for it in others}))
    st.caption(
        f"Grappler optimised the model's function `{run['item']}` ({run['nodes']} nodes in, {run['optimizers']} "
        f"optimizers) in {len(run['iterations'])} iteration{'s' if len(run['iterations']) != 1 else ''}: "
        f"{len(table)} passes, {changed} changed the graph (●, shaded), {skipped} did not run (greyed). "
        "The remapper's own log lines are beside the pass that printed them."
        + (f" Grappler was also called {len(others)} more time(s) with fewer optimizers ({other_text}); "
           "those runs are not listed." if others else ""))
    if result.get("grappler_skipped"):
        st.warning("**None of this was kept.** Grappler failed on the graph these passes made, and TensorFlow ran "
                   "the function as traced: the changes listed here never reached the graph that ran (see 'Why it "
                   "fused (or not)').", icon=":material/undo:")
    elif result.get("remapper_failed"):
        st.warning("**The remapper's changes were not kept.** It failed on this graph and TensorFlow went on without "
                   "what it did: the graph that ran has none of its fusions, though the other passes' changes are "
                   "there.", icon=":material/undo:")
    st.markdown(table_html(table), unsafe_allow_html=True)
    _pass_graphs(engine, result, run, table, choice)


def _recorded(engine, result: dict, choice) -> dict | None:
    """A big model's result again, with the graph after every pass (its own request and cache entry), once
    this session asked for it; None (with the button that asks) until then."""
    grappler = result.get("grappler") or {}
    ready = engine.is_ready("inspect", choice.model, choice.config, {"pass_graphs": True})
    # Once recorded, the engine's cache holds them; until then the click itself (its rerun) asks.
    if not (ready or st.session_state.get(RECORD)):
        st.caption(f"The model's function has {grappler.get('function_nodes', 'many')} nodes, so its first graphs "
                   f"came without the graph after every pass (recorded with them up to {PASS_GRAPHS_AUTO_NODES} "
                   "nodes), to be quicker. Recording them runs Grappler again with a dump after each pass: "
                   "a few seconds.")
        st.button("Record the graph after every pass", icon=":material/layers:", key=RECORD)
        return None
    try:
        with st.spinner("Running Grappler again, with the graph after every pass…"):
            return engine.inspect(choice.model, choice.config, pass_graphs=True)
    except ExplorerError as exc:
        frame.show_error(exc, "Recording the graph after every pass failed")
        return None


@st.fragment
def _pass_graphs(engine, result: dict, run: dict, table: list[dict], choice) -> None:
    st.markdown("**The graphs around one pass**")
    if (result.get("grappler") or {}).get("pass_graphs_deferred"):
        recorded = _recorded(engine, result, choice)
        recorded_run = main_run(recorded.get("grappler") or {}) if recorded else None
        if recorded_run is None:
            return
        # The dumps' names are this request's: the pairs come from its own account of the passes.
        result, run, table = recorded, recorded_run, rows(recorded_run)
    pass_graphs = (result.get("grappler") or {}).get("pass_graphs") or {}
    drawable = [r for r in table if base_name(r["dump"]) in pass_graphs]
    if not drawable:
        skipped = (result.get("grappler") or {}).get("pass_graphs_skipped")
        st.info(f"Per-pass graphs were not recorded: {skipped}" if skipped else
                "TensorFlow wrote no per-pass graphs for this result, so there is nothing to draw.")
        return
    # Options name the result too: the same pass position in another model is another choice (and another label).
    prefix = f"{result.get('key', '')}|"
    keys = [prefix + r["key"] for r in drawable]
    if st.session_state.get(state.PASS) not in keys:
        st.session_state[state.PASS] = prefix + default_pass(table, pass_graphs)
    by_key = {prefix + r["key"]: r for r in drawable}
    left, right = st.columns([3, 1], vertical_alignment="bottom")
    key = left.selectbox("Pass", keys, key=state.PASS, format_func=lambda k: _label(by_key[k]),
                         help="The graph before this pass (after the previous one) and after it, with the diff.",
                         persist_state=state.KEEP_HIDDEN)
    fold = right.toggle("Fold constants and plumbing", key=state.PASS_FOLD, persist_state=state.KEEP_HIDDEN)
    row = by_key[key]
    before, after = graphs_around(run, row["key"], pass_graphs)
    if before is None or after is None:
        st.info("TensorFlow wrote no graph before this pass, so there is nothing to compare it with.")
        return
    # The graph panel's View (and its scope depth and opened boxes) applies here too: a real network's
    # passes are as big as its stages.
    view = st.session_state.get(state.GRAPH_VIEW) or "auto"
    depth, opened = graph_views.scope_settings()
    drawn = cached.pass_pair(f"{result.get('key')}", before, after, fold, result, view, depth, opened)
    if drawn["view"] == "scopes":
        why = f"a side has more than {LARGE} nodes to draw, so " if view == "auto" else ""
        st.caption(f"Here {why}each name scope is one box with its op count, as in the graph panel, whose *View*, "
                   "*Scope depth* and *Open scopes* apply to these two graphs too.")
    elif drawn["view"] == "fused" and not graph_views.fused_caption(drawn):
        return
    with st.container(border=True):
        if not row["ran"]:
            st.caption("This pass did not run on this graph (nothing to do): before and after are the same.")
        for line in row["log"]:
            st.markdown(f"The pass logged: `{line}`")
        no_op = [n["name"] for n in pass_graphs[after].get("nodes", []) if not n.get("op")]
        if no_op:
            st.error(f"This pass left {len(no_op)} node(s) with no op at all ({', '.join(f'`{n}`' for n in no_op[:5])}): a TensorFlow "
                     "defect. Grappler rejects such a graph, and TensorFlow then runs the function with no Grappler "
                     "optimisation at all.", icon=":material/report:")
        st.markdown("\n".join(_summary_line(line) for line in drawn["summary"]))
    fusions = drawn["diff"]["fusions"]
    groups = link_groups(fusions, drawn["names"]["before"], drawn["names"]["after"],
                                [f["node"] for f in fusions], (drawn["drawn_of"]["before"], drawn["drawn_of"]["after"]))
    heads = st.columns(2, gap="medium")
    heads[0].markdown(f"**Before {row['pass']}** · {drawn['nodes']['before']} nodes")
    heads[1].markdown(f"**After {row['pass']}** · {drawn['nodes']['after']} nodes")
    titles = (f"Before {row['pass']} · {drawn['nodes']['before']} nodes",
              f"After {row['pass']} · {drawn['nodes']['after']} nodes")
    if not linked.show(drawn["before"], drawn["after"], groups, titles=titles):
        heads[0].graphviz_chart(drawn["before"], width="stretch")
        heads[1].graphviz_chart(drawn["after"], width="stretch")
