"""The whole-model fusion report (``result["report"]``, from ``analysis.model_report``) as a panel.

For a stack of layers or an imported network, where a pattern's checklist does not apply: the
totals, every fusion by pattern (count, the ops each absorbed, the layers involved) and the
near-misses (the chain, the form it reached TensorFlow in, the form the pattern needs, the fix).
Tables are sortable dataframes (a model of hundreds of layers gives hundreds of rows), with the
whole report as JSON and each table as CSV to take away.
"""

from __future__ import annotations

import csv
import io
import json
from collections import Counter

import streamlit as st

from ..analysis import op_time, traffic
from ..analysis.model_report import layer_of, report_scope
from . import fixes, setting_time
from . import op_time as op_time_panel

KINDS = {  # a near-miss's kind, in words
    "reshape-before-bias": "Reshape between contraction and bias",
    "bias-as-add": "bias as a broadcast Add",
    "second-bias": "a second bias after the BiasAdd",
    "batchnorm-as-arithmetic": "batch norm as arithmetic",
    "activation-without-bias": "activation with no bias",
    "activation-left-out": "activation outside the fused op",
    "gelu-left-out": "GELU outside the fused op",
    "layernorm-as-arithmetic": "layer norm as arithmetic",
    "einsumdense-batchmatmul": "EinsumDense's BatchMatMul",
    "einsum": "Einsum",
    "attention-scores": "attention scores × scale + mask",
    "unfused-pattern": "the pattern, not fused here",
    "dilated-as-space-to-batch": "dilated conv as space-to-batch",
    "activation-after-squeeze": "a Conv1D's activation after its Squeeze",
}


def _short(name: str, prefix: str) -> str:
    return name[len(prefix):] if prefix and name.startswith(prefix) else name


def _timed(row: dict, m: dict, after: str) -> dict:
    """The row with the time its ops take and their share of the model's op time (once measured), right
    after the column ``after``."""
    if "time_ms" not in m:
        return row
    out = {}
    for column, value in row.items():
        out[column] = value
        if column == after:
            out.update({"time (ms)": round(m["time_ms"], 4), "share": round(m["share"] * 100, 1)})
    return out


def fusion_table(report: dict) -> list[dict]:
    prefix = report_scope(report)
    return [_timed({"fused op": r["fused"], "count": r["count"],
                    "absorbed": ", ".join(f"{op} ×{n}" if n > 1 else op for op, n in sorted(r["absorbed_ops"].items())),
                    "layers": len(r["layers"]), "layer names": [_short(layer, prefix) for layer in r["layers"]],
                    "nodes": r["nodes"]}, r, "count")
            for r in report.get("fusions") or []]


def _settings_words(settings: list[dict]) -> str:
    return ", ".join(f"{s['name']}={s['value']}" if s["kind"] == "env" else
                     f"{s['name']} {s['value']}" if s["kind"] == "grappler" else f"device {s['value']}"
                     for s in settings)


def checked_words(miss: dict) -> str:
    """Whether a setting was run for this near-miss, and what the run did: the reader's reason to trust a fix."""
    tried = miss.get("tried") or []
    if miss.get("verified") is True:
        return f"✓ verified: ran {_settings_words(miss['changes'][0])} here, it fused into {miss['fused_with_fix']}"
    if tried:
        return "✗ no setting fuses it: ran " + "; ".join(_settings_words(t["settings"]) for t in tried) + \
            ", left unfused"
    if miss.get("verified") is None and miss.get("candidates"):
        return "? not run: more candidate settings than the engine runs for one model"
    return "— no setting applies: a code change"


def near_miss_table(report: dict) -> list[dict]:
    """One row per near-miss; what to do (the fix, and whether it was run) before the longer why."""
    prefix = report_scope(report)
    return [_timed({"kind": KINDS.get(m["kind"], m["kind"]), "layer": _short(layer_of(m["nodes"][0]), prefix),
                    "pattern": m["chain"], "fix": m["fix"] or "none known", "fix checked": checked_words(m),
                    "form found": m["form"], "the pattern needs": m["needs"], "nodes": m["nodes"]}, m, "layer")
            for m in op_time.ranked(report.get("near_misses") or [])]


def fix_groups(misses: list[dict], limit: int = 6) -> list[str]:
    """The distinct fixes of the near-miss rows, most near-misses first, each with how many and which layers:
    a fix's sentence is longer than its table cell, and many rows share one."""
    groups: dict[str, list[str]] = {}
    for row in misses:
        groups.setdefault(row["fix"], []).append(row["layer"])
    ranked = sorted(groups.items(), key=lambda item: -len(item[1]))
    lines = []
    for fix, layers in ranked[:limit]:
        unique = [f"`{layer.replace('`', '')}`" for layer in dict.fromkeys(layers)]
        names = ", ".join(unique[:4]) + (f" and {len(unique) - 4} more" if len(unique) > 4 else "")
        lines.append(f"**{len(layers)} near-miss{'es' if len(layers) != 1 else ''}** ({names}): {fix}")
    if len(ranked) > limit:
        lines.append(f"… and {len(ranked) - limit} other fixes (in the table and the CSV)")
    return lines


def checks_caption(checked: dict | None) -> str:
    """What the engine ran to settle the near-misses' setting-fixes, in one line ('' when nothing was checked)."""
    if not checked:
        return ""
    runs = checked.get("configurations") or []
    if not runs:
        return ("No near-miss has a setting to try (flag, Grappler switch or device): each names the code change "
                "instead.")
    ran = "; ".join(_config_words(run) for run in runs)
    return (f"Settings are offered only once the engine has run them here and seen the chain fuse. Ran "
            f"{len(runs)} configuration{'s' if len(runs) != 1 else ''} (at most {checked.get('limit', len(runs))} "
            f"per model): {ran}. {checked.get('verified', 0)} near-miss"
            f"{'es' if checked.get('verified', 0) != 1 else ''} fused with a setting.")


def _config_words(run: dict) -> str:
    config = run.get("config") or {}
    words = ", ".join([f"{k}={v}" for k, v in sorted((config.get("env") or {}).items())]
                      + [f"{k} {v}" for k, v in sorted((config.get("grappler") or {}).items())])
    where = f"{config.get('device', 'cpu')}" + (f" with {words}" if words else "")
    if run.get("error"):
        return f"{where}: did not run ({run['error'].splitlines()[0][:120]})"
    return f"{where}: {run.get('fused_kernels', 0)} fused kernels"


def must_compile_table(result: dict) -> list[dict]:
    """Functions inside the model that XLA must compile (``_XlaMustCompile``): one row each, ops counted."""
    rows = []
    for cluster in result.get("xla_clusters") or ():
        if cluster.get("kind") != "must-compile":
            continue
        ops = Counter(op["op"] for op in cluster["ops"])
        rows.append({"call node": cluster["cluster"], "function": cluster["function"], "ops": len(cluster["ops"]),
                     "op types": ", ".join(f"{op} ×{n}" if n > 1 else op for op, n in ops.most_common())})
    return rows


def to_csv(rows: list[dict]) -> str:
    """Rows as CSV; list cells joined with '; '."""
    out = io.StringIO()
    if rows:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]))
        writer.writeheader()
        for row in rows:
            writer.writerow({k: "; ".join(v) if isinstance(v, list) else v for k, v in row.items()})
    return out.getvalue()


def _totals(totals: dict) -> None:
    cols = st.columns([1, 1, 1, 1, 1.6])  # the last holds a size in MiB under a long label
    cols[0].metric("Ops as traced", totals.get("ops_traced", "?"))
    cols[1].metric("After Grappler", totals.get("ops_optimized", "?"))
    cols[2].metric("Executed", totals.get("ops_executed", "?"))
    cols[3].metric("Fused kernels", totals.get("fused_kernels", 0))
    cols[4].metric("Intermediates no longer written", traffic.size_text(totals.get("intermediate_bytes_saved")),
                   help=_saved_help(totals))
    left = totals.get("contractions_unfused") or {}
    if left:
        st.caption("Contractions left unfused after Grappler: "
                   + ", ".join(f"{op} ×{n}" for op, n in sorted(left.items())) + "."
                   + "".join(f" {n} of them {why}." for why, n in (totals.get("contractions_unfused_why") or {}).items()))


def _saved_help(totals: dict) -> str:
    if "unknown_tensors" not in totals:  # no remapper-off run to compare with (the remapper is off)
        return ("Bytes of the tensors the fused kernels no longer write, per call: every absorbed op's output but the "
                "last, from the traced shapes at the batch run.")
    unknown = totals["unknown_tensors"]
    return ("Bytes of the tensors the fused graph no longer writes, per call, against the same model run with the "
            "remapper off, at the shapes that ran (the figure Fused vs unfused shows)"
            + (f"; {traffic.not_known(unknown)}" if unknown else "") + ".")


def _must_compile(result: dict, key: str) -> None:
    rows = must_compile_table(result)
    if not rows:
        return
    total = sum(r["ops"] for r in rows)
    st.warning(f"**{len(rows)} function{'s' if len(rows) != 1 else ''} of this model must be compiled by XLA** "
               f"(`_XlaMustCompile`), holding {total} op{'s' if total != 1 else ''}: Grappler leaves "
               f"{'them' if len(rows) != 1 else 'it'} whole, so these ops are in none of the counts above and none "
               "of them can fuse here. They run as XLA clusters:",
               icon=":material/memory:")
    st.dataframe(rows, hide_index=True, width="stretch", key=f"{key}.must_compile",
                 height=min(38 + 35 * len(rows), 280),
                 column_config={"ops": st.column_config.NumberColumn(width="small", help="Ops in the function's body "
                                                                     "(constants, identities and reads left out)")})


TIME_COLUMNS = {"time (ms)": st.column_config.NumberColumn(format="%.4f", help="The median time of its ops per call "
                                                           "(TensorFlow's profiler)"),
                "share": st.column_config.NumberColumn(format="%.1f%%", help="Of the model's op time per call")}


def panel(result: dict, key: str = "report", engine=None, choice=None) -> None:
    """The report; given the engine and the sidebar's choice (an imported model's page), with the per-op time
    and "Try the fixes"."""
    result = op_time_panel.timed(engine, result, choice)
    report = result.get("report")
    if not report:
        st.info("No whole-model report for this result: it is made from the graph after Grappler.")
        return
    prefix = report_scope(report)
    st.caption("Every fusion Grappler made in this model, grouped by fused op, and the chains that look like a "
               "fusion pattern but reached TensorFlow in another form (near-misses), each with the form the "
               "pattern needs and how to get it. Click a column's header to sort."
               + (f" Layers are named without the scope they all share, `{prefix}`." if prefix else ""))
    _totals(report.get("totals") or {})
    op_time_panel.panel(engine, result, choice, key)
    fusions, misses = fusion_table(report), near_miss_table(report)
    st.markdown(f"**Fusions: {sum(r['count'] for r in fusions)} in {len(fusions)} pattern"
                f"{'s' if len(fusions) != 1 else ''}**")
    if fusions:
        st.dataframe(fusions, hide_index=True, width="stretch", key=f"{key}.fusions",
                     height=min(38 + 35 * len(fusions), 400),
                     column_config={"count": st.column_config.NumberColumn(width="small"),
                                    "layers": st.column_config.NumberColumn(width="small",
                                                                            help="Name scopes (Keras layers) involved"),
                                    "layer names": st.column_config.ListColumn(),
                                    "nodes": st.column_config.ListColumn(help="The fused nodes after Grappler"),
                                    **TIME_COLUMNS})
    else:
        st.caption("Grappler fused nothing in this model.")
    kinds = Counter(r["kind"] for r in misses)
    st.markdown(f"**Near-misses: {len(misses)}**" + (", the costliest first" if report.get("op_time") else "")
                + (" (" + ", ".join(f"{k} ×{n}" for k, n in kinds.most_common()) + ")" if kinds else ""))
    if misses:
        st.dataframe(misses, hide_index=True, width="stretch", key=f"{key}.near_misses",
                     height=min(38 + 35 * len(misses), 420),
                     column_config={"form found": st.column_config.TextColumn(width="large"),
                                    "the pattern needs": st.column_config.TextColumn(width="large"),
                                    "fix": st.column_config.TextColumn(width="large"),
                                    "fix checked": st.column_config.TextColumn(
                                        width="medium", help="Whether a setting was run here to check the fix: "
                                        "✓ it fused the chain, ✗ it did not, ? not run"),
                                    "nodes": st.column_config.ListColumn(), **TIME_COLUMNS})
        st.markdown("**What to change**\n\n" + "\n".join(f"- {line}" for line in fix_groups(misses)))
    else:
        st.caption("No chain that looks like a catalogue pattern was left unfused.")
    words = checks_caption(report.get("fixes_checked"))
    if words and misses:
        st.caption(words)
        setting_time.panel(engine, result, choice, key)
    _must_compile(result, key)
    spec = result.get("spec") or {}
    name = (spec.get("import") or spec.get("stack") or {}).get("name") or "model"
    stem = name.rsplit(".", 1)[0] or "model"
    a, b, c = st.columns(3)
    a.download_button("Report (JSON)", data=json.dumps(report, indent=1), file_name=f"{stem}-fusion-report.json",
                      mime="application/json", on_click="ignore", key=f"{key}.json", icon=":material/data_object:",
                      width="stretch")
    b.download_button("Fusions (CSV)", data=to_csv(fusions), file_name=f"{stem}-fusions.csv", mime="text/csv",
                      on_click="ignore", key=f"{key}.fusions_csv", icon=":material/table:", width="stretch",
                      disabled=not fusions)
    c.download_button("Near-misses (CSV)", data=to_csv(misses), file_name=f"{stem}-near-misses.csv",
                      mime="text/csv", on_click="ignore", key=f"{key}.misses_csv", icon=":material/table:",
                      width="stretch", disabled=not misses)
    fixes.panel(engine, result, choice, f"{key}.fixes")
