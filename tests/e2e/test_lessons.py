"""Lessons in a real browser: every seed lesson opens from its link and is walked through with Next, its graphs
drawn at every step that opens the graph tab and nothing raised or contradicted; the presenter view at 1280×720; a teacher's own lesson
file loaded, and a malformed one refused with a line naming the field.

One server (the session's ``app_server``) for all of it: opening a lesson prepares its steps in the
background, so most steps are drawn from stored results.
"""

from __future__ import annotations

import json

from devkit.browser import GRAPH_SVG, LINKED, expect_rerun, new_context, open_app, wait_idle
from playwright.sync_api import expect

from explorer.model.lesson import seed_lessons
from explorer.ui.tabs import TABS

EXCEPTION = "[data-testid='stException']"
PANEL = ".st-key-lesson-panel"
CONTRADICTED = "TensorFlow did something else here than this step says"
TITLES = {tab.id: tab.title for tab in TABS}
STEP_S = 240_000  # ms: a step's first result on a fresh CI machine may start a TensorFlow worker or two


def _graphs_drawn(page) -> None:
    """The graphs tab's linked view holds both drawings (drawn while that tab is open)."""
    frame = page.frame_locator(LINKED).first
    frame.locator(GRAPH_SVG).nth(1).wait_for(state="attached", timeout=STEP_S)
    assert frame.locator(GRAPH_SVG).count() == 2


def test_every_seed_lesson_opens_from_its_link_and_walks_through_with_next(app_server, page):
    assert {"gelu-fusion", "fused-ops", "conv-bias-relu", "xla-gelu", "keras3-batchnorm"} <= set(seed_lessons())
    for lesson in seed_lessons().values():
        assert len(lesson.steps) >= 4, lesson.id
        open_app(page, f"{app_server}/?lesson={lesson.id}", STEP_S)
        for number, step in enumerate(lesson.steps, 1):
            panel = page.locator(PANEL)
            expect(panel).to_contain_text(f"step {number} of {len(lesson.steps)}", timeout=STEP_S)
            expect(panel).to_contain_text(step.title)
            tab = step.look.tab or "graphs"
            expect(page.get_by_role("tab", name=TITLES[tab], selected=True)).to_be_visible(timeout=STEP_S)
            if tab == "graphs":  # only the open tab's panel runs: the graphs are drawn where their tab is open
                _graphs_drawn(page)
                page.frame_locator(LINKED).first.locator(GRAPH_SVG).nth(1).wait_for(state="visible", timeout=STEP_S)
            wait_idle(page, STEP_S)
            assert page.locator(EXCEPTION).count() == 0, (lesson.id, number)
            assert page.get_by_text(CONTRADICTED).count() == 0, (lesson.id, number, panel.inner_text())
            assert f"lesson={lesson.id}" in page.url and (number == 1 or f"step={number}" in page.url)
            if number < len(lesson.steps):
                with expect_rerun(page, STEP_S):
                    panel.get_by_role("button", name="Next", exact=True).click()
        # and back one step
        with expect_rerun(page, STEP_S):
            page.locator(PANEL).get_by_role("button", name="Previous", exact=True).click()
        expect(page.locator(PANEL)).to_contain_text(f"step {len(lesson.steps) - 1} of {len(lesson.steps)}")


def test_the_presenter_view_shows_the_lesson_and_both_graphs_side_by_side_at_1280x720(app_server, browser):
    context = new_context(browser, viewport={"width": 1280, "height": 720})
    page = context.new_page()
    try:
        open_app(page, f"{app_server}/?lesson=gelu-fusion&present=1", STEP_S)
        frame = page.frame_locator(LINKED).first
        frame.locator(GRAPH_SVG).nth(1).wait_for(state="visible", timeout=STEP_S)
        wait_idle(page, STEP_S)
        # the sidebar folded away; the step's text and Previous / Next on the first screen
        assert page.locator("[data-testid='stSidebar']").get_attribute("data-collapsed") == "true"
        panel = page.locator(PANEL)
        for name in ("Previous", "Next"):
            box = panel.get_by_role("button", name=name, exact=True).bounding_box()
            assert box["y"] >= 0 and box["y"] + box["height"] <= 720
        text = page.get_by_text(seed_lessons()["gelu-fusion"].steps[0].text[:40]).bounding_box()
        assert text["y"] + text["height"] <= 720
        # both graphs side by side, a good part of each on the first screen (boxes in the page's coordinates)
        before, after = (frame.locator(".fx-view").nth(i).bounding_box() for i in range(2))
        assert before["x"] + before["width"] <= after["x"] and abs(before["y"] - after["y"]) < 2
        assert min(before["width"], after["width"]) > 500 and before["y"] < 720 - 200
        assert "fx-stacked" not in (frame.locator(".fx-panes").get_attribute("class") or "")
        # nothing cut off: the pin button's label and the status line fit
        pin = page.get_by_role("button", name="Pin this result")
        assert pin.evaluate("b => b.scrollWidth <= b.clientWidth")
        status = page.get_by_text("found by Grappler").first
        line = status.evaluate("e => parseFloat(getComputedStyle(e).lineHeight) || 28")
        assert status.bounding_box()["height"] < 1.8 * line
        # the next step keeps the view: the sidebar stays folded
        with expect_rerun(page, STEP_S):
            panel.get_by_role("button", name="Next", exact=True).click()
        expect(panel).to_contain_text("step 2 of")
        assert page.locator("[data-testid='stSidebar']").get_attribute("data-collapsed") == "true"
        assert page.locator(EXCEPTION).count() == 0
    finally:
        context.close()


LESSON = {
    "lesson": 1, "id": "my-class", "title": "My class: ReLU then GELU",
    "steps": [
        {"title": "ReLU fuses", "experiment": "preset=matmul_bias_relu&TF_ENABLE_ONEDNN_OPTS=1",
         "text": "MatMul, BiasAdd and ReLU become one node.", "ask": "Why?",
         "look": {"tab": "graphs", "nodes": {"optimized": ["_FusedMatMul"]}},
         "expect": {"made": ["_FusedMatMul [BiasAdd, Relu]"]}},
        {"title": "So does GELU", "experiment": "http://localhost:8501/?preset=matmul_bias_gelu_approx&TF_ENABLE_ONEDNN_OPTS=1",
         "text": "With oneDNN the GELU joins too.", "look": {"tab": "why"}},
    ],
}


def _own_file(page) -> None:
    """The sidebar's lesson choice "Your own lesson file…": its uploader shows."""
    page.locator("[data-testid='stSidebar'] [data-testid='stSelectbox']").first.click()
    with expect_rerun(page, STEP_S):
        page.get_by_role("option", name="Your own lesson file…").click()


def test_a_teachers_own_lesson_file_loads_and_a_malformed_one_is_refused(app_server, page, tmp_path):
    open_app(page, app_server, STEP_S)
    uploader = page.locator("[data-testid='stSidebar'] [data-testid='stFileUploader']").filter(
        has_text="Your own lesson").locator("input[type='file']")
    good = tmp_path / "my-class.json"
    good.write_text(json.dumps(LESSON))
    _own_file(page)
    with expect_rerun(page, STEP_S):
        uploader.set_input_files(str(good))
    panel = page.locator(PANEL)
    expect(panel).to_contain_text("step 1 of 2", timeout=STEP_S)
    expect(panel).to_contain_text("ReLU fuses")
    page.get_by_text("_FusedMatMul [BiasAdd, Relu]").first.wait_for(state="visible", timeout=STEP_S)
    with expect_rerun(page, STEP_S):
        panel.get_by_role("button", name="Next", exact=True).click()
    expect(panel).to_contain_text("So does GELU")
    expect(page.get_by_role("tab", name=TITLES["why"], selected=True)).to_be_visible(timeout=STEP_S)

    broken = dict(LESSON, steps=[LESSON["steps"][0], {"title": "No text", "experiment": "preset=matmul_bias_relu"}])
    bad = tmp_path / "broken.json"
    bad.write_text(json.dumps(broken))
    _own_file(page)
    with expect_rerun(page, STEP_S):
        uploader.set_input_files(str(bad))
    refusal = page.locator("[data-testid='stSidebar'] [data-testid='stAlert']").filter(has_text="was not loaded")
    expect(refusal).to_contain_text("broken.json was not loaded: steps[1].text: missing")
    expect(panel).to_contain_text("So does GELU")  # the lesson open before is kept
    assert page.locator(EXCEPTION).count() == 0
