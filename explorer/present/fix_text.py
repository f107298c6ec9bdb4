"""What ``python -m explorer fix`` prints: the fixes applied and what to change in the code, the fusions
before and after, the agreement, the speedups, the memory traffic saved, the near-misses ranked by time.

Words of a fix result (``engine.fixes``) shared by the command line and the page: pure functions.
"""

from __future__ import annotations

from collections import Counter

from ..analysis import traffic
from ..analysis.fix_plan import layers, scope_of
from . import machine


def runs_words(sp: dict | None) -> str:
    """'3 fresh worker processes' or 'one worker process (a quick run)'."""
    runs = (sp or {}).get("processes") or 1
    return f"{runs} fresh worker processes" if runs > 1 else "one worker process (a quick run)"


def speedup_words(sp: dict | None) -> str:
    """'1.83× (95% CI 1.25–2.68, 3 fresh worker processes)', or why there is none."""
    if not sp:
        return "not timed"
    ci = f"95% CI {sp['ci_low']:.2f}–{sp['ci_high']:.2f}" if sp.get("ci_low") is not None else "no interval"
    return f"{sp['estimate']:.2f}× ({ci}, {runs_words(sp)})"


def agreement_words(result: dict) -> str:
    if result.get("max_abs_diff") is None:
        return "not compared"
    inside = "within" if result.get("within_tolerance") else "OUTSIDE"
    return (f"max abs diff {result['max_abs_diff']:.3g}, max rel diff {result['max_rel_diff']:.3g} ({inside} the "
            f"tolerance {result['tolerance']:g}, same seeded inputs)")


def bytes_words(saved: int | None, before: int | None) -> str:
    if saved is None or before is None:
        return "unknown"
    return (f"{traffic.size_text(before)} written per call by the model's ops → {traffic.size_text(before - saved)} "
            f"({traffic.size_text(saved)} saved)")


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n} {word if n == 1 else many or word + 's'}"


def fusion_changes(before: list[dict], after: list[dict]) -> list[tuple[str, int, int]]:
    """(fused op, count before, count after) for every fused op of either, the most gained first."""
    b = Counter({r["fused"]: r["count"] for r in before})
    a = Counter({r["fused"]: r["count"] for r in after})
    rows = [(op, b[op], a[op]) for op in set(a) | set(b)]
    return sorted(rows, key=lambda row: (row[1] - row[2], row[0]))


def resolved_words(applied: dict) -> str:
    """'3 near-misses resolved (1 of them together with the other fixes)'."""
    shared = applied.get("with_others") or 0
    return (f"{plural(len(applied['chains']), 'near-miss', 'near-misses')} resolved"
            + (f" ({shared} of them together with the other fixes)" if shared and shared < len(applied["chains"])
               else " together with the other fixes" if shared else ""))


# What a failure that only the fixed model meets means for the fix.
FAILED_AFTER = ("The rewrite keeps the maths, but it made a pattern that TensorFlow's optimiser fails on here: serve "
                "the original, or the fixed model where it does not fail (try the other oneDNN setting).")


def slower_alone_words(result: dict) -> list[str]:
    """For each fix that alone ran slower than the model as imported (its whole interval below 1×), what that means
    here: take it only with the others where they together ran faster, else leave it out. Measured, not a rule:
    with oneDNN, folding batch norms into weights kept as variables ran at 0.6–0.8× on Xception and ResNet50V2
    while folding and freezing together ran 1.4× (docs/fixes.md)."""
    together = result.get("speedup") or {}
    if len(result.get("per_fix") or []) < 2 or not together:
        return []
    faster = (together.get("ci_low") or 0) > 1
    out = []
    for entry in result["per_fix"]:
        sp = entry.get("speedup") or {}
        if sp.get("ci_high") is not None and sp["ci_high"] < 1:
            alone = f"{entry['fix']} alone ran slower here ({speedup_words(sp)})"
            out.append(f"{alone}, and all the fixes together faster ({together['estimate']:.2f}×): apply it only "
                       "with the others." if faster else f"{alone}: leave it out on this machine and setting.")
    return out


def fix_text(result: dict) -> str:
    out = []
    fp = result.get("fingerprint") or {}
    out.append(f"{machine.describe(fp)} | flags {fp.get('flags') or 'defaults'}" if fp else "")
    if not result["applied"]:
        out.append("No fix applies to this model: " + "; ".join(f"{k}: {v}" for k, v in
                                                               (result.get("skipped") or {}).items()))
    for applied in result["applied"]:
        out.append(f"\n{applied['fix']}: {plural(len(applied['nodes']), 'node')} rewritten, "
                   f"{resolved_words(applied)}")
        out.append(f"  what to change: {applied['advice']}")
        for left in applied.get("left") or []:
            out.append(f"  left as it is: {left['nodes'][0]}: {left['why']}")
    if result["applied"]:
        before, after = result.get("fused_kernels_before"), result.get("fused_kernels_after")
        out.append(f"\nFused kernels: {before} → {after} ({after - before:+d})" if before is not None else "")
        for op, b, a in fusion_changes(result["fusions_before"], result["fusions_after"]):
            out.append(f"  {op:<48} {b:>4} → {a:<4}")
        for failed in result.get("tensorflow_failed_after") or []:
            out.append(f"WARNING: on the fixed model, not on the original: {failed} {FAILED_AFTER}")
        out.append(f"Outputs against the original: {agreement_words(result)}")
        out.append(f"Speedup, all fixes together: {speedup_words(result.get('speedup'))}")
        if len(result["per_fix"]) > 1 or result["per_fix"] and result["per_fix"][0]["fix"] != "all":
            for entry in result["per_fix"]:
                out.append(f"  {entry['fix']} alone: {speedup_words(entry.get('speedup'))}; "
                           f"{entry.get('fused_kernels_after', '?')} fused kernels"
                           + ("; TensorFlow dropped Grappler's work on it" if entry.get("tensorflow_failed") else ""))
            out.extend(f"  NOTE: {line}" for line in slower_alone_words(result))
        out.append(f"Memory traffic: {bytes_words(result.get('bytes_saved'), result.get('bytes_written_before'))}")
    ranked = result.get("near_misses_ranked") or []
    if ranked:
        total = (result.get("op_time") or {}).get("total_ms")
        out.append("\nNear-misses of the model as imported, by the time they cost"
                   + (f" (of {total:.3f} ms of op time per call)" if total else "") + ":")
        scope = scope_of(ranked)
        for i, miss in enumerate(ranked[:15], 1):
            fixed = f" → fixed by {', '.join(miss['fixed_by'])}" if miss.get("fixed_by") else ""
            timed = f"{miss['time_ms']:.3f} ms {miss['share'] * 100:4.1f}%" if "time_ms" in miss else "untimed"
            out.append(f"  {i:>2}. {timed}  {miss['chain']} at {layers([miss], scope)}{fixed}")
        if len(ranked) > 15:
            out.append(f"  ... and {len(ranked) - 15} more (--json lists them all)")
    if result.get("model_out"):
        out.append(f"\nFixed model written to {result['model_out']}")
    return "".join(f"{line}\n" for line in out if line is not None)
