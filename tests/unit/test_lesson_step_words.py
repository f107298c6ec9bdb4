"""Every seed lesson's step says what its own settings are: the page's verdict line names the model as it runs
(a batch norm in training is not called "(inference)"), the device and oneDNN as the step sets them, and the
Why tab's checklist for the step's settings (analysis.prediction, the same rules the tab shows) neither calls
a fusion the step expects impossible nor advises a change that the step's own expectations contradict.

No TensorFlow here: the lessons' claims about TensorFlow are checked by ``explorer lessons --check`` and
tests/e2e/test_lessons.py; this is about the words the page puts beside them.
"""

from __future__ import annotations

import pytest

from explorer.analysis.preconditions import Context
from explorer.analysis.prediction import predict
from explorer.errors import SpecError
from explorer.model.lesson import read_lesson, seed_lessons
from explorer.model.spec import resolve
from explorer.ui.sidebar import Choice, device_label

STEPS = [pytest.param(lesson, number, step, id=f"{lesson.id}-{number}")
         for lesson in seed_lessons().values() for number, step in enumerate(lesson.steps, 1)]
ALL_CPU_FLAGS = {"avx512f", "avx512bw", "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_fp16", "avx512_fp16",
                 "avx_ne_convert"}


def _onednn(config) -> bool | None:
    """oneDNN as the step sets it (None: the CPU's default, which the step leaves to the machine)."""
    value = dict(config.env).get("TF_ENABLE_ONEDNN_OPTS")
    return None if value is None else value == "1"


@pytest.mark.parametrize("lesson,number,step", STEPS)
def test_the_verdict_lines_words_are_the_steps_settings(lesson, number, step):
    experiment = step.experiment
    model = resolve(experiment.model)
    label = Choice(spec=experiment.model, config=experiment.config, model=model).label
    training = getattr(model, "p", {}).get("training")
    if training:
        assert "inference" not in label, (label, "the step trains")
    elif hasattr(model, "chain") and "training" in model.chain.param_names():
        assert "training" not in label, (label, "the step runs in inference")
    device = device_label(experiment.config.device)
    if experiment.config.device.startswith("gpu-sim"):
        assert "simulated" in device
    verdict = (step.expect.verdict if step.expect else None)
    if verdict == "not fused":
        assert not step.expect.made and step.expect.fusions in (None, 0)
    if verdict in ("fused", "partly fused"):
        assert step.expect.fusions != 0


def _has_checklist(step) -> bool:
    """The Why tab draws a checklist for an op chain whose oneDNN setting the step fixes (a Keras stack has
    none, and a CPU step that leaves oneDNN to the machine's default has rules that depend on the machine)."""
    model = resolve(step.experiment.model)
    if getattr(model, "chain", None) is None or model.chain.kind != "chain":
        return False
    return not (step.experiment.config.device == "cpu" and _onednn(step.experiment.config) is None)


CHECKLIST_STEPS = [p for p in STEPS if p.values[2].expect and _has_checklist(p.values[2])]


def test_most_steps_that_expect_something_have_a_checklist():
    assert len(CHECKLIST_STEPS) >= len([p for p in STEPS if p.values[2].expect]) // 2


@pytest.mark.parametrize("lesson,number,step", CHECKLIST_STEPS)
def test_the_why_tabs_checklist_agrees_with_what_the_step_expects(lesson, number, step):
    experiment = step.experiment
    model = resolve(experiment.model)
    onednn = _onednn(experiment.config)
    ctx = Context(model.chain, model.p, experiment.config.device, bool(onednn), dict(experiment.config.env),
                  dict(experiment.config.grappler), ALL_CPU_FLAGS)
    prediction = predict(ctx)
    expected = step.expect
    made = {f"{op} [{', '.join(ops)}]" if ops else op for op, ops in prediction.fusions}
    for fused in expected.made or ():
        assert fused in made, (fused, made, [c.detail for c in prediction.checks if c.ok is False])
    if expected.fusions == 0 or expected.verdict == "not fused":
        assert not prediction.fusions, prediction.fusions
    failing = [c for c in prediction.checks if c.ok is False]
    for check in failing:  # no finding says "never" of a pair that this lesson fuses on the same device elsewhere
        assert "never fuses" not in check.detail, check.detail
    if model.p.get("training"):  # the first thing to say of a batch norm in training is that it trains
        assert any(c.name == "inference mode" for c in failing), [c.name for c in failing]


def _file(**step_changes) -> str:
    import json

    good = {"title": "a", "experiment": "preset=matmul_bias_relu", "text": "b"}
    return json.dumps({"lesson": 1, "id": "x", "title": "t", "steps": [good, {**good, **step_changes}]})


def test_a_step_may_open_only_a_tab_the_page_has():
    from explorer.model.lesson import LOOK_TABS
    from explorer.ui.tabs import TABS

    assert LOOK_TABS == tuple(tab.id for tab in TABS)
    with pytest.raises(SpecError) as refused:
        read_lesson(_file(look={"tab": "graph"}))
    assert refused.value.field == "steps[1].look.tab" and "'graph' is not a tab of the page" in str(refused.value)


def test_a_refusal_names_the_step_as_the_panel_counts_it():
    with pytest.raises(SpecError) as refused:
        read_lesson(_file(text=""))
    assert str(refused.value).startswith("steps[1].text: ") and str(refused.value).endswith("(step 2)")
