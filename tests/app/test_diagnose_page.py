"""The page's diagnosis under the "fusion breaks this model" banner: one button finds the fused node responsible
(its ops alone fail in a fresh process), shows the ways around it, each run, and offers the repro to download."""

from __future__ import annotations

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
