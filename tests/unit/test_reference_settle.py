"""Judging a check whose reference ran in a second worker (engine.reference.settle): the two sides' .npz files
and answers, as the workers write them, make the same verdicts as a check made in one worker."""

from __future__ import annotations

import numpy as np
import pytest

from explorer.analysis.agreement import HEADLINES
from explorer.engine.reference import settle


def pending(count: int = 1, edges: list | None = None) -> dict:
    basis = {"ops": ["MatMul"], "tf32": False, "computed": ["float32"], "random": [], "varies": None}
    return {"agreement": {"status": "pending", "reference": "beside", "inputs": {"how": "seeded"}, "basis": basis,
                          "count": count, "edges": edges or [], "seconds": 0.01},
            "executed_tensors": {"fused": [{"name": "fused"}]}, "timings": {"agreement_s": 0.01}}


def reference(count: int = 1, error: dict | None = None, edges: list | None = None) -> dict:
    return {"error": error, "count": 0 if error else count, "edges": edges or [], "shapes": [[2, 3]],
            "executed_tensors": [{"name": "unfused"}], "seconds": 0.5}


def write(path, **arrays) -> str:
    np.savez(path, **arrays)
    return str(path)


@pytest.fixture
def outputs(tmp_path):
    base = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
    return tmp_path, base


def test_equal_outputs_agree_and_the_unfused_graph_joins_the_traffic_account(outputs):
    folder, base = outputs
    result = settle(pending(), reference(), write(folder / "f.npz", main_0=base), write(folder / "r.npz", main_0=base),
                    waited=0.2)
    check = result["agreement"]
    assert check["status"] == "agrees" and check["headline"] is None and check["reference_seconds"] == 0.5
    assert result["executed_tensors"] == {"fused": [{"name": "fused"}], "unfused": [{"name": "unfused"}]}
    assert check["seconds"] == pytest.approx(0.21) and result["timings"]["agreement_s"] == check["seconds"]


def test_outputs_beyond_tolerance_differ(outputs):
    folder, base = outputs
    check = settle(pending(), reference(), write(folder / "f.npz", main_0=base + 0.5),
                   write(folder / "r.npz", main_0=base), waited=0.0)["agreement"]
    assert check["status"] == "differs" and check["headline"] == HEADLINES["differs"]
    assert check["comparison"]["outputs"][0]["max_abs"] == pytest.approx(0.5)


def test_a_failed_reference_leaves_the_check_unchecked_and_no_traffic_account(outputs):
    folder, base = outputs
    error = {"type": "InvalidArgumentError", "message": "no kernel", "node": None, "op": None}
    result = settle(pending(), reference(error=error), write(folder / "f.npz", main_0=base),
                    write(folder / "r.npz"), waited=0.0)
    assert result["agreement"]["status"] == "unchecked" and "executed_tensors" not in result


def test_an_edge_that_differs_speaks_for_a_check_whose_seeded_inputs_agree(outputs):
    folder, base = outputs
    fused_edges = [{"case": "zeros", "inputs": "every input zero", "shapes": [[2, 3]], "error": None, "count": 1,
                    "seconds": 0.01}]
    reference_edges = [{"case": "zeros", "error": None, "count": 1}]
    check = settle(pending(edges=fused_edges), reference(edges=reference_edges),
                   write(folder / "f.npz", main_0=base, zeros_0=np.full((2, 3), 7, np.float32)),
                   write(folder / "r.npz", main_0=base, zeros_0=np.zeros((2, 3), np.float32)), waited=0.0)["agreement"]
    assert check["status"] == "differs" and check["summary"].startswith("on edge inputs (zeros")
    assert [e["status"] for e in check["edges"]] == ["differs"]

