"""The pass pipeline: every Grappler pass of every iteration on the model's function, and the graphs around one.

Read from Grappler's own log (``pipeline.main_run``) and the graphs TensorFlow dumped after each
pass (``result["grappler"]["pass_graphs"]``, keyed by the dump's file name). A pass's "before"
is the graph after the previous pass that left a dump in the same iteration, or the iteration's
own before-dump; its "after" is its own dump.
"""

from __future__ import annotations

import html
import os

import streamlit as st

from ..analysis.grappler_log import main_run
from . import cached, linked, state, why


def rows(run: dict) -> list[dict]:
    """One row per pass, in order, with what the table and the picker need."""
    out = []
    for iteration in run["iterations"]:
        for i, p in enumerate(iteration["passes"]):
            ran = bool(p.get("ran"))
            nodes_after, edges_after = p.get("nodes"), p.get("edges")
            out.append({
                "key": f"{iteration['index']}:{i}", "iteration": iteration["index"], "position": i + 1,
                "pass": p["pass"], "full_name": p.get("full_name", p["pass"]), "ran": ran,
                "changed": bool(p.get("changed")),
                "nodes_before": None if nodes_after is None else nodes_after - p.get("nodes_delta", 0),
                "nodes": nodes_after, "nodes_delta": p.get("nodes_delta", 0),
                "edges_before": None if edges_after is None else edges_after - p.get("edges_delta", 0),
                "edges": edges_after, "edges_delta": p.get("edges_delta", 0),
                "time_ms": p.get("time_ms"), "log": list(p.get("log") or []), "dump": p.get("dump"),
            })
    return out


def graphs_around(run: dict, key: str, pass_graphs: dict) -> tuple[str | None, str | None]:
    """Dump names (keys of pass_graphs) of the graph before and after the pass ``key``."""
    it_index, _, pos = key.partition(":")
    for iteration in run["iterations"]:
        if str(iteration["index"]) != it_index:
            continue
        passes = iteration["passes"]
        pos = int(pos)
        after = _base(passes[pos].get("dump"))
        before = None
        for p in reversed(passes[:pos]):
            if _base(p.get("dump")) in pass_graphs:
                before = _base(p["dump"])
                break
        if before is None:
            before = _base(iteration.get("before_dump"))
        return (before if before in pass_graphs else None), (after if after in pass_graphs else None)
    return None, None


def _base(path: str | None) -> str | None:
    return os.path.basename(path) if path else None


def default_pass(table: list[dict], pass_graphs: dict) -> str | None:
    """The first remapper pass that changed the graph, else the first pass that changed it, else the first."""
    drawable = [r for r in table if _base(r["dump"]) in pass_graphs]
    for pick in (lambda r: r["pass"] == "remapper" and r["changed"], lambda r: r["changed"], lambda r: True):
        for r in drawable:
            if pick(r):
                return r["key"]
    return None


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
            style = "background:#fff6dd" if r["changed"] else ""
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


def panel(result: dict) -> None:
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
    if why.skipped_grappler(result):
        st.warning("**None of this was kept.** Grappler failed on the graph these passes made, and TensorFlow ran "
                   "the function as traced: the changes listed here never reached the graph that ran (see 'Why it "
                   "fused (or not)').", icon=":material/undo:")
    st.markdown(table_html(table), unsafe_allow_html=True)
    _pass_graphs(result, run, table)


@st.fragment
def _pass_graphs(result: dict, run: dict, table: list[dict]) -> None:
    pass_graphs = (result.get("grappler") or {}).get("pass_graphs") or {}
    drawable = [r for r in table if _base(r["dump"]) in pass_graphs]
    st.markdown("**The graphs around one pass**")
    if not drawable:
        st.info("TensorFlow wrote no per-pass graphs for this result, so there is nothing to draw.")
        return
    # Options name the result too: the same pass position in another model is another choice (and another label).
    prefix = f"{result.get('key', '')}|"
    keys = [prefix + r["key"] for r in drawable]
    if st.session_state.get(state.PASS) not in keys:
        st.session_state[state.PASS] = prefix + default_pass(table, pass_graphs)
    by_key = {prefix + r["key"]: r for r in drawable}
    left, right = st.columns([3, 1], vertical_alignment="bottom")
    key = left.selectbox("Pass", keys, key=state.PASS, format_func=lambda k: _label(by_key[k]),
                         help="The graph before this pass (after the previous one) and after it, with the diff.")
    fold = right.toggle("Fold constants and plumbing", key=state.PASS_FOLD)
    row = by_key[key]
    before, after = graphs_around(run, row["key"], pass_graphs)
    if before is None or after is None:
        st.info("TensorFlow wrote no graph before this pass, so there is nothing to compare it with.")
        return
    drawn = cached.pass_pair(f"{result.get('key')}", before, after, fold, result)
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
    groups = linked.link_groups(fusions, drawn["names"]["before"], drawn["names"]["after"],
                                [f["node"] for f in fusions])
    heads = st.columns(2, gap="medium")
    heads[0].markdown(f"**Before {row['pass']}** · {drawn['nodes']['before']} nodes")
    heads[1].markdown(f"**After {row['pass']}** · {drawn['nodes']['after']} nodes")
    titles = (f"Before {row['pass']} · {drawn['nodes']['before']} nodes",
              f"After {row['pass']} · {drawn['nodes']['after']} nodes")
    if not linked.show(drawn["before"], drawn["after"], groups, titles=titles):
        heads[0].graphviz_chart(drawn["before"], width="stretch")
        heads[1].graphviz_chart(drawn["after"], width="stretch")
