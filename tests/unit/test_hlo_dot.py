"""present.hlo_dot on XLA modules captured from the real worker: one cluster per fusion, holding the
fused computation's instructions; escaped labels; DOT that parses and lays out; link groups."""

from __future__ import annotations

import copy
import html
import json
import re
from pathlib import Path

import pydot
import pytest

from explorer.analysis import xla_fusion
from explorer.present import hlo_dot
from explorer.present.dot import html_id
from explorer.present.svg import to_svg

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:pydot")
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "xla"
CASES = sorted(p.stem.removeprefix("xla__") for p in FIXTURES.glob("xla__*.json"))
NASTY = 'we"ird <name> & {brace} \\back\\N ]'


def annotated(case: str) -> dict:
    return xla_fusion.annotate_xla(json.loads((FIXTURES / f"xla__{case}.json").read_text()))


def clusters(text: str) -> dict[str, list[str]]:
    """cluster element id -> element ids of the nodes drawn right inside it, for every cluster at any depth."""
    found: dict[str, list[str]] = {}

    def walk(graph) -> None:
        for sub in graph.get_subgraphs():
            found[sub.get("id").strip('"')] = [n.get("id").strip('"') for n in sub.get_nodes()]
            walk(sub)

    walk(pydot.graph_from_dot_data(text)[0])
    return found


@pytest.mark.parametrize("case", CASES)
def test_one_cluster_per_fusion_holding_its_computed_instructions(case):
    result = annotated(case)
    module = result["module"]
    comps = {c["name"]: c for c in module["computations"]}
    drawn = clusters(hlo_dot.to_dot(module, result["fusions"]))
    # the entry's fusions, and those of a loop's body and of a conditional's branches, each in its own box (those
    # of a loop's condition, a comparison, are listed only)
    conditions = {ins["called_computations"][1] for c in module["computations"] for ins in c["instructions"]
                  if ins["opcode"] == "while"}
    by_name = {ins["name"]: ins for c in module["computations"] if c["name"] not in conditions
               for ins in c["instructions"]}
    fusions = [(i, g) for i, g in enumerate(result["fusions"]) if g["opcode"] == "fusion" and g["node"] in by_name]
    bodies = [cid for cid in drawn if cid.startswith(hlo_dot.PREFIX + "body-")]
    assert len(drawn) == len(fusions) + len(bodies)
    assert len(bodies) == sum({"while": 1, "conditional": len(ins["called_computations"])}.get(ins["opcode"], 0)
                              for ins in by_name.values())
    for i, group in fusions:
        body = comps[by_name[group["node"]]["called_computations"][0]]["instructions"]
        computed = {hlo_dot.instruction_id(ins["name"]) for ins in body
                    if ins["opcode"] not in ("parameter", "constant")
                    and not (ins["opcode"] == "broadcast" and all(
                        next(x for x in body if x["name"] == op)["opcode"] == "constant" for op in ins["operands"]))}
        assert set(drawn[hlo_dot.cluster_id(i)]) == computed


@pytest.mark.parametrize("case", CASES)
def test_the_dot_lays_out(case):
    result = annotated(case)
    svg = to_svg(hlo_dot.to_dot(result["module"], result["fusions"], title="XLA"))
    assert "<svg" in svg
    svg = html.unescape(svg)  # Graphviz writes '-' in ids as &#45;
    for i, group in enumerate(result["fusions"]):
        if group["opcode"] == "fusion" and (group["within"] or {}).get("part") != "condition":
            assert f'id="{hlo_dot.cluster_id(i)}"' in svg


def test_a_loops_body_and_a_conditionals_branches_are_drawn_beside_them_fed_by_a_dashed_edge():
    result = annotated("while_cond")
    text = hlo_dot.to_dot(result["module"], result["fusions"])
    graph = pydot.graph_from_dot_data(text)[0]
    boxes = {sub.get("label"): sub for sub in graph.get_subgraphs() if "body-" in sub.get("id")}
    labels = sorted(label.removeprefix("<<i>").split("</i>")[0] for label in boxes)
    assert labels == ["body of StatefulPartitionedCall/while", "branch 0 of StatefulPartitionedCall/cond",
                      "branch 1 of StatefulPartitionedCall/cond"]
    body = next(sub for label, sub in boxes.items() if "body of" in label)
    inner = {sub.get("id").strip('"') for sub in body.get_subgraphs()}  # the body's fusions, in its box
    index = {g["node"]: i for i, g in enumerate(result["fusions"])}
    assert {hlo_dot.cluster_id(index["dot_add_fusion"]), hlo_dot.cluster_id(index["maximum_bitcast_fusion"])} <= inner
    ids: dict[str, str] = {}

    def collect(g) -> None:
        ids.update({n.get("id").strip('"'): n.get_name() for n in g.get_nodes() if n.get("id")})
        for sub in g.get_subgraphs():
            collect(sub)

    collect(graph)
    dashed = {(e.get_source(), e.get_destination()) for e in graph.get_edges() if e.get("style") == "dashed"}
    assert (ids[hlo_dot.instruction_id("while")], ids[hlo_dot.instruction_id("arg_tuple.1")]) in dashed
    assert (ids[hlo_dot.instruction_id("cond.4")], ids[hlo_dot.instruction_id("arg_tuple.7")]) in dashed


def test_names_are_escaped():
    result = annotated("matmul_bias_gelu_approx")
    module = copy.deepcopy(result["module"])
    for comp in module["computations"]:
        for ins in comp["instructions"]:
            if ins["op_name"] == "Gelu/Tanh":
                ins["op_name"] = NASTY
    text = hlo_dot.to_dot(module, result["fusions"], title=NASTY)
    labels = re.findall(r"label=<(.*?)>[,;\]]", text)
    assert labels and not any("<name>" in label for label in labels)
    assert any("&lt;name&gt;" in label for label in labels)
    assert pydot.graph_from_dot_data(text)
    assert "<svg" in to_svg(text)


def test_link_groups_join_xla_groups_to_grappler_nodes_by_tf_op():
    result = annotated("matmul_bias_gelu_approx")
    nodes = [n["name"] for n in result["traced"]["nodes"]]
    gelu = [n for n in nodes if n.startswith("Gelu/")]
    # Grappler's view of this model: MatMul + BiasAdd + the GELU ops into one _FusedMatMul named Gelu/mul_3.
    grappler_fusions = [{"node": "Gelu/mul_3", "absorbed": ["MatMul", "BiasAdd"] + gelu}]
    after = ["args_0", "args_1", "args_2", "Gelu/mul_3", "Identity"]
    groups = hlo_dot.link_groups(result["fusions"], grappler_fusions, after, "a-")
    assert len(groups) == len(result["fusions"])
    for g, xla in zip(groups, result["fusions"]):
        assert g["before"] == [html_id("Gelu/mul_3", "a-")]
        assert g["label"] == xla["description"]
        assert re.match(r"fx-x-", g["after"][0])
