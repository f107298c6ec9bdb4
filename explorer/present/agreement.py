"""The agreement check in words: the verdict above everything else, and what it rests on.

One place for the words the command line, the page and the matrix use (``InspectResult["agreement"]``,
made by ``worker.agreement``; statuses in ``analysis.agreement``).
"""

from __future__ import annotations

from ..analysis.agreement import headline

__all__ = ["CELL_WORDS", "STATUS_WORDS", "cell_words", "failing_node", "headline", "inputs_words", "lines",
           "shared_fusions"]

STATUS_WORDS = {"agrees": "the outputs agree", "differs": "the outputs DIFFER",
                "varies": "not comparable", "fails": "the fused graph FAILS",
                "aborts": "the fused graph ABORTS the process", "unchecked": "not compared",
                "model_fails": "not compared (they fail unfused too: not the fusion's doing)",
                "skipped": "not compared (the remapper is off)"}
CELL_WORDS = {"fails": "BREAKS", "aborts": "BREAKS (abort)", "differs": "NUMBERS DIFFER"}


def inputs_words(inputs: dict | None) -> str:
    """How the inputs were made, in one line: the builder's words and the shapes."""
    if not inputs:
        return "the seeded inputs"
    shapes = ", ".join(f"{t['name']} {t['dtype']}[{','.join(map(str, t['shape']))}]" for t in inputs.get("tensors", []))
    return f"{inputs.get('how', 'seeded inputs')}" + (f"; {shapes}" if shapes else "")


def failing_node(check: dict | None) -> str | None:
    """The node TensorFlow's error names in the fused run, if any (to mark on the graph)."""
    return ((check or {}).get("fused_error") or {}).get("node")


def lines(check: dict | None) -> list[str]:
    """The check as the command line prints it, first thing after the machine's line."""
    if not check:
        return []
    title = headline(check)
    out = [f"{title.upper()}: {check['summary']}"] if title else \
        [f"Fused against unfused (remapper off, same inputs): {STATUS_WORDS.get(check['status'], check['status'])} "
         f"({check['summary']})"]
    if check["status"] in ("skipped",):
        return out
    if title:
        out.append(f"  compared with {check['reference']}")
    out.append(f"  inputs: {inputs_words(check.get('inputs'))}")
    comparison = check.get("comparison") or {}
    for o in comparison.get("outputs", []):
        if not o["agree"]:
            out.append(f"  output {o['index']}: {o['why']}; NaN {o['nan']['fused']} (reference {o['nan']['reference']}), "
                       f"Inf {o['inf']['fused']} (reference {o['inf']['reference']}); tolerance "
                       f"{o['tolerance']['rtol']:g} ({', '.join(o['tolerance']['basis'])})")
    node = failing_node(check)
    if check["status"] == "fails":
        out.append("  the graphs below are Grappler's output for the failed call (Grappler ran before the kernel failed)"
                   + (f"; failing node: {node}" + (f" ({check['fused_error']['op']})" if check['fused_error'].get('op')
                                                    else "") if node else ""))
    if check["status"] == "aborts":
        out.append("  the graph after Grappler below was made without running it (the run killed the process)")
    for edge in check.get("edges") or []:
        out.append(f"  edge inputs, {edge['case']} ({edge['inputs']}): {STATUS_WORDS.get(edge['status'], edge['status'])}"
                   f" - {edge['summary']}")
    return out


def shared_fusions(result: dict) -> str | None:
    """What the check cannot see, where oneDNN fused on its own after Grappler (a Pad into a convolution, a Conv2D
    with its bias): those fusions run in the remapper-off reference too, so only the declared shapes hold them to
    the model. None where there are none, or the check was not made."""
    late = (result.get("fusions_by_pair") or {}).get("optimized->executed") or []
    check = result.get("agreement") or {}
    if not late or check.get("status") in (None, "skipped", "unchecked"):
        return None
    kinds = sorted({f["describe"] for f in late})
    return (f"oneDNN's own fusions when executed ({'; '.join(kinds)}) run in the unfused reference too: beyond the "
            "output shapes the model declares, this check cannot see a fault of theirs; oneDNN off "
            "(TF_ENABLE_ONEDNN_OPTS=0) checks them")


def cell_words(status: str | None) -> str | None:
    """What a matrix cell says before its fusion verdict (its row's ``agreement`` status), when the fusion breaks
    the model or its numbers."""
    return CELL_WORDS.get(status or "")
