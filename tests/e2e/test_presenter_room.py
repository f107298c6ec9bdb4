"""The presenter view in front of a class (1280×720): every seed lesson walked with a clicker's keys, and at every
step the step's text, its Previous / Next and the graphs on one screen, measured in the browser: at least
MIN_GRAPH_PX of each graph pane shown within the window, and a node the step points at in sight.

A clicker sends → / PageDown / Space and ← / PageUp; typing in an input keeps its keys.
"""

from __future__ import annotations

from devkit.browser import LINKED, expect_rerun, new_context, open_app, wait_idle
from playwright.sync_api import expect

from explorer.model.devices import is_simulated
from explorer.model.lesson import seed_lessons

PANEL = ".st-key-lesson-panel"
EXCEPTION = "[data-testid='stException']"
W, H = 1280, 720
MIN_GRAPH_PX = 300
STEP_S = 240_000
NEXT_KEYS = ("ArrowRight", "PageDown", "Space")

# For each frame of linked graphs on the page that is shown: the part of each shown pane within the window,
# and whether one node a lesson points at (a halo) lies within both its pane's view and the window.
PANES_JS = """([w, h]) => [...document.querySelectorAll("[data-testid='stIFrame']")].flatMap(frame => {
  const f = frame.getBoundingClientRect();
  if (!f.width || !f.height) return [];
  let doc; try { doc = frame.contentDocument; } catch (e) { return []; }
  if (!doc || !doc.querySelector('.fx-pane')) return [];
  return [...doc.querySelectorAll('.fx-pane')].filter(p => !p.hidden).map(p => {
    const v = p.querySelector('.fx-view').getBoundingClientRect();
    const top = Math.max(0, f.top + v.top), bottom = Math.min(h, f.top + v.bottom);
    const left = Math.max(0, f.left + v.left), right = Math.min(w, f.left + v.right);
    const inSight = [...p.querySelectorAll('.fx-focus')].some(n => {
      const r = n.getBoundingClientRect();
      const x = f.left + r.left + r.width / 2, y = f.top + r.top + r.height / 2;
      return x > left && x < right && y > top && y < bottom;
    });
    return {side: p.dataset.side, shown: Math.round(bottom - top), wide: Math.round(right - left),
            focus: p.querySelectorAll('.fx-focus').length, inSight,
            zoom: doc.getElementById('fx-zoom').textContent};
  });
})"""


def _in_window(box) -> bool:
    return box is not None and box["y"] >= 0 and box["y"] + box["height"] <= H and box["x"] + box["width"] <= W


def _graphs_in_sight(page, lesson_id: str, number: int, step) -> None:
    tab = step.look.tab or "graphs"
    if tab not in ("graphs", "xla") or (tab == "xla" and is_simulated(step.experiment.config.device)):
        return  # no drawing there (a simulated GPU has no XLA compiler: the tab says so)
    frames = page.locator(LINKED)
    panes = []
    for _ in range(150):  # the shown frame draws after the script is idle
        panes = page.evaluate(PANES_JS, [W, H])
        if panes and all(p["shown"] > 0 for p in panes):
            break
        page.wait_for_timeout(200)
    assert frames.count() and panes, (lesson_id, number, "no graphs drawn")
    where = (lesson_id, number, panes)
    for pane in panes:
        assert pane["shown"] >= MIN_GRAPH_PX and pane["wide"] >= MIN_GRAPH_PX, where
        if pane["focus"]:
            assert pane["inSight"], where  # a node the step points at is on the screen
    if len(panes) == 1:  # one graph at a time: the zoom was too small for two; the other is a key away
        assert int(panes[0]["zoom"].rstrip("%")) >= 90, where


def test_every_seed_lesson_in_the_presenter_view_at_1280x720_with_a_clickers_keys(app_server, browser):
    context = new_context(browser, viewport={"width": W, "height": H})
    page = context.new_page()
    try:
        for lesson in seed_lessons().values():
            open_app(page, f"{app_server}/?lesson={lesson.id}&present=1", STEP_S)
            total = len(lesson.steps)
            for number, step in enumerate(lesson.steps, 1):
                panel = page.locator(PANEL)
                expect(panel).to_contain_text(f"step {number} of {total}", timeout=STEP_S)
                wait_idle(page, STEP_S)
                for name in ("Previous", "Next"):
                    button = panel.get_by_role("button", name=name, exact=True)
                    assert _in_window(button.bounding_box()), (lesson.id, number, name)
                    assert button.evaluate("b => b.scrollWidth <= b.clientWidth + 1"), (lesson.id, number, name)
                text = panel.get_by_text(step.text[:30]).first
                assert _in_window(text.bounding_box()), (lesson.id, number, "the step's text")
                _graphs_in_sight(page, lesson.id, number, step)
                assert page.locator(EXCEPTION).count() == 0, (lesson.id, number)
                if number < total:
                    with expect_rerun(page, STEP_S):
                        page.keyboard.press(NEXT_KEYS[number % len(NEXT_KEYS)])
            for key, back_to in (("PageUp", total - 1), ("ArrowLeft", total - 2)):
                with expect_rerun(page, STEP_S):
                    page.keyboard.press(key)
                expect(page.locator(PANEL)).to_contain_text(f"step {back_to} of {total}", timeout=STEP_S)
    finally:
        context.close()


def test_keys_typed_into_an_input_do_not_move_the_step_and_the_buttons_keep_their_labels(app_server, browser):
    context = new_context(browser, viewport={"width": W, "height": H})
    page = context.new_page()
    try:
        open_app(page, f"{app_server}/?lesson=gelu-fusion&step=2&present=1", STEP_S)
        panel = page.locator(PANEL)
        expect(panel).to_contain_text("step 2 of", timeout=STEP_S)
        find = page.get_by_placeholder("Find nodes: name or op type")
        find.click()
        find.type("FusedMatMul")
        for key in ("ArrowLeft", "ArrowRight", "Space", "Backspace"):
            find.press(key)
        with expect_rerun(page, STEP_S):
            find.press("Enter")
        expect(panel).to_contain_text("step 2 of")
        # a node the step points at and Find matches: the Find's blue outline shows, the step's halo around it
        frame = page.frame_locator(LINKED).first
        both = frame.locator("g.node.fx-match.fx-focus").first
        both.wait_for(state="attached", timeout=STEP_S)
        stroke, halo = both.evaluate("""g => [getComputedStyle(g.querySelector('path, polygon, ellipse')).stroke,
                                           getComputedStyle(g).filter]""")
        assert stroke == "rgb(28, 109, 208)" and "drop-shadow" in halo, (stroke, halo)
        assert "240, 162, 2" not in halo and "201, 138, 11" not in halo  # not the diff's amber
        # the sidebar opened beside the presenter view: Previous and Next keep their whole labels
        zoom = frame.locator("#fx-zoom")
        first = zoom.inner_text()
        page.locator("[data-testid='stExpandSidebarButton']").click()
        page.wait_for_timeout(1500)
        for name in ("Previous", "Next"):
            button = panel.get_by_role("button", name=name, exact=True)
            assert button.evaluate("b => b.scrollWidth <= b.clientWidth + 1 && !b.innerText.includes('…')"), name
        # and closed again: the zoom the view chose comes back with the width (it dropped and stayed before)
        page.locator("[data-testid='stSidebar']").hover()
        page.locator("[data-testid='stSidebarCollapseButton'] button").click()
        page.wait_for_timeout(1500)
        assert zoom.inner_text() == first
        assert page.locator(EXCEPTION).count() == 0
    finally:
        context.close()


def test_the_lesson_uploader_states_its_own_limit_only(app_server, page):
    open_app(page, app_server, STEP_S)
    page.locator("[data-testid='stSidebar'] [data-testid='stSelectbox']").first.click()
    with expect_rerun(page, STEP_S):
        page.get_by_role("option", name="Your own lesson file…").click()
    sidebar = page.locator("[data-testid='stSidebar']")
    uploader = sidebar.locator("[data-testid='stFileUploader']").filter(has_text="Your own lesson")
    expect(uploader).to_be_visible()
    # Streamlit's "200MB per file" (or any megabytes) is not beside the lesson's own limit; the zone says that one
    zone = uploader.locator("[data-testid='stFileUploaderDropzoneInstructions']")
    assert "MB" not in uploader.inner_text()
    assert "256 KiB" in zone.evaluate("z => getComputedStyle(z.firstElementChild, '::after').content")
    expect(sidebar).to_contain_text("at most 256 KiB")


# Per shown pane of the first linked frame: how many drawn nodes the pane's title (over the pane's top left corner in
# the presenter view) overlaps, as the drawing opens.
TITLE_OVER_NODES_JS = """() => {
  const frame = document.querySelector("[data-testid='stIFrame']");
  const doc = frame && frame.contentDocument;
  if (!doc || !doc.querySelector('.fx-pane g.node')) return null;
  return [...doc.querySelectorAll('.fx-pane')].filter(p => !p.hidden).map(p => {
    const t = p.querySelector('.fx-pane-title').getBoundingClientRect();
    return [...p.querySelectorAll('g.node')].filter(n => {
      const r = n.getBoundingClientRect();
      return r.left < t.right && r.right > t.left && r.top < t.bottom && r.bottom > t.top;
    }).length;
  });
}"""


def test_the_pane_titles_cover_no_node_as_the_presenter_view_opens(app_server, browser):
    context = new_context(browser, viewport={"width": W, "height": H})
    page = context.new_page()
    try:
        open_app(page, f"{app_server}/?present=1", STEP_S)
        page.frame_locator(LINKED).first.locator("g.node").first.wait_for(state="attached", timeout=STEP_S)
        wait_idle(page, STEP_S)
        # the frame lays its drawing out after the script is idle
        covered = page.wait_for_function(TITLE_OVER_NODES_JS, timeout=10_000).json_value()
        assert covered and all(n == 0 for n in covered), covered
    finally:
        context.close()
