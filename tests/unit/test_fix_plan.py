"""Which fixes apply to which near-misses, what a fix resolved, and the per-op time's ranking and colours."""

from __future__ import annotations

import pytest

from explorer.analysis import fix_plan, op_time
from explorer.errors import SpecError


def miss(kind: str, *nodes: str, **extra) -> dict:
    return {"kind": kind, "chain": kind, "nodes": list(nodes), **extra}


def result_with(misses: list[dict], variables: bool) -> dict:
    traced = [{"name": "w/read", "op": "ReadVariableOp"}] if variables else [{"name": "w", "op": "Const"}]
    return {"report": {"near_misses": misses}, "stages": {"traced": {"nodes": traced}}}


def test_fixes_are_chosen_by_the_near_misses_kinds_and_never_for_what_no_rewrite_keeps():
    misses = [miss("batchnorm-as-arithmetic", "c", "m", "a"), miss("activation-left-out", "c2", "s")]
    chosen, skipped = fix_plan.choose(result_with(misses, variables=True))
    assert chosen == ["fold-batchnorm", "freeze"]
    assert set(skipped) == {"bias-add", "bias-before-reshape", "dilated-conv", "squeeze-after-activation"}
    chosen, _ = fix_plan.choose(result_with([miss("dilated-as-space-to-batch", "c", "b2s", "b")], variables=False))
    assert chosen == ["dilated-conv"]
    # an atrous convolution followed by a batch norm: both rewrites make its bias
    atrous = miss("dilated-as-space-to-batch", "c", "b2s", "m", "a", also=["batchnorm-as-arithmetic"])
    assert fix_plan.choose(result_with([atrous], variables=False))[0] == ["dilated-conv", "fold-batchnorm"]
    chosen, skipped = fix_plan.choose(result_with(misses, variables=False))
    assert chosen == ["fold-batchnorm"] and "constants already" in skipped["freeze"]
    assert fix_plan.choose(result_with([], True), ["bias-add"])[0] == ["bias-add"]  # asked for: run, says what it found
    with pytest.raises(SpecError, match="no fix 'fold'; the fixes are bias-add, bias-before-reshape"):
        fix_plan.choose(result_with([], True), ["fold"])
    assert fix_plan.variants(["fold-batchnorm", "freeze"]) == [
        {"name": "all", "fixes": ["fold-batchnorm", "freeze"]}, {"name": "fold-batchnorm", "fixes": ["fold-batchnorm"]},
        {"name": "freeze", "fixes": ["freeze"]}]


def test_a_near_miss_is_resolved_when_none_of_its_nodes_is_in_a_near_miss_after():
    before = [miss("batchnorm-as-arithmetic", "f/conv", "f/bn/mul_1", "f/bn/add_1"),
              miss("reshape-before-bias", "f/d/MatMul", "f/d/Tensordot", "f/d/BiasAdd")]
    # A fixed SavedModel's nodes sit one call scope deeper.
    after = [miss("reshape-before-bias", "StatefulPartitionedCall/f/d/MatMul", "StatefulPartitionedCall/f/d/Tensordot")]
    assert fix_plan.resolved(before, after) == before[:1]
    # given the fixed model's fusions, a near-miss is resolved only where its contraction was fused: one gone
    # because constant folding removed a zero bias that freezing exposed left its Conv2D unfused
    fusions = [{"node": "StatefulPartitionedCall/f/bn/add_1", "absorbed": ["StatefulPartitionedCall/f/conv"]}]
    assert fix_plan.resolved(before, after, fusions) == before[:1]
    assert fix_plan.resolved(before, after, []) == []
    two = [miss("k", "m/conv1/Conv2D"), miss("k", "m/d/Tensordot/MatMul")]
    assert fix_plan.scope_of(two) == "m/" and fix_plan.layers(two, "m/") == "conv1, d/Tensordot"


def test_near_misses_are_ranked_by_time_and_the_graph_coloured_by_it():
    misses = [miss("a", "x", "y", time_ms=0.5), miss("b", "z", time_ms=2.0), miss("c", "w")]
    assert [m["kind"] for m in op_time.ranked(misses)] == ["b", "a", "c"]
    colours, slowest, largest = op_time.colour_scale({"a": 4.0, "b": 1.0, "c": 0.0}, top=2)
    assert slowest == ["a", "b"] and largest == 4.0
    assert colours["a"] == "#e34a33" and colours["c"] == "#fff7ec" and colours["b"] not in (colours["a"], colours["c"])


def test_freeze_applies_to_reads_outside_loops_and_branches_only():
    # freeze rewrites the reads of the model's own graph; a loop's body and a branch stay functions of their own
    def traced(*names):
        return {"stages": {"traced": {"nodes": [{"name": n, "op": "ReadVariableOp"} for n in names]}}}

    inside = traced("call/while/body/_6/while/ReadVariableOp", "call/cond/then/_33/cond/ReadVariableOp")
    chosen, skipped = fix_plan.choose(inside)
    assert "freeze" not in chosen and "only inside its loops' or branches' functions" in skipped["freeze"]
    assert "freeze" in fix_plan.choose(traced("call/dense/ReadVariableOp", "call/while/body/_6/x/ReadVariableOp"))[0]
    assert fix_plan.choose(traced())[1]["freeze"].startswith("the model reads no variables")
