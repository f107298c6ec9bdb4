"""What the explorer's result says was fused, counted the way ``networks.py`` counts TensorFlow's own graph:
the test and ``benchmarks/real_models.py`` compare the two."""

from __future__ import annotations

from collections import Counter

from tests.realmodels.networks import CONTRACTIONS  # the oracle's own list: both sides count the same ops


def counts(result) -> tuple[dict, dict]:
    """({fused op[fused ops]: count}, {unfused contraction: count}) of the result's graph after Grappler."""
    fused, unfused = Counter(), Counter()
    for node in result["stages"]["optimized"]["nodes"]:
        if node["op"].startswith(("_Fused", "_Mkl")):
            fused[f"{node['op']}[{','.join(node['fused_ops'])}]" if node["fused_ops"] else node["op"]] += 1
        elif node["op"] in CONTRACTIONS:
            unfused[node["op"]] += 1
    return dict(fused), dict(unfused)
