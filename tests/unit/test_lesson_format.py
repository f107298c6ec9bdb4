"""The lesson format: the seed lessons read, a malformed file is refused naming the field, a step is an experiment,
and a step's claims are checked against a result (no TensorFlow here: results are recorded fixtures)."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from explorer.analysis.lesson_check import made_words, mismatches
from explorer.errors import SpecError
from explorer.model.experiment import Experiment
from explorer.model.lesson import Expect, parse_lesson, read_lesson, seed_lessons

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
SEEDS = {"gelu-fusion", "fused-ops", "conv-bias-relu", "xla-gelu", "keras3-batchnorm"}

GOOD = {
    "lesson": 1, "id": "my-class", "title": "A class",
    "steps": [
        {"title": "One", "experiment": "preset=matmul_bias_relu&TF_ENABLE_ONEDNN_OPTS=0", "text": "It fuses.",
         "ask": "Why?", "look": {"tab": "graphs", "stages": "traced-optimized", "nodes": {"optimized": ["_FusedMatMul"]}},
         "expect": {"fusions": 1, "made": ["_FusedMatMul [BiasAdd, Relu]"], "verdict": "fused"}},
        {"title": "Two", "experiment": "http://localhost:8501/?preset=conv2d_bias_relu&device=gpu-sim:ampere",
         "text": "On a GPU.", "look": {"tab": "why"}},
    ],
}


def test_the_seed_lessons_are_there_and_read():
    lessons = seed_lessons()
    assert SEEDS <= set(lessons)
    for lesson in lessons.values():
        assert len(lesson.steps) >= 4, lesson.id
        for number, step in enumerate(lesson.steps, 1):
            assert step.ask and step.expect.claims, (lesson.id, number)  # a question for the room; claims checked
            exp = lesson.experiment(number)
            assert (exp.lesson, exp.step) == (lesson.id, number)
            # a CPU step says which oneDNN it means: the default differs between CPUs
            if exp.config.device == "cpu":
                assert "TF_ENABLE_ONEDNN_OPTS" in exp.config.env_dict, (lesson.id, number)


def test_a_step_is_the_experiment_its_link_holds():
    lesson = parse_lesson(GOOD)
    first = lesson.experiment(1, present=True)
    assert first.model["preset"] == "matmul_bias_relu" and first.config.env_dict == {"TF_ENABLE_ONEDNN_OPTS": "0"}
    assert (first.tab, first.stages, first.present, first.lesson, first.step) == (
        "graphs", "traced->optimized", True, "my-class", 1)
    second = lesson.experiment(2)
    assert second.config.device == "gpu-sim:ampere" and second.tab == "why"  # a whole link is read too
    assert lesson.step(99)[0] == 2 and lesson.step(0)[0] == 1
    query = second.to_query(Experiment())
    assert query["lesson"] == "my-class" and query["step"] == "2"
    assert len(lesson.configs()) == 2


def _broken(path: str, value):
    data = copy.deepcopy(GOOD)
    node = data
    keys = [int(k) if k.isdigit() else k for k in path.replace("[", ".").replace("]", "").split(".")]
    for key in keys[:-1]:
        node = node[key]
    if value is KeyError:
        del node[keys[-1]]
    else:
        node[keys[-1]] = value
    return data


@pytest.mark.parametrize("path, value, field", [
    ("lesson", 2, "lesson"),
    ("id", "Not An Id", "id"),
    ("title", KeyError, "title"),
    ("steps", [], "steps"),
    ("steps[1].text", KeyError, "steps[1].text"),
    ("steps[0].title", "", "steps[0].title"),
    ("steps[0].colour", "red", "steps[0].colour"),
    ("steps[0].experiment", "preset=no_such_preset", "steps[0].experiment"),
    ("steps[0].experiment", "preset=matmul_bias_relu&TF_USE_CUBLASLT=7", "steps[0].experiment"),
    ("steps[0].experiment", "preset=matmul_bias_relu&tab=bench", "steps[0].experiment"),
    ("steps[0].look.tab", "Not a tab!", "steps[0].look.tab"),
    ("steps[0].look.stages", "sideways", "steps[0].look.stages"),
    ("steps[0].look.nodes", {"partitioned": ["MatMul"]}, "steps[0].look.nodes.partitioned"),
    ("steps[0].look.nodes", {"traced": ["<script>"]}, "steps[0].look.nodes.traced[0]"),
    ("steps[0].expect.fusions", -1, "steps[0].expect.fusions"),
    ("steps[0].expect.verdict", "mostly", "steps[0].expect.verdict"),
    ("steps[0].expect.made", "_FusedMatMul", "steps[0].expect.made"),
])
def test_a_malformed_lesson_is_refused_naming_the_field(path, value, field):
    with pytest.raises(SpecError) as refused:
        parse_lesson(_broken(path, value))
    assert refused.value.field == field, str(refused.value)


def test_a_file_that_is_not_a_lesson_is_refused_in_one_line():
    for text, words in ((b"\xff\xfe", "not a text file"), (b"{", "not valid JSON"), (b"[]", '"lesson": 1'),
                        (b" " * (300 << 10), "KiB")):
        with pytest.raises(SpecError, match=words):
            read_lesson(text)
    assert read_lesson(json.dumps(GOOD).encode()).id == "my-class"


def _result(name: str) -> dict:
    """A recorded worker result with the engine's analysis added (the fusions found), as the page has it."""
    from explorer.analysis.annotate import annotate

    return annotate(json.loads((FIXTURES / name).read_text()))


def test_a_steps_claims_are_checked_against_the_result():
    fused = _result("matmul_bias_gelu_approx__onednn.json")
    assert [made_words(f) for f in fused["fusions"]] == ["_FusedMatMul [BiasAdd, GeluApproximate]"]
    holds = Expect(fusions=1, made=("_FusedMatMul [BiasAdd, GeluApproximate]",), has={"traced": ("Tanh",)},
                   lacks={"optimized": ("Tanh",)})
    assert mismatches(holds, fused) == []
    stock = _result("matmul_bias_gelu_approx__stock.json")
    wrong = mismatches(holds, stock)
    assert any("it says Grappler makes _FusedMatMul [BiasAdd, GeluApproximate]" in w for w in wrong)
    assert any("has no Tanh" in w for w in wrong)
    assert mismatches(Expect(has={"executed": ("_MklNativeFusedMatMul",)}), stock) != []
