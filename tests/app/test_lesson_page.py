"""A lesson on the real page (AppTest, real workers): after a change that cannot run, the panel still offers the
way back to the step its text is about."""

from __future__ import annotations

from explorer.model.lesson import seed_lessons
from explorer.ui import state


def _reset_buttons(at):
    return [b for b in at.button if b.key == "lesson.reset"]


def test_back_to_the_step_after_a_change_that_cannot_run(make_app):
    at = make_app()
    at.query_params["lesson"] = "gelu-fusion"
    at.run()
    assert not at.exception
    assert at.session_state[state.LESSON] == "gelu-fusion" and not _reset_buttons(at)
    step = seed_lessons()["gelu-fusion"].steps[0]
    m = at.number_input(key=state.param_key("matmul_bias_gelu_approx", "m"))
    assert m.value == step.experiment.model["params"]["m"]
    # sizes past the limit: refused before anything runs, so there is no result to compare with the step
    m.set_value(1 << 20)
    at.number_input(key=state.param_key("matmul_bias_gelu_approx", "k")).set_value(1 << 20).run()
    assert not at.exception
    assert any(e.value.startswith("sizes:") for e in at.error), [e.value for e in at.error]
    [back] = _reset_buttons(at)
    back.click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.number_input(key=state.param_key("matmul_bias_gelu_approx", "m")).value == step.experiment.model["params"]["m"]
    assert not _reset_buttons(at)
