"""The shared part of the near-miss finder: the configuration the rules read, the rules' verdict on a
chain at a node (``prediction.predict``), and one near-miss as the report carries it."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any
from dataclasses import dataclass, field

from ..model.chain import Chain
from ..model.graph import Graph, Node
from .prediction import predict
from ..model.results import SettingDict
from .preconditions import Context

SETTING_KINDS = ("env", "grappler", "device")  # what the engine can change on a model it did not write


@dataclass
class Where:
    """What the rules need to know about the model and its configuration."""

    device: str = "cpu"
    onednn: bool = False
    env: dict = field(default_factory=dict)
    switches: dict = field(default_factory=dict)
    cpu_flags: set = field(default_factory=set)

    @staticmethod
    def of(result: Mapping[str, Any]) -> "Where":
        config, fp = result.get("config") or {}, result.get("fingerprint") or {}
        return Where(config.get("device", "cpu"), bool(fp.get("onednn")), dict(config.get("env") or {}),
                     dict(config.get("grappler") or {}), set(fp.get("cpu_flags") or ()))


def rules(chain: Chain, node: Node, where: Where, graph: Graph | None = None
          ) -> tuple[list[str], list[list[SettingDict]], list[str]]:
    """The remapper's failing conditions for ``chain`` at ``node`` here: (what they need, in words; the
    alternatives made only of settings, as candidates to run; the code changes the other fixes name). ``graph``:
    where the node's filter is read from (a GPU's fused convolution needs a spatial one)."""
    p = {"dtype": node.dtype or "float32", "data_format": node.attr.get("data_format", "NHWC") or "NHWC",
         "filter_size": filter_size(node, graph)}
    ctx = Context(chain, p, where.device, where.onednn, where.env, where.switches, where.cpu_flags)
    failing = [check for check in predict(ctx).checks if check.ok is False]
    # "needs" is followed by what is needed: the condition, then why it fails here (a check's detail is a statement)
    needs = [f"{check.name}: {check.detail}" for check in failing]
    candidates: list[list[SettingDict]] = []
    code: list[str] = []
    for check in failing:
        found = False
        for alternative in check.fix.changes():
            settings = [s for s in alternative if not (s["kind"] == "param" and p.get(s["name"]) == s["value"])]
            if settings and all(s["kind"] in SETTING_KINDS for s in settings):
                found = True
                if settings not in candidates:
                    candidates.append(settings)
        if not found and check.fix.text and check.fix.text not in code:
            code.append(check.fix.text)  # a change to the model's code: said in words
    return needs, candidates, code


def filter_size(node: Node, graph: Graph | None) -> int | None:
    """A convolution's filter size as the checklist's parameter: 1 for a 1×1 filter, its larger side otherwise; None
    where the graph does not say (then no condition on it is claimed to fail)."""
    if graph is None or "Conv2D" not in node.op or len(node.data_inputs) < 2:
        return None
    source = graph.get(node.data_inputs[1].src)
    dims = (source.dims if source is not None else None) or []
    if len(dims) != 4 or not all(d.isdigit() for d in dims[:2]):
        return None
    return max(int(dims[0]), int(dims[1]))


def record(kind: str, nodes: list[str], chain_text: str, form: str, needs: str, code_change: str,
           candidates: Sequence[list[SettingDict]] = (), *, after_fused: bool = False) -> dict:
    """One near-miss as the report carries it. ``fix`` and ``changes`` are settled by ``apply_checks``. A chain of
    two forms carries the second's kind in ``also`` (a dilated convolution's batch norm), for the fixes to choose."""
    return {"kind": kind, "nodes": list(nodes), "chain": chain_text, "form": form, "needs": needs,
            "fix": code_change, "changes": [], "candidates": [list(c) for c in candidates],
            "code_change": code_change, "verified": None if candidates else False, "after_fused": after_fused}


def consumers(graph: Graph) -> dict[str, list[Node]]:
    out: dict[str, list[Node]] = defaultdict(list)
    for node in graph.nodes:
        for edge in node.data_inputs:
            out[edge.src].append(node)
    return out
