"""Reading a diagnosis: whether the fusion breaks the model, and which fused node does it.

``verdict(answer)`` reads the worker's "diagnose" answer (``worker.diagnose``): the fused call failed,
aborted its process, or gave other numbers than the remapper-off graph beyond the dtype's
tolerance; or it agrees. ``pin(verdict, nodes)`` names the fused node whose ops, run alone in a
fresh process, show a fault (the same one as the model, where one does); ``pattern(node)`` the
remapper's matcher that made it (remapper.cc, /work/shared/reference/remapper-patterns.md).
"""

from __future__ import annotations

from .fusion import fused_label

JSON_MARK = "# repro-json: "  # the repro script's last line: what it found, as JSON
FAULT_WORDS = {
    "fails": "fails at run time (TensorFlow raises an error) where the unfused graph runs",
    "aborts": "aborts the process inside a kernel where the unfused graph runs",
    "disagrees": "gives other numbers than the unfused graph, beyond the dtype's tolerance",
}
# The same fault, as a cut-out node's script shows it.
SAME_FAULT = {"fails": {"fails"}, "aborts": {"aborts"}, "disagrees": {"disagrees"}}

# (fused op family, fused_ops without the bias) -> the remapper's matcher (remapper.cc).
PATTERNS = (
    # the second pass: a _FusedConv* already made, then its Mish or LeakyRelu consumer taken in
    (("_FusedConv2D", "_FusedConv3D"), ("*", "Mish"),
     "FindFusedConvWithFusedActivation → AddFusedContractionNode (second pass, _FusedConv* + _MklFusedMish)"),
    (("_FusedConv2D", "_FusedConv3D", "_FusedDepthwiseConv2dNative"), ("FusedBatchNorm", "*"),
     "FindConv2DWithBatchNormAndActivation → AddFusedConv2DNode"),
    (("_FusedConv2D",), ("FusedBatchNorm",), "FindConv2DWithBatchNorm → AddFusedConv2DNode"),
    (("_FusedConv2D", "_FusedConv3D", "_FusedMatMul"), ("Add", "*"),
     "FindContractionWithBiasAndAddActivation → AddFusedContractionNode"),
    (("_FusedConv2D", "_FusedConv3D", "_FusedMatMul"), ("Add",),
     "FindContractionWithBiasAddAndAdd → AddFusedContractionNode"),
    (("_FusedConv2D", "_FusedDepthwiseConv2dNative"), ("_FusedHardSwish",),
     "FindContractionWithBiasAddAndHardSwish → FuseContractionWithBiasAddAndHardSwish"),
    (("_FusedMatMul",), ("GeluExact",), "FindMatMulBiasAddAndGelu → AddFusedMatMulBiasAddAndGelu"),
    (("_FusedMatMul",), ("GeluApproximate",), "FindMatMulBiasAddAndGelu → AddFusedMatMulBiasAddAndGelu"),
    (("_FusedConv2D", "_FusedConv3D", "_FusedMatMul", "_FusedDepthwiseConv2dNative"), ("*",),
     "FindContractionWithBiasAddAndActivation → AddFusedContractionNode"),
    (("_FusedConv2D", "_FusedConv3D", "_FusedMatMul", "_FusedDepthwiseConv2dNative"), (),
     "FindContractionWithBias → AddFusedContractionNode"),
    (("_FusedBatchNormEx",), (), "FindFusedBatchNormEx → AddFusedBatchNormExNode"),
    (("_MklFusedBatchMatMulV2",), (), "FindFusedBatchMatMul → AddFusedBatchMatMul"),
    (("_MklFusedMish",), (), "FindSoftplusAndTanhAndMul → ReplaceSoftplusTanhAndMulWithMish"),
    (("_MklSwish",), (), "FindSigmoidAndMul → ReplaceSigmoidMulWithSwish"),
    (("_MklLayerNorm",), (), "FindMklLayerNorm → AddMklLayerNorm"),
    (("_MklFusedInstanceNorm",), (), "FindInstanceNorm → AddMklFusedInstanceNorm"),
)


def verdict(answer: dict) -> dict:
    """{"fault": None|"fails"|"aborts"|"disagrees", "runs", "words", ...} of a diagnose answer."""
    if answer.get("unfused_error"):
        err = answer["unfused_error"]
        return {"fault": None, "runs": False, "unfused_fails": True,
                "words": f"The model fails even with the remapper off ({err['type']}: {err['line']}): "
                         "the fusion is not the cause."}
    if answer.get("fused_aborted"):
        return {"fault": "aborts", "runs": False, "error": answer["fused_aborted"].get("line"),
                "words": f"The fusion breaks this model: the fused graph {FAULT_WORDS['aborts']}."}
    if answer.get("fused_error"):
        err = answer["fused_error"]
        return {"fault": "fails", "runs": False, "error": f"{err['type']}: {err['line']}", "failed_node": err.get("node"),
                "kernel": err.get("kernel"), "kernel_file": err.get("kernel_file"),
                "words": f"The fusion breaks this model: the fused graph {FAULT_WORDS['fails']} "
                         f"({err['type']}: {err['line']})."}
    agreement = answer.get("agreement") or {}  # analysis.agreement.compare's result
    if agreement and not agreement.get("agree", True) and answer.get("varies"):
        return {"fault": None, "runs": True, "agreement": agreement, "varies": answer["varies"],
                "words": f"Nothing to diagnose: {answer['varies']}, so the unfused run's numbers say nothing of the "
                         "fusion."}
    if agreement and not agreement.get("agree", True):
        return {"fault": "disagrees", "runs": True, "agreement": agreement,
                "words": f"The fusion changes this model's numbers beyond tolerance: {agreement.get('summary', '')}"}
    return {"fault": None, "runs": True, "agreement": agreement or None,
            "words": "The fused graph runs and agrees with the unfused one."}


def xla_verdict(answer: dict) -> dict | None:
    """The XLA-compiled function against the remapper-off graph: {"fault", "words"}; None when not checked."""
    check = answer.get("xla")
    if not check:
        return None
    if check.get("error"):
        err = check["error"]
        if check.get("refused"):
            return {"fault": None, "refused": True, "words": f"XLA does not compile this model ({err['type']}: "
                                                            f"{err['line']}): nothing to compare."}
        return {"fault": "fails", "words": f"XLA breaks this model: the compiled function fails where TensorFlow's "
                                           f"graph runs ({err['type']}: {err['line']})."}
    if check.get("reference_off"):  # TensorFlow's own graph returns another shape than the model declares
        keeps = "keeps to the shapes the model declares" if check.get("keeps_declared") else "does not either"
        return {"fault": None, "words": f"XLA's compiled function {keeps}; TensorFlow's remapper-off graph does not "
                                        f"({check['reference_off']}), so its numbers are no reference for XLA's."}
    agreement = check["agreement"]
    if not agreement.get("agree", True) and answer.get("varies"):
        return {"fault": None, "agreement": agreement,
                "words": "XLA's outputs are not comparable either: the model's outputs vary from call to call."}
    if not agreement.get("agree", True):
        return {"fault": "disagrees", "agreement": agreement,
                "words": f"XLA changes this model's numbers beyond tolerance: {agreement.get('summary', '')}"}
    return {"fault": None, "agreement": agreement,
            "words": "XLA's compiled function agrees with TensorFlow's unfused graph."}


def pattern(node: dict) -> str:
    """The remapper matcher that makes a fused node of this op and these fused ops."""
    op = node.get("op", "")
    fused = [f for f in node.get("fused_ops") or () if f not in ("BiasAdd",)]
    for ops, wanted, name in PATTERNS:
        if op not in ops:
            continue
        if not wanted and not fused:
            return name
        if wanted and fused and len(wanted) == len(fused) and all(w in ("*", f) for w, f in zip(wanted, fused)):
            return name
        if not wanted and op.startswith("_Mkl"):
            return name
    return f"the remapper's {op} fusion"


def pin(model_verdict: dict, nodes: list[dict]) -> dict | None:
    """The fused node responsible: the first whose ops alone show the model's fault (else any fault)."""
    fault = model_verdict.get("fault")
    if fault is None:
        return None
    same = [i for i, n in enumerate(nodes) if (n.get("alone") or {}).get("fault") in SAME_FAULT.get(fault, ())]
    named = (model_verdict.get("failed_node") or "")  # the node TensorFlow's error names, first if it shows the fault
    same.sort(key=lambda i: nodes[i]["node"] != named)
    other = [i for i, n in enumerate(nodes) if (n.get("alone") or {}).get("fault") in ("fails", "aborts", "disagrees")]
    if not (same or other):
        return None
    chosen = (same or other)[0]
    node = dict(nodes[chosen])
    alone = node["alone"]
    if node.get("kernel") is None and chosen in same and model_verdict.get("kernel"):  # the failing kernel TF's log named
        node.update(kernel=model_verdict["kernel"], kernel_file=model_verdict.get("kernel_file"))
    return {"index": chosen, "node": node["node"], "target": fused_label(node["op"], node.get("fused_ops")), "describe": node.get("describe"),
            "pattern": pattern(node), "kernel": node.get("kernel"), "executed_op": node.get("executed_op"),
            "kernel_file": node.get("kernel_file"),
            "fault_alone": alone.get("fault"), "reproduces": chosen in same,
            "others_checked": sum(1 for n in nodes if n.get("alone")) - 1}


def tally(results: list[dict], expected: dict[str, str]) -> dict:
    """The corpus tally: found, pinned to the right node, a way around verified, repro reproduces."""
    found = sum(1 for r in results if r["verdict"]["fault"] is not None)
    pinned = sum(1 for r in results if r.get("pinned") and r["pinned"]["node"] == expected.get(r["name"]))
    ways = sum(1 for r in results if any(w.get("runs") and w.get("agrees") for w in r.get("ways") or ()))
    repro = sum(1 for r in results if (r.get("pinned") or {}).get("reproduces"))
    return {"models": len(results), "found": found, "pinned": pinned, "way_verified": ways, "repro_reproduces": repro}


def read_findings(stdout: str) -> dict | None:
    """A repro script's findings: its last ``JSON_MARK`` line, if it got that far."""
    import json

    for line in reversed(stdout.splitlines()):
        if line.startswith(JSON_MARK):
            try:
                return json.loads(line[len(JSON_MARK):])
            except ValueError:
                return None
    return None
