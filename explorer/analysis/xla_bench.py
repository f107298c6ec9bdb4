"""The three-way benchmark's statistics and proof check (unfused, Grappler-fused, XLA), without TensorFlow."""

from __future__ import annotations

from .stats import speedup, summarize

VARIANTS = ("unfused", "fused", "xla")
# (faster, slower): each speedup reads "how many times faster the first is than the second".
COMPARISONS = (("fused", "unfused"), ("xla", "unfused"), ("xla", "fused"))
WORDS = {"unfused": "unfused (remapper off)", "fused": "Grappler-fused", "xla": "XLA (jit_compile=True)"}


def summary(raw: dict) -> dict:
    samples = raw["samples_ns"]
    return {
        "variants": {name: summarize(samples[name]) for name in VARIANTS},
        "speedups": {f"{a}/{b}": speedup(samples[a], samples[b]) for a, b in COMPARISONS},
        "xla_first_call_ms": raw["xla_first_call_s"] * 1e3,
        "reps": raw["reps_done"],
    }


def proof_summary(raw: dict) -> dict:
    """Did each variant run what it claims? The problems found, in words."""
    proof = raw["proof"]
    fused, unfused, xla = proof["fused"], proof["unfused"], proof["xla"]
    problems = []
    if not fused["fused_nodes"]:
        problems.append("The Grappler variant executed no fused node: the remapper fused nothing here, so "
                        "'fused' and 'unfused' ran the same kind of graph.")
    if unfused["fused_nodes"]:
        problems.append("The unfused variant still executed fused nodes ("
                        + ", ".join(n["op"] for n in unfused["fused_nodes"]) + "), made by a pass other than the remapper.")
    if not xla["xla_executable_ran"]:
        problems.append("The profiled XLA call shows no XLA executable: it did not run compiled.")
    elif not any("XlaMustCompile" in m for m in xla["modules"]):
        problems.append("The XLA module that ran is not the jit_compile=True function's.")
    if raw.get("reinstantiated_during_timing"):
        problems.append(f"{raw['reinstantiated_during_timing']} function(s) were re-instantiated while timing.")
    return {
        "fused_nodes": [n["op"] for n in fused["fused_nodes"]],
        "unfused_executed": unfused["executed_ops"],
        "fused_executed": fused["executed_ops"],
        "xla_module": ", ".join(xla["modules"]),
        "xla_instructions": xla["hlo_instructions"],
        "verified": not problems,
        "problems": problems,
    }


def annotate_three_way(raw: dict) -> dict:
    return dict(raw, summary=summary(raw), proof_summary=proof_summary(raw))
