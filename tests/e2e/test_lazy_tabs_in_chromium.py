"""Only the open tab's panel runs (Streamlit's lazy tabs), in headless Chromium on the real app: a closed tab's panel
is not in the page, a click on a tab runs its panel (and the link names it), and what was set inside a tab is shown
again when the user comes back to it."""

from __future__ import annotations

from devkit.browser import GRAPH_SVG, LINKED, expect_rerun, open_app
from playwright.sync_api import expect

SMALL = "preset=matmul_bias_relu&m=64&k=32&n=16"
EXCEPTION = "[data-testid='stException']"
FLAG = "TF_ENABLE_ONEDNN_OPTS"


def _open(page, title: str) -> None:
    with expect_rerun(page, 120_000):
        page.get_by_role("tab", name=title).click()
    expect(page.get_by_role("tab", name=title)).to_have_attribute("aria-selected", "true")


def test_a_click_on_a_tab_runs_its_panel_and_what_was_set_in_a_tab_comes_back(app_server, page):
    open_app(page, f"{app_server}/?{SMALL}", 180_000)
    page.frame_locator(LINKED).first.locator(GRAPH_SVG).nth(1).wait_for(state="visible", timeout=60_000)
    assert page.get_by_role("spinbutton", name="Timed calls per variant").count() == 0  # the closed bench tab

    graphs = page.get_by_role("tabpanel", name="Graphs before → after")
    search = graphs.get_by_role("textbox", name="Find nodes")
    with expect_rerun(page, 120_000):
        search.fill("MatMul")
        search.press("Enter")
    with expect_rerun(page, 120_000):
        graphs.get_by_text("Fold constants and plumbing", exact=True).click()

    _open(page, "Fused vs unfused")
    expect(page.get_by_role("spinbutton", name="Timed calls per variant")).to_be_visible()
    assert page.locator(LINKED).count() == 0  # the graph tab's drawing is not drawn while it is closed
    page.wait_for_function("() => location.search.includes('tab=bench')")
    assert "fold=1" in page.url  # the closed tab's folding stays in the link

    _open(page, "Graphs before → after")
    graphs = page.get_by_role("tabpanel", name="Graphs before → after")
    expect(graphs.get_by_role("textbox", name="Find nodes")).to_have_value("MatMul")
    expect(graphs.get_by_role("switch", name="Fold constants and plumbing")).to_be_checked()
    page.frame_locator(LINKED).first.locator(GRAPH_SVG).nth(1).wait_for(state="visible", timeout=60_000)
    # the sidebar's widgets are untouched by the tab switches
    radio = page.locator("[data-testid='stSidebar'] [data-testid='stRadio']").filter(has_text=FLAG).first
    expect(radio.get_by_role("radio", name="1", exact=True)).to_be_checked()
    assert page.locator(EXCEPTION).count() == 0
