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

from ..analysis.model_report import layer_of

KINDS = {  # a near-miss's kind, in words
    "reshape-before-bias": "Reshape between contraction and bias",
    "bias-as-add": "bias as a broadcast Add",
    "batchnorm-as-arithmetic": "batch norm as arithmetic",
    "activation-without-bias": "activation with no bias",
    "activation-left-out": "activation outside the fused op",
    "gelu-left-out": "GELU outside the fused op",
}


def _mib(nbytes: int | None) -> str:
    if nbytes is None:
        return "unknown"
    return f"{nbytes / 2**20:.2f} MiB" if nbytes >= 2**16 else f"{nbytes / 1024:.1f} KiB"


def fusion_table(report: dict) -> list[dict]:
    return [{"fused op": r["fused"], "count": r["count"],
             "absorbed": ", ".join(f"{op} ×{n}" if n > 1 else op for op, n in sorted(r["absorbed_ops"].items())),
             "layers": len(r["layers"]), "layer names": r["layers"], "nodes": r["nodes"]}
            for r in report.get("fusions") or []]


def near_miss_table(report: dict) -> list[dict]:
    return [{"kind": KINDS.get(m["kind"], m["kind"]), "layer": layer_of(m["nodes"][0]), "pattern": m["chain"],
             "form found": m["form"], "the pattern needs": m["needs"], "fix": m["fix"] or "none known",
             "nodes": m["nodes"]}
            for m in report.get("near_misses") or []]


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
    cols = st.columns(5)
    cols[0].metric("Ops as traced", totals.get("ops_traced", "?"))
    cols[1].metric("After Grappler", totals.get("ops_optimized", "?"))
    cols[2].metric("Executed", totals.get("ops_executed", "?"))
    cols[3].metric("Fused kernels", totals.get("fused_kernels", 0))
    cols[4].metric("Intermediates not written", _mib(totals.get("intermediate_bytes_saved")),
                   help="Bytes of the tensors the fused kernels no longer write to memory: every absorbed op's "
                        "output but the last, from the traced shapes (per call, batch as run).")
    left = totals.get("contractions_unfused") or {}
    if left:
        st.caption("Contractions left unfused after Grappler: "
                   + ", ".join(f"{op} ×{n}" for op, n in sorted(left.items())) + ".")


def panel(result: dict, key: str = "report") -> None:
    report = result.get("report")
    if not report:
        st.info("No whole-model report for this result: it is made from the graph after Grappler.")
        return
    st.caption("Every fusion Grappler made in this model, grouped by fused op, and the chains that look like a "
               "fusion pattern but reached TensorFlow in another form (near-misses), each with the form the "
               "pattern needs and how to get it. Click a column's header to sort.")
    _totals(report.get("totals") or {})
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
                                    "nodes": st.column_config.ListColumn(help="The fused nodes after Grappler")})
    else:
        st.caption("Grappler fused nothing in this model.")
    kinds = Counter(r["kind"] for r in misses)
    st.markdown(f"**Near-misses: {len(misses)}**"
                + (" (" + ", ".join(f"{k} ×{n}" for k, n in kinds.most_common()) + ")" if kinds else ""))
    if misses:
        st.dataframe(misses, hide_index=True, width="stretch", key=f"{key}.near_misses",
                     height=min(38 + 35 * len(misses), 420),
                     column_config={"form found": st.column_config.TextColumn(width="large"),
                                    "the pattern needs": st.column_config.TextColumn(width="large"),
                                    "fix": st.column_config.TextColumn(width="large"),
                                    "nodes": st.column_config.ListColumn()})
    else:
        st.caption("No chain that looks like a catalogue pattern was left unfused.")
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
