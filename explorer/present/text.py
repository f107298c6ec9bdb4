"""The command line's text output: what ``python -m explorer`` prints for each command, as text.

Pure functions of result data (no printing, no engine): ``cli`` prints them. ``--json`` prints the
result itself instead.
"""

from __future__ import annotations

import json
from collections import Counter

from ..analysis import fix_plan, replicated, traffic, xla_fusion
from ..analysis.annotate import graphs_of
from ..analysis.grappler_log import main_run
from ..analysis.model_report import report_scope
from ..analysis.xla_bench import VARIANTS, WORDS
from ..model import coverage, stack_examples
from ..model.catalog import PRESETS
from ..model.flags import Config
from ..model.graph import STAGES
from ..model.layers import field_help
from ..model.results import BenchResult, InspectResult
from ..model.sources import source_for_data
from . import agreement, machine
from .command import fix_command_line


def lines(out: list[str]) -> str:
    """Lines as print() would have written them, one after another."""
    return "".join(f"{line}\n" for line in out)


def presets_text(as_json: bool) -> str:
    """``presets``: the catalogue, and the measured coverage per mode (or all of it as JSON)."""
    out: list[str] = []
    data = coverage.load()
    if as_json:
        presets = [dict(p.to_dict(), coverage=(data or {}).get("table", {}).get(p.id)) for p in PRESETS.values()]
        cover = None if data is None else {"measured": data["measured"], "rows_fused": coverage.summary(data),
                                           "total_rows": coverage.TOTAL_ROWS, "modes": list(coverage.MODES)}
        out.append(json.dumps({"presets": presets, "coverage": cover}, indent=2))
        return lines(out)
    width = max(len(p) for p in PRESETS)
    for preset in PRESETS.values():
        rows = ", ".join(str(r) for r in preset.rows)
        out.append(f"{preset.id:<{width}}  {preset.title}  (catalogue row {rows})")
        out.append(f"{'':<{width}}  -> {preset.fused_op}; fuses on: {preset.where}")
        if data and preset.id in data["table"]:
            out.append(f"{'':<{width}}  measured: " + ", ".join(f"{m} {st}" for m, st in data["table"][preset.id].items()))
    if data:
        counts = coverage.summary(data)
        out.append(f"\nCoverage of the remapper catalogue ({coverage.TOTAL_ROWS} rows), measured {data['measured']} "
                   "by benchmarks/coverage.py: rows with a preset that fuses as catalogued")
        for mode, (device, env) in coverage.MODES.items():
            flags = " ".join(f"{k}={v}" for k, v in env.items())
            out.append(f"  {mode:<11} {counts[mode]:>2}/{coverage.TOTAL_ROWS}   ({device}; {flags})")
    return lines(out)


SPELLED_OUT = 30  # compute ops listed one by one, in graph order; a bigger graph's are counted by type


def ops_words(ops: list[str]) -> str:
    """A stage's compute ops: in graph order for a small graph; for a network, each type counted, the most
    frequent first ("194 compute ops: Enter ×19, Merge ×13, ..."), where hundreds of names would say nothing."""
    if len(ops) <= SPELLED_OUT:
        return " ".join(ops)
    counted = Counter(ops).most_common()
    shown = ", ".join(f"{op} ×{n}" if n > 1 else op for op, n in counted[:16])
    return f"{len(ops)} compute ops: {shown}" + (f" and {len(counted) - 16} more types" if len(counted) > 16 else "")


def inspect_text(result: InspectResult, model_path: str | None = None) -> str:
    """``inspect``: the stages, the fusions, the remapper's log, the passes that changed the graph, the verdict
    (``model_path``: an imported model's file as the command line named it, for the ``fix`` command it prints)."""
    out: list[str] = []
    fp = result["fingerprint"]
    out.append(f"{machine.describe(fp)} | flags {fp['flags'] or 'defaults'}")
    out.extend(agreement.lines(result.get("agreement")))
    shared = agreement.shared_fusions(result)
    if shared:
        out.append(f"  note: {shared}")
    # what qualifies the whole result (Grappler gave up on the function, the dimensions were fixed ...): before it,
    # as the page shows them
    out.extend(f"WARNING: {warning}" for warning in result.get("warnings", []))
    if result.get("simulated"):
        out.append(f"SIMULATED on a virtual {result['profile']['label']}: nothing ran. What the simulation cannot check:")
        for limit in result.get("limits", []):
            out.append(f"  - {limit}")
    for stage, graph in graphs_of(result).items():
        out.append(f"\n{STAGES[stage]} ({len(graph)} nodes): {ops_words(graph.compute_ops())}")
    out.append("\nFusions (traced -> after Grappler):")
    out.extend(_fusion_lines(result.get("fusions") or []) or ["  none"])
    late = (result.get("fusions_by_pair") or {}).get("optimized->executed") or []
    if late:  # oneDNN's layout pass fuses on its own after Grappler (a Pad into the convolution after it)
        onednn = (result.get("fingerprint") or {}).get("onednn")
        out.append("Fused when executed (after Grappler" + (", by oneDNN's layout pass):" if onednn else "):"))
        out.extend(_fusion_lines(late))
    if result.get("xla_clusters"):
        out.append("XLA auto-clustering (TF_XLA_FLAGS): these ops left the graph for XLA clusters, which XLA compiles:")
        for line in xla_fusion.cluster_lines(result["xla_clusters"]):
            out.append(f"  {line}")
    renames = result.get("renames_by_pair", {}).get("optimized->executed", [])
    if renames:
        counted = Counter(f"{old} -> {new}" for _, old, new in renames)  # first seen first: a network's are many
        out.append("Renamed when executed: " + ", ".join(f"{r} ×{n}" if n > 1 else r for r, n in counted.items()))
    grappler = result["grappler"]
    out.append("\nRemapper log:" + ("" if grappler["remapper_log"] else " (nothing logged)"))
    for line in grappler["remapper_log"]:
        out.append(f"  {line}")
    run = main_run(grappler)
    if run:
        out.append("\nGrappler passes that changed the graph:")
        for iteration in run["iterations"]:
            for p in iteration["passes"]:
                if p.get("changed"):
                    out.append(f"  iteration {iteration['index']}: {p['pass']:<28} nodes {p['nodes']} ({p['nodes_delta']:+d}), "
                               f"edges {p['edges']} ({p['edges_delta']:+d}), {p['time_ms']:.2f} ms")
    explanation = result.get("explanation")
    if explanation:
        out.append(f"\nVerdict for {explanation['pattern']}: {explanation['verdict'].upper()} - {explanation['why']}")
        for check in explanation["checks"]:
            mark = {True: "ok", False: "NO", None: "??"}[check["ok"]]
            fix = f"  -> {check['fix']}" if check["fix"] and check["ok"] is False else ""
            out.append(f"  [{mark}] {check['name']}: {check['detail']}{fix}")
        for note in explanation["notes"]:
            out.append(f"  note: {note}")
    source = source_for_data(result.get("spec"))
    if not (source and source.checklist) and result.get("report"):  # no checklist: the whole-model report
        out.extend(report_lines(result["report"], _fix_command(result, model_path)))
    return lines(out)


def _fix_command(result: dict, model_path: str | None = None) -> str | None:
    """The ``fix`` command for an imported model that ran here (a simulated GPU ran nothing to rewrite)."""
    spec, source = result.get("spec") or {}, source_for_data(result.get("spec"))
    if source is None or "fix" not in source.offers or result.get("simulated") or not result.get("config"):
        return None
    return fix_command_line(spec, Config.from_dict(result["config"]), model_path)


def report_lines(report: dict, fix_command: str | None = None) -> list[str]:
    """The whole-model report (analysis.model_report): for models whose source has no checklist. Layer names lose
    the scope they all share, said once; with ``fix_command`` (an imported model), the rewrites that take its
    near-misses and the command that applies them."""
    out: list[str] = []
    totals = report["totals"]
    saved = totals.get("intermediate_bytes_saved")
    out.append(f"\nWhole model: {totals.get('ops_traced', '?')} ops traced, {totals.get('ops_optimized', '?')} after Grappler, "
               f"{totals.get('ops_executed', '?')} executed; {totals.get('fused_kernels', 0)} fused kernels"
               + (f"; {traffic.size_text(saved)} of intermediate tensors no longer written" if saved else ""))
    left = totals.get("contractions_unfused") or {}
    if left:
        out.append("Contractions left unfused: " + ", ".join(f"{op} ×{n}" for op, n in sorted(left.items())))
        out += [f"  {n} of them {why}" for why, n in (totals.get("contractions_unfused_why") or {}).items()]
    scope = report_scope(report)
    if scope and (report["fusions"] or report["near_misses"]):
        out.append(f"Layers below are in {scope}")

    def short(name: str) -> str:
        return name[len(scope):] if scope and name.startswith(scope) else name

    for row in report["fusions"]:
        out.append(f"  {row['count']:>3} × {row['fused']}   layers: {', '.join(short(n) for n in row['layers'][:6])}"
                   + (" ..." if len(row["layers"]) > 6 else ""))
    misses = report["near_misses"]
    if misses:
        out.append(f"Near-misses ({len(misses)}): chains that look like a pattern but did not fuse")
    # a network repeats one near-miss in every block: one entry for what it is, where, and what to do
    same: dict[tuple, list[dict]] = {}
    for miss in misses:
        same.setdefault((miss["chain"], miss["form"], miss["needs"], miss["fix"]), []).append(miss)
    for (chain, form, needs, fix), group in same.items():
        what = f"{form}; needs {needs}" + (f"  -> {fix}" if fix else "")
        if len(group) == 1:
            out.append(f"  {chain} at {short(group[0]['nodes'][0])}: {what}")
        else:
            out.append(f"  {chain} ×{len(group)}, at {fix_plan.layers(group, scope, limit=4)}:\n    {what}")
    if fix_command:
        out.extend(_rewrites(misses, fix_command))
    return out


def _rewrites(misses: list[dict], fix_command: str) -> list[str]:
    """Which of ``fix``'s rewrites take an imported model's near-misses, how many each, and the command."""
    taken = [f"{name} ({n})" for name, n in fix_plan.taken_by(misses).items() if n]
    if not taken:
        return []
    return [f"Rewrites for these near-misses: {', '.join(taken)}. To apply them, check the rewritten model against "
            f"this one and time both:\n  {fix_command}"]


def bench_text(result: BenchResult) -> str:
    """``bench``: medians, the speedup and its interval, the outputs' agreement, what each variant ran."""
    out: list[str] = []
    s = result["summary"]
    fp = result["fingerprint"]
    out.append(f"{machine.describe(fp)} | flags {fp['flags'] or 'defaults'} | "
               f"{result['reps_done']} interleaved reps after {result['warmup']} warm-up")
    for name in ("fused", "unfused"):
        v = s[name]
        out.append(f"  {name:<8} median {v['median_ms']:.4f} ms   p10 {v['p10_ms']:.4f}   p90 {v['p90_ms']:.4f}   "
                   f"n={v['n']}")
    sp = s["speedup"]
    ci = "" if sp.get("ci_low") is None else f" (95% CI {sp['ci_low']:.2f}–{sp['ci_high']:.2f})"
    if result.get("nothing_to_compare"):
        out.append(f"  speedup  none: {result['nothing_to_compare']}")
    else:
        out.append(f"  speedup  {sp['estimate']:.2f}x{ci}: {sp['verdict']}"
                   + (f"\n  compared: {result['comparison']}" if result.get("comparison") else ""))
    out.append(f"  {replicated.run_words(sp)}")
    a = result["agreement"]
    out.append(f"  outputs  max abs diff {a['max_abs']:.3g}, max rel diff {a['max_rel']:.3g} "
               + (f"(not comparable: {a['varies']})" if a.get("varies") else f"(WRONG: {a['off_declared']})"
                  if a.get("off_declared") else
                  f"({'within' if a['within_tolerance'] else 'OUTSIDE'} tolerance {a['tolerance']:g}"
                  f"{', float32 ran as TF32' if a.get('tf32') else ''})"))
    proof = result["proof_summary"]
    out.append(f"  fused ran:   {ops_words(proof['fused_executed'])}")
    out.append(f"  unfused ran: {ops_words(proof['unfused_executed'])}")
    out.append(f"  proof: {'verified (no re-instantiation while timing)' if proof['verified'] else 'NOT verified'}")
    for problem in proof["problems"]:
        out.append(f"  WARNING: {problem}")
    if result.get("traffic"):
        for line in traffic.words(result["traffic"]):
            out.append(f"  {line}")
    return lines(out)


def xla_text(result: dict) -> str:
    """``inspect --compiler xla``: the module shown and the proof it ran, XLA's fusions, every traced op."""
    out: list[str] = []
    if "error" in result:
        out.append(f"XLA: {result['error']['message']}")
        return lines(out)
    fp, times, ran = result["fingerprint"], result["timings"], result["executed"]
    out.append(f"XLA (tf.function(jit_compile=True)) | {machine.describe(fp)} | flags {fp['flags'] or 'defaults'}")
    out.append(f"Module shown: {result['module']['name']}, from {result['source']}")
    out.append(f"  compile {times['compile_s']:.3f} s (optimised module); first call {times['first_call_s']:.3f} s "
               "(trace + compile of the module a call runs)")
    if ran["xla_executable_ran"]:
        out.append(f"  a profiled call ran XLA module {', '.join(ran['modules'])}: {' '.join(ran['hlo_instructions'])}")
        same = result.get("executed_vs_shown") or {}
        out.append(f"  {xla_fusion.executed_words(same)}")
    else:
        out.append("  WARNING: the profiled call shows no XLA executable: " + " ".join(ran["tf_kernels"][:12]))
    out.append(f"\nXLA made: {result['summary']}")
    out.append("XLA fusions (optimised HLO -> the traced TF ops its metadata names):")
    for group in result["fusions"]:
        out.append(f"  {group['node']:<28} {group['description']}")
    out.append("\nEvery traced TF op:")
    for words, ops in xla_fusion.status_lines(result["accounting"]):
        out.append(f"  {words}: {', '.join(ops)}")
    table, counts = result.get("pass_table") or [], result.get("pass_summary")
    if counts:
        out.append(f"\nXLA's pass pipeline on {result['module']['name']}: {counts['passes']} passes ran, "
                   f"{counts['changed']} changed the module:")
        for row in table:
            if row["changed"] and not row["is_pipeline"]:
                out.append(f"  {row['pipeline'] or '':<40} {row['pass']:<30} instructions {row['instructions_before']} -> "
                           f"{row['instructions_after']}, {(row['time_us'] or 0) / 1e3:.2f} ms")
    if result["fingerprint"].get("gpus") in (None, []):
        out.append(f"\n{xla_fusion.gpu_note(a['op'] for a in result['accounting'].values())}")
    return lines(out)


def three_way_text(result: dict) -> str:
    """``bench --compiler xla|both``: unfused, Grappler-fused and XLA, with the proof of each."""
    out: list[str] = []
    s, fp = result["summary"], result["fingerprint"]
    out.append(f"{machine.describe(fp)} | flags {fp['flags'] or 'defaults'} | {result['reps_done']} interleaved reps "
               f"after {result['warmup']} warm-up, three variants")
    for name in VARIANTS:
        v = s["variants"][name]
        out.append(f"  {WORDS[name]:<24} median {v['median_ms']:.4f} ms   p10 {v['p10_ms']:.4f}   p90 {v['p90_ms']:.4f}")
    out.append(f"  XLA's first call (trace + compile): {s['xla_first_call_ms']:.1f} ms, not in the medians")
    for pair, sp in s["speedups"].items():
        a, b = pair.split("/")
        ci = "" if sp.get("ci_low") is None else f" (95% CI {sp['ci_low']:.2f}–{sp['ci_high']:.2f})"
        out.append(f"  {WORDS[a]} vs {WORDS[b]}: {sp['estimate']:.2f}x{ci}")
    for pair, a in result["agreement"].items():
        out.append(f"  outputs {pair:<14} max abs diff {a['max_abs']:.3g} ({a['elements_differing']} of {a['elements']} "
                   + ("elements differ; not comparable: the model's outputs vary from call to call)" if a.get("varies")
                      else f"elements differ; {'within' if a['within_tolerance'] else 'OUTSIDE'} tolerance "
                           f"{a['tolerance']:g})"))
    proof = result["proof_summary"]
    out.append(f"  unfused ran: {ops_words(proof['unfused_executed'])}")
    out.append(f"  fused ran:   {ops_words(proof['fused_executed'])}")
    out.append(f"  XLA ran:     module {proof['xla_module']}: {' '.join(proof['xla_instructions'])}")
    out.append(f"  proof: {'verified' if proof['verified'] else 'NOT verified'}")
    for problem in proof["problems"]:
        out.append(f"  WARNING: {problem}")
    return lines(out)


def layer_types_text() -> str:
    """``stacks --layers``: every layer type of a layer stack and its fields."""
    out: list[str] = []
    for kind, fields in field_help().items():
        out.append(kind + ("" if fields else "  (no fields)"))
        for f in fields:
            default = "required" if f["required"] or f["default"] is None and f["kind"] != "int_or_tuple" \
                else f"default {json.dumps(f['default'])}"
            choices = f"; one of {', '.join(f['choices'])}" if f["choices"] else ""
            out.append(f"  {f['name']:<16} {f['help']} ({default}{choices})")
    out.append("Block  (fields: repeat 1..64, layers: a list of layers; repeated as a unit)")
    return lines(out)


def stacks_text() -> str:
    """``stacks``: the ready layer stacks, and how to start from one."""
    width = max(map(len, stack_examples.NAMES))
    out = [f"{key:<{width}}  {stack_examples.describe(key)}" for key in stack_examples.NAMES]
    out.append("\nPrint one to start from:  python -m explorer stacks resnet_basic_block > block.json\n"
               "then:                     python -m explorer inspect --spec block.json")
    return lines(out)


def _fusion_lines(fusions: list) -> list[str]:
    """One line per kind of fusion, first seen first, with its count."""
    return [f"  {describe}" + (f" ×{n}" if n > 1 else "")
            for describe, n in Counter(f["describe"] for f in fusions).items()]
