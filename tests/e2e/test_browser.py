"""The page in a real headless Chromium: graphs drawn as SVG, a preset picked, the benchmark run, charts drawn,
the exports downloaded."""

from __future__ import annotations

from devkit.browser import GRAPH_SVG, LINKED, download, expect_rerun, new_context, open_app, wait_idle

PLOTLY = "[data-testid='stPlotlyChart'] .js-plotly-plot"
EXCEPTION = "[data-testid='stException']"


def _pick_preset(page, title: str) -> None:
    sidebar = page.locator("[data-testid='stSidebar']")
    sidebar.locator("[data-testid='stSelectbox']").filter(has_text="Preset").first.click()
    page.get_by_role("option", name=title, exact=True).click()
    wait_idle(page, 120_000)


def test_graphs_preset_and_benchmark(app_server, page):
    open_app(page, app_server, 180_000)
    # The default model shows its fusion and both graphs, drawn by Graphviz as SVG.
    graphs = page.frame_locator(LINKED).first
    graphs.locator(GRAPH_SVG).nth(1).wait_for(state="visible", timeout=60_000)
    assert graphs.locator(GRAPH_SVG).count() == 2
    assert page.get_by_text("_FusedMatMul [BiasAdd, GeluApproximate]").first.is_visible()
    assert page.locator(EXCEPTION).count() == 0

    _pick_preset(page, "MatMul + BiasAdd + ReLU")
    page.get_by_text("_FusedMatMul [BiasAdd, Relu]").first.wait_for(state="visible", timeout=60_000)
    graphs = page.frame_locator(LINKED).first
    graphs.locator(GRAPH_SVG).nth(1).get_by_text("_FusedMatMul").first.wait_for(state="visible", timeout=60_000)
    assert graphs.locator(GRAPH_SVG).count() == 2
    # the fused node is in the drawing itself, not only in the list
    assert graphs.locator(GRAPH_SVG).nth(1).get_by_text("_FusedMatMul").count() >= 1

    with expect_rerun(page, 120_000):  # only the open tab's panel runs: opening one reruns the page
        page.get_by_role("tab", name="Fused vs unfused").click()
    reps = page.get_by_role("spinbutton", name="Timed calls per variant")
    reps.fill("10")
    page.get_by_role("button", name="Run fused vs unfused").click()
    wait_idle(page, 180_000)
    page.locator(PLOTLY).nth(2).wait_for(state="visible", timeout=60_000)
    assert page.locator(PLOTLY).count() >= 3
    assert page.get_by_text("Speedup of fusion").first.is_visible()
    assert page.locator(EXCEPTION).count() == 0


# Per graph pane of the first linked frame, in the window's coordinates: its view's top, and the top of the drawn
# node whose text holds the fused op (null where the pane has none).
FIRST_SCREEN_JS = """() => {
  const frame = document.querySelector("[data-testid='stIFrame']");
  const doc = frame && frame.contentDocument;
  if (!doc || !doc.querySelector('.fx-pane g.node')) return null;
  const f = frame.getBoundingClientRect();
  return [...doc.querySelectorAll('.fx-pane')].filter(p => !p.hidden).map(p => {
    const fused = [...p.querySelectorAll('g.node')].find(n => n.textContent.includes('_FusedMatMul'));
    return {view: f.top + p.querySelector('.fx-view').getBoundingClientRect().top,
            fused: fused ? f.top + fused.getBoundingClientRect().top : null};
  });
}"""


def test_the_first_screen_at_1600x1000_shows_both_graphs_and_the_fused_node(app_server, browser):
    """The default experiment on a 1600x1000 screen: both graphs start within it, the fused node in sight."""
    context = new_context(browser, viewport={"width": 1600, "height": 1000})
    page = context.new_page()
    try:
        open_app(page, app_server, 180_000)
        page.frame_locator(LINKED).first.locator(GRAPH_SVG).nth(1).wait_for(state="visible", timeout=60_000)
        wait_idle(page, 120_000)
        # the frame lays its drawing out after the script is idle
        panes = page.wait_for_function(FIRST_SCREEN_JS, timeout=10_000).json_value()
        assert len(panes) == 2, panes
        assert all(p["view"] < 1000 - 200 for p in panes), panes  # at least 200 px of each graph on the screen
        assert panes[1]["fused"] is not None and panes[1]["fused"] < 1000 - 40, panes
    finally:
        context.close()


def test_graphs_too_wide_to_read_side_by_side_are_stacked(app_server, page):
    open_app(page, app_server, 180_000)
    graphs = page.frame_locator(LINKED).first
    graphs.locator(GRAPH_SVG).nth(1).wait_for(state="visible", timeout=60_000)
    # the default model fits side by side at a readable size
    assert "fx-stacked" not in (graphs.locator(".fx-panes").get_attribute("class") or "")
    assert not graphs.locator("#fx-note").is_visible()

    # six inputs in a row: side by side its labels would shrink to a few pixels
    _pick_preset(page, "FusedBatchNorm + Add + ReLU")
    graphs = page.frame_locator(LINKED).first
    graphs.locator(".fx-panes.fx-stacked").wait_for(state="attached", timeout=60_000)
    assert graphs.locator("#fx-note").is_visible()
    assert graphs.locator(".fx-pane-title").nth(0).inner_text().startswith("As traced")
    # drawn at a readable scale: no narrower than MIN_SCALE of Graphviz's own size
    from explorer.present.linked import MIN_SCALE
    for i in range(2):
        svg = graphs.locator(GRAPH_SVG).nth(i)
        natural_px = float(svg.get_attribute("width").removesuffix("pt")) * 4 / 3
        assert svg.bounding_box()["width"] >= MIN_SCALE * natural_px - 1


def test_preset_titles_are_not_clipped_in_the_sidebar(app_server, page):
    open_app(page, app_server, 180_000)
    chosen = page.locator("[data-testid='stSidebar'] input[aria-label='Preset']")
    assert chosen.input_value() == "MatMul + BiasAdd + GELU (approximate)"
    # the chosen preset's title fits its box instead of running under the arrow
    width, needed = chosen.evaluate("el => [el.clientWidth, el.scrollWidth]")
    assert needed <= width, (needed, width)


def test_export_downloads_are_the_script_and_the_bundle_of_the_run(app_server, page, tmp_path):
    import ast
    import io
    import json
    import zipfile

    open_app(page, app_server, 180_000)
    page.frame_locator(LINKED).first.locator(GRAPH_SVG).nth(1).wait_for(state="visible", timeout=60_000)
    page.get_by_text("Reproduce this run elsewhere").first.click()
    # The downloads' data is made on the server when clicked: a click while the first visit's script
    # is still running (it goes on past the graphs) was lost once in a full run: download() waits for idle.
    script_download = download(page, page.get_by_role("button", name="Reproduce: repro.py"))
    assert script_download.suggested_filename == "repro.py"
    script = tmp_path / "repro.py"
    script_download.save_as(script)
    text = script.read_text()
    ast.parse(text)  # a Python script, standing alone
    assert "import explorer" not in text and "from explorer" not in text
    assert "def model(" in text and "import tensorflow" in text
    assert "(matmul_bias_gelu_approx)" in text.splitlines()[1]  # the model on the page, the default one

    bundle_download = download(page, page.get_by_role("button", name="Bug-report bundle (.zip)"))
    assert bundle_download.suggested_filename.endswith(".zip")
    bundle = tmp_path / bundle_download.suggested_filename
    bundle_download.save_as(bundle)
    with zipfile.ZipFile(io.BytesIO(bundle.read_bytes())) as archive:
        assert {"repro.py", "traced.pbtxt", "optimized.pbtxt", "executed.pbtxt", "summary.json"} <= set(
            archive.namelist())
        assert archive.read("repro.py").decode() == text  # the same script as the button beside it
        summary = json.loads(archive.read("summary.json"))
        assert summary["explanation"]["verdict"] == "fused"
        assert 'op: "_FusedMatMul"' in archive.read("optimized.pbtxt").decode()
    assert page.locator(EXCEPTION).count() == 0
