"""The XLA tab in a real headless Chromium: switched on for the default model, XLA's optimised HLO is
drawn beside the graph after Grappler, one box per fusion, hover-linked by TF op; a screenshot is kept."""

from __future__ import annotations

import html

from devkit.browser import GRAPH_SVG, LINKED, expect_rerun, full_page_screenshot, open_app, wait_idle

EXCEPTION = "[data-testid='stException']"


def test_xla_view_of_the_default_model(app_server, page, tmp_path):
    open_app(page, app_server, 180_000)
    page.frame_locator(LINKED).first.locator(GRAPH_SVG).nth(1).wait_for(state="visible", timeout=60_000)
    with expect_rerun(page, 120_000):  # only the open tab's panel runs: opening one reruns the page
        page.get_by_role("tab", name="XLA").click()
    page.get_by_text("Compile this model with XLA").click()
    wait_idle(page, 120_000)
    # the linked drawing inside the XLA tab's own panel (other tabs have linked frames too)
    panel = page.locator("[role='tabpanel']").filter(has_text="Compile this model with XLA")
    frame = panel.frame_locator(LINKED).first
    xla_svg = frame.locator(GRAPH_SVG).nth(1)
    xla_svg.wait_for(state="visible", timeout=60_000)
    svg = html.unescape(xla_svg.evaluate("el => el.outerHTML"))
    assert "loop fusion" in svg and 'class="cluster"' in svg
    assert "TF Gelu/Tanh" in svg and "TF MatMul" in svg
    # hovering the fusion lights the Grappler node computing the same TF ops (the _FusedMatMul)
    frame.locator(".fx-pane[data-side='after'] g.cluster text").first.dispatch_event("mouseover")
    assert frame.locator(".fx-pane[data-side='before'] g.node.fx-hl").count() >= 1
    assert "loop fusion of" in frame.locator("#fx-hint").inner_text()
    assert page.get_by_text("Not measured here (no GPU)").first.is_visible()
    assert page.locator(EXCEPTION).count() == 0
    full_page_screenshot(page, tmp_path / "xla-view.png")
    assert (tmp_path / "xla-view.png").stat().st_size > 10_000
