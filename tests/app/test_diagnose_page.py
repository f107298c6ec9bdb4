"""The page's diagnosis under the "fusion breaks this model" banner: one button finds the fused node responsible
(its ops alone fail in a fresh process), shows the ways around it, each run, and offers the repro to download."""

from __future__ import annotations

from explorer.ui import state
from tests.app.test_agreement_page import broken_chain


def test_the_page_finds_the_fused_node_and_offers_the_repro(make_app):
    at = broken_chain(make_app)
    assert not at.exception
    assert [b for b in at.button if b.key == "diagnose.run"], "no diagnose button under the banner"
    at = at.button(key="diagnose.run").click().run(timeout=600)
    assert not at.exception
    text = "\n".join(m.value for m in at.markdown)
    assert "Fused node responsible: **`Tanh`** — `_FusedConv2D [FusedBatchNorm, Tanh]`" in text
    assert "FindConv2DWithBatchNormAndActivation" in text and "kernel: Eigen" in text
    assert "fails alone — the model's fault." in text
    ways = at.dataframe[-1].value
    assert list(ways["way around"]) == ["the remapper off for this model", "oneDNN off (TF_ENABLE_ONEDNN_OPTS=0)"]
    assert list(ways["runs"]) == [True, True] and list(ways["agrees"]) == [True, True]
    assert at.get("download_button"), "no repro download"


def test_no_diagnosis_is_offered_where_the_fusion_agrees(make_app):
    at = make_app().run()
    assert not at.exception
    assert not [b for b in at.button if b.key == "diagnose.run"]


def test_where_grappler_gave_up_the_page_runs_the_ways_that_let_it_optimise_again(make_app):
    # MatMul + BiasAdd + Add + Relu with oneDNN on (make_app's): the remapper writes a node with no op, Grappler
    # gives up and the function runs unoptimised; its outputs agree, so no banner, but the warning and the ways.
    at = make_app(**{state.MODE: "chain"}).run()
    for field, value in (("contraction", "MatMul"), ("bias", "BiasAdd"), ("norm", "none"), ("activation", "Relu")):
        at.selectbox(key=state.chain_key(field)).set_value(value)
    at = at.checkbox(key=state.chain_key("side_add")).check().run()
    assert not at.exception and not at.error
    assert any("no Grappler optimisation at all" in w.value for w in at.warning), [w.value for w in at.warning]
    assert any("Grappler gave up on this model" in m.value for m in at.markdown)
    assert any("**no fusion kept**: Grappler gave up on the function" in m.value for m in at.markdown)
    at = at.button(key="diagnose.run").click().run(timeout=600)
    assert not at.exception
    ways = at.dataframe[-1].value
    assert list(ways["way around"]) == ["the remapper off for this model", "oneDNN off (TF_ENABLE_ONEDNN_OPTS=0)"]
    assert list(ways["agrees"]) == [True, True] and list(ways["Grappler optimises"]) == [True, True]
    assert not any("No fused node's ops" in w.value for w in at.warning)
    assert any("dropped Grappler's work: Grappler gave up, and the model ran with no graph optimisation" in m.value
               for m in at.markdown)


def test_where_the_remapper_failed_the_page_says_no_fusion_was_kept_and_offers_the_ways(make_app):
    # Pre-activation residual blocks with oneDNN on: the remapper fuses conv + bias + add + relu though the add is
    # read by the next skip too, fails, and TensorFlow drops every fusion it made; the outputs agree (no banner).
    at = make_app(**{state.MODE: "stack", state.STACK_EXAMPLE: "preact_residual"}).run()
    at = at.button(key="stack.load").click().run()
    assert not at.exception
    assert any("**no fusion kept**: the remapper failed" in m.value for m in at.markdown)
    assert any("Grappler's remapper failed on this graph" in w.value for w in at.warning), [w.value for w in at.warning]
    assert any("The remapper failed on this model" in m.value for m in at.markdown)
    (caption,) = [c.value for c in at.caption if "Runs the model with the remapper off" in c.value]
    assert "split-add" not in caption  # a rewrite is for imported models; a stack is changed in its own text
    at = at.button(key="diagnose.run").click().run(timeout=600)
    assert not at.exception
    (ways,) = [d.value for d in at.dataframe if "way around" in d.value]  # a stack's report has tables of its own
    assert list(ways["way around"]) == ["the remapper off for this model", "oneDNN off (TF_ENABLE_ONEDNN_OPTS=0)"]
    assert list(ways["agrees"]) == [True, True] and list(ways["Grappler optimises"]) == [True, True]
    assert any("dropped Grappler's work: the remapper failed, and none of its fusions were kept." in m.value
               for m in at.markdown)
