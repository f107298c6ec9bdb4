"""What ``python -m explorer diagnose`` prints: the verdict, the fused node responsible, the ways around it."""

from __future__ import annotations

ALONE_WORDS = {None: "agrees alone", "fails": "FAILS alone", "aborts": "ABORTS alone",
               "disagrees": "DISAGREES alone", "hangs": "hangs alone", "script-error": "its script could not run"}


def diagnose_text(result: dict) -> str:
    verdict = result["verdict"]
    lines = [("FUSION BREAKS THE MODEL: " if verdict["fault"] else "") + verdict["words"]]
    # Grappler gave up on the model (a remapper defect): it ran unoptimised, which agreeing outputs do not show
    lines += [f"WARNING: {warning}" for warning in result.get("warnings") or ()]
    xla = result.get("xla")
    if xla:
        lines.append(("XLA BREAKS THE MODEL: " if xla["fault"] else "") + xla["words"])
    nodes = result.get("nodes") or []
    if verdict["fault"] is None:
        lines.append(f"{len(nodes)} fused node(s) in the graph; none could be held against the remapper-off graph."
                     if verdict.get("varies") else
                     f"{len(nodes)} fused node(s) checked against the remapper-off graph on the same seeded inputs.")
        return "\n".join(lines + _ways(result.get("ways") or [])) + "\n"
    pinned = result.get("pinned")
    lines.append("")
    if pinned:
        kernel = pinned.get("kernel") or "not seen (the call failed before the executed graph was recorded)"
        lines += [f"Fused node responsible: {pinned['node']}  {pinned['target']}",
                  f"  its ops:   {pinned.get('describe') or ''}",
                  f"  pattern:   {pinned['pattern']} (remapper.cc)",
                  f"  kernel:    {kernel}" + (f" ({pinned['executed_op']})" if pinned.get("executed_op") else "")
                  + (f" (TensorFlow's log: failed at {pinned['kernel_file']})" if pinned.get("kernel_file") else ""),
                  f"  alone:     its ops alone, in a fresh process, {ALONE_WORDS.get(pinned['fault_alone'], '?')}"
                  + (" (the model's fault)" if pinned["reproduces"] else " (another fault than the model's)")]
    else:
        lines.append("Fused node responsible: not pinned (no fused node's ops alone show a fault).")
    if len(nodes) > 1:
        lines.append("Every fused node, its ops run alone:")
        for node in nodes:
            alone = node.get("alone")
            word = ALONE_WORDS.get(alone.get("fault"), "?") if alone else (node.get("not_isolated") or "not run")
            lines.append(f"  {node['node']:<28} {node.get('describe', '')}: {word}")
    lines += _ways(result.get("ways") or [])
    repro = result.get("repro")
    if repro:
        lines += ["", f"Report to file upstream: {repro['path']} (TensorFlow alone; run it: "
                  + ("it shows the same fault in a fresh process)" if repro["reproduces"] else
                     "in a fresh process it shows another fault than the model's)")]
    return "\n".join(lines) + "\n"


def _ways(ways: list[dict]) -> list[str]:
    """Each way around, as run here: whether the model then runs and agrees, whether Grappler optimised it, its time."""
    if not ways:
        return []
    lines = ["", "Ways around it (each run here):"]
    for way in ways:
        if (way.get("verdict") or {}).get("unfused_fails"):
            state = "the model fails there even with the remapper off"
        else:
            state = "runs and agrees" if way.get("agrees") else ("runs but disagrees" if way.get("runs") else "fails")
        if way.get("warnings"):
            state += ", but Grappler gives up there too"
        timing = way.get("timing") or {}
        cost = (f"; {timing['configured_ms']:.3f} ms a call (unfused graph {timing['unfused_ms']:.3f} ms, "
                f"median of {timing['reps']})") if timing else ""
        lines.append(f"  {way['words']}: {state}{cost}")
        if way.get("model_out"):
            lines.append(f"    the rewritten model: {way['model_out']}")
    return lines
