"""Near-misses of a whole model: chains that look like a remapper pattern but did not fuse, and why.

The finder walks every contraction and every fused contraction of the graph after Grappler (where
what did not fuse is still in place) and names what follows it when that stops a fusion; the kinds
live in ``near_miss_chain`` (bias, activation, GELU, Reshape, space-to-batch, a Conv1D's Squeeze), with
``near_miss_batchnorm`` (batch norm written as arithmetic) and ``near_miss_matmul`` (EinsumDense, attention's
scores, Einsum) beside it, and ``near_miss_norm`` (layer normalisation written as arithmetic). For each, *what form the pattern
needs* is read from the remapper's rules for that op, device, dtype and flags (``prediction.predict``
over the chain the near-miss would have to be), and so are the settings that might fuse it.

A setting is only a candidate: ``report.near_misses[].changes`` stays empty until the engine has
run the configuration and seen the chain fuse (``engine.fix_check``; ``apply_checks`` below decides
from what it saw). Until then, and when no setting fuses it, the fix is the code change.
"""

from __future__ import annotations

from collections import defaultdict

from ..model.graph import Graph
from . import near_miss_chain, near_miss_norm
from .fusion import fused_label
from .near_miss_rules import Where, consumers

__all__ = ["Where", "apply_checks", "candidate_settings", "fused_with", "near_misses"]

NO_SETTING = "no setting fuses it here"


def near_misses(optimized: Graph, where: Where, traced: Graph | None = None) -> list[dict]:
    users = consumers(optimized)
    found: list[dict] = []
    taken: set[str] = set()
    for finder in (near_miss_norm.layer_norms, near_miss_chain.after_contractions):
        for miss in finder(optimized, users, where, traced):
            # What stopped the chain (the node after its head) is named by one near-miss at most; a node
            # further on may end two (the AddN that takes two batch norms and a residual).
            if not taken & set(miss["nodes"][1:2]):
                found.append(miss)
                taken |= set(miss["nodes"][1:2])
    return found


def candidate_settings(misses: list[dict]) -> list[list[dict]]:
    """Every distinct setting alternative the near-misses ask to run, most asked first."""
    count: dict[str, int] = defaultdict(int)
    first: dict[str, list[dict]] = {}
    for miss in misses:
        for alternative in miss.get("candidates") or ():
            key = _key(alternative)
            count[key] += 1
            first.setdefault(key, alternative)
    return [first[k] for k in sorted(first, key=lambda k: -count[k])]


def fused_with(nodes: list[str], fusions: list[dict]) -> str | None:
    """The fused op one fusion of another run made of all of ``nodes`` (by name), if one did."""
    wanted = set(nodes)
    for fusion in fusions:
        if wanted <= set(fusion.get("absorbed") or ()) | {fusion["node"]}:
            return fused_label(fusion["op"], fusion.get("fused_ops"))
    return None


def apply_checks(misses: list[dict], outcomes: list[tuple[list[dict], list[dict] | None]]) -> list[dict]:
    """Settle each near-miss's fix from the runs of its candidate settings (``outcomes``: each alternative
    with the fusions its run made, None where it was not run). A setting is offered only where its run
    fused the chain; otherwise the near-miss says that no setting fuses it here, and the code change."""
    runs = {_key(alt): fusions for alt, fusions in outcomes}
    settled = []
    for miss in misses:
        miss = dict(miss)
        tried, fixed = [], None
        for alternative in miss.get("candidates") or ():
            fusions = runs.get(_key(alternative))
            if fusions is None:
                continue
            made = fused_with(_chain_nodes(miss), fusions)
            tried.append({"settings": alternative, "fused": made})
            if made and fixed is None:
                fixed = (alternative, made)
        miss["tried"] = tried
        if fixed is not None:
            settings, made = fixed
            words = ", ".join(f"{s['name']}={s['value']}" if s["kind"] == "env" else
                              f"{s['name']} {s['value'] or 'default'}" for s in settings)
            miss.update(changes=[settings], verified=True, fused_with_fix=made,
                        fix=f"set {words} (run here: it fuses into {made})")
        else:
            code = f"; {miss['code_change']}" if miss.get("code_change") else ""
            miss.update(changes=[], verified=False, fused_with_fix=None,
                        fix=NO_SETTING + (f" ({_tried_text(tried)} ran and left it unfused)" if tried else "") + code)
            if not tried and miss.get("candidates"):
                miss["verified"] = None  # candidates beyond the bound of configurations run: not known
                miss["fix"] = "not checked here (more configurations than the engine runs for one model)" + code
        settled.append(miss)
    return settled


def _key(settings: list[dict]) -> str:
    """One alternative of settings, whatever their order: the same key in the plan and in the runs' outcomes."""
    return repr(sorted((s["kind"], s["name"], str(s["value"])) for s in settings))


def _tried_text(tried: list[dict]) -> str:
    return "; ".join(", ".join(f"{s['name']}={s['value']}" for s in t["settings"]) for t in tried)


def _chain_nodes(miss: dict) -> list[str]:
    """The nodes that must end in one fused node for the chain to count as fused: the contraction (or the
    fused contraction) and what was left out after it."""
    return miss["nodes"][:2]
