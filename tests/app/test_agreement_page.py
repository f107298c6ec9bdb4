"""The page says "The fusion breaks this model" above everything else, and still shows the graphs."""

from __future__ import annotations

from explorer.ui import state


def broken_chain(make_app):
    # TF 2.21 with oneDNN on (make_app's configuration) fuses this into _FusedConv2D [FusedBatchNorm, Tanh],
    # which no kernel implements.
    at = make_app(**{state.MODE: "chain"}).run()
    at.selectbox(key=state.chain_key("contraction")).set_value("Conv2D")
    at.selectbox(key=state.chain_key("bias")).set_value("none")
    at.selectbox(key=state.chain_key("norm")).set_value("FusedBatchNorm")
    return at.selectbox(key=state.chain_key("activation")).set_value("Tanh").run()


def test_a_fusion_that_breaks_the_model_is_the_first_thing_the_page_says(make_app):
    at = broken_chain(make_app)
    assert not at.exception
    errors = [e.value for e in at.error]
    assert errors and errors[0].startswith("**The fusion breaks this model.**"), errors
    assert "Tanh (_FusedConv2D)" in errors[0] and "with the remapper off it runs" in errors[0]
    # above the summary line: the first thing of the main view after the header
    order = [str(getattr(e, "value", "")) for e in at.main]
    verdict = next(i for i, v in enumerate(order) if v.startswith("**The fusion breaks this model.**"))
    summary = next(i for i, v in enumerate(order) if "found by Grappler" in v)
    assert verdict < summary
    # the graphs are still there: Grappler's output for the failed call, its fusion listed beside them
    fused = [m.value for m in at.markdown if m.value.startswith("- `") and "→" in m.value]
    assert any("_FusedConv2D" in line and "Tanh" in line for line in fused), fused

def test_a_model_that_agrees_says_so_quietly(make_app):
    at = make_app().run()
    assert not at.exception and not at.error
    assert any("Fused and unfused outputs agree" in c.value for c in at.caption)
