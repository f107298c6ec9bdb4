"""No false alarm on real networks: each one's fused graph computes what its unfused graph does, oneDNN on and
off, as the agreement check every inspect runs says (served with the batch open, so the edge inputs run too)."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.tf

NETWORKS = ("mobilenetv3small", "efficientnetb0", "resnet50", "convnexttiny", "transformer", "oldstyle")


@pytest.mark.parametrize("onednn", ["0", "1"])
@pytest.mark.parametrize("name", NETWORKS)
def test_real_networks_agree_with_their_unfused_graph(inspected, name, onednn):
    result = inspected(name, onednn)
    check = result["agreement"]
    assert check["status"] == "agrees", check["summary"]
    if name != "transformer":  # (served with its batch open it fuses nothing: the check compares two equal graphs)
        assert result["fusions"] or onednn == "0", "the check compared a graph that fused something"
    assert check["comparison"]["agree"] and check["comparison"]["count"]["fused"] >= 1
    # the batch is open in the signature: the edge inputs were tried and agreed (or the model refuses them both ways)
    cases = {e["case"]: e["status"] for e in check["edges"]}
    assert {"zeros", "large"} <= set(cases), cases
    assert all(status in ("agrees", "model_fails") for status in cases.values()), check["edges"]
