"""The linked view's own navigation in headless Chromium: zoom, fit to width, fit to the pane, dragging,
Ctrl + wheel, search matches centred on both sides, and a graph far wider than its pane that stays
reachable to its last node.

The document is the one the page puts in its frame (present.linked.page_html over Graphviz's SVG of real
diffs); it is opened on its own here, so these tests need no app server.
"""

from __future__ import annotations

import pytest

from explorer.analysis.diff import diff_graphs
from explorer.model.graph import Edge, Graph, Node
from explorer.present import linked
from explorer.present.dot import html_id, to_dot
from explorer.present.svg import to_svg

ORIGIN = "http://linked-view.test/"
BRANCHES = 32  # 32 inputs, 32 ReLUs and their sum: 65 nodes, about 3,300 px wide as Graphviz lays it out


def _drawing(before: Graph, after: Graph, **kwargs) -> str:
    diff = diff_graphs(before, after)
    fusions = diff.to_dict()["fusions"]
    svgs = [to_svg(to_dot(g, diff.overlay(side), clusters=diff.clusters(side), id_prefix=prefix))
            for g, side, prefix in ((before, "before", "b-"), (after, "after", "a-"))]
    groups = linked.link_groups(fusions, [n.name for n in before.nodes], [n.name for n in after.nodes],
                                [f["node"] for f in fusions])
    return linked.page_html(svgs[0], svgs[1], groups, **kwargs)


def _tall():
    """MatMul + BiasAdd + a long element-wise tail, fused into one node: a tall before, a short after."""
    tail = [f"op{i}" for i in range(24)]
    nodes = [Node("x", "_Arg"), Node("w", "_Arg"), Node("b", "_Arg"),
             Node("mm", "MatMul", inputs=(Edge("x"), Edge("w"))), Node("ba", "BiasAdd", inputs=(Edge("mm"), Edge("b")))]
    previous = "ba"
    for name in tail:
        nodes.append(Node(name, "Mul", inputs=(Edge(previous),)))
        previous = name
    before = Graph(tuple(nodes + [Node("out", "_Retval", inputs=(Edge(previous),))]))
    after = Graph((Node("x", "_Arg"), Node("w", "_Arg"), Node("b", "_Arg"),
                   Node(previous, "_FusedMatMul", inputs=(Edge("x"), Edge("w"), Edge("b")), fused_ops=("BiasAdd",)),
                   Node("out", "_Retval", inputs=(Edge(previous),))))
    return before, after


def _wide():
    args = [Node(f"in{i}", "_Arg") for i in range(BRANCHES)]
    relus = [Node(f"relu{i}", "Relu", inputs=(Edge(f"in{i}"),)) for i in range(BRANCHES)]
    total = Node("sum", "AddN", inputs=tuple(Edge(f"relu{i}") for i in range(BRANCHES)))
    graph = Graph(tuple(args + relus + [total]))
    return graph, graph


@pytest.fixture
def view(browser):
    from devkit.browser import new_context

    context = new_context(browser, viewport={"width": 1200, "height": 800})
    page = context.new_page()
    try:
        yield page
    finally:
        context.close()


def _open(page, document: str):
    """The document at an address of its own (an origin with sessionStorage, as the page's frame has)."""
    page.route(ORIGIN, lambda route: route.fulfill(body=document, content_type="text/html; charset=utf-8"))
    page.goto(ORIGIN, wait_until="load")
    page.locator(".fx-pane svg").nth(1).wait_for(state="visible")


def _boxes(page) -> list[dict]:
    """Per side: the view's box and scroll, and the drawing's size."""
    return page.evaluate("""() => [...document.querySelectorAll('.fx-pane')].map(p => {
        const v = p.querySelector('.fx-view'), s = p.querySelector('svg').getBoundingClientRect();
        return {w: v.clientWidth, h: v.clientHeight, left: v.scrollLeft, top: v.scrollTop,
                sw: s.width, sh: s.height, scrollW: v.scrollWidth};
    })""")


def _centre_offset(page, element_id: str) -> tuple[float, float]:
    """How far the element's centre is from the centre of its pane's view, in px."""
    return tuple(page.evaluate("""id => {
        const el = document.getElementById(id), v = el.closest('.fx-view').getBoundingClientRect();
        const r = el.getBoundingClientRect();
        return [r.left + r.width / 2 - (v.left + v.width / 2), r.top + r.height / 2 - (v.top + v.height / 2)];
    }""", element_id))


def test_zoom_buttons_fit_width_and_fit_pane_resize_the_drawings(view):
    _open(view, _drawing(*_tall()))
    start = _boxes(view)
    view.get_by_role("button", name="Zoom in").click()
    bigger = _boxes(view)
    for a, b in zip(start, bigger):
        assert b["sw"] == pytest.approx(a["sw"] * 1.25, rel=0.01)
    assert view.locator("#fx-zoom").inner_text() != "100%" or start[0]["sw"] != bigger[0]["sw"]

    view.get_by_role("button", name="Zoom out").click()
    view.get_by_role("button", name="Zoom out").click()
    smaller = _boxes(view)
    assert smaller[0]["sw"] == pytest.approx(start[0]["sw"] / 1.25, rel=0.01)

    view.get_by_role("button", name="Each whole graph in its pane").click()
    whole = _boxes(view)
    for side in whole:  # every node of both graphs in sight, nothing to scroll to
        assert side["sw"] <= side["w"] + 1 and side["sh"] <= side["h"] + 1
    # the tall one fills its pane's height (the limit that set the zoom)
    assert whole[0]["sh"] >= whole[0]["h"] - 8

    # narrower than their panes at 100%: fitting to width never blows them up past their own size
    view.get_by_role("button", name="Both graphs as wide as their panes").click()
    assert view.locator("#fx-zoom").inner_text() == "100%"
    assert all(side["sw"] <= side["w"] + 1 for side in _boxes(view))


def test_search_matches_are_centred_on_both_sides_and_stepped_through(view):
    before, after = _tall()
    marks = [html_id("op12", "b-"), html_id("op6", "b-"), html_id("op23", "a-")]
    _open(view, _drawing(before, after, marks=marks))
    assert view.locator("#fx-find-count").inner_text() == "match 1 of 2"
    tall, short = _boxes(view)
    assert tall["top"] > 0  # op12 is far below the fold of the tall graph: the pane scrolled to it
    dx, dy = _centre_offset(view, marks[0])
    assert abs(dy) < 3 and abs(dx) < tall["w"] / 2
    assert view.locator(f"[id='{marks[0]}']").evaluate("e => e.classList.contains('fx-current')")

    view.get_by_role("button", name="Next match").click()
    assert view.locator("#fx-find-count").inner_text() == "match 2 of 2"
    assert abs(_centre_offset(view, marks[1])[1]) < 3
    view.keyboard.press("n")  # and around again, from the keyboard
    assert view.locator("#fx-find-count").inner_text() == "match 1 of 2"
    assert abs(_centre_offset(view, marks[0])[1]) < 3


def test_a_graph_wider_than_its_pane_is_never_cut_off(view):
    _open(view, _drawing(*_wide()))
    sides = _boxes(view)
    assert sides[0]["sw"] > 1.5 * sides[0]["w"]  # drawn readable (no smaller than MIN_SCALE), wider than the pane
    # the pane, with its scrollbar, lies within the window: nothing hangs below the fold out of reach
    bottom = view.evaluate("() => document.querySelector('.fx-view').getBoundingClientRect().bottom")
    assert bottom <= 800
    last = html_id(f"in{BRANCHES - 1}", "b-")
    first = html_id("in0", "b-")
    inside = """id => { const r = document.getElementById(id).getBoundingClientRect();
        const v = document.getElementById(id).closest('.fx-view').getBoundingClientRect();
        return r.left >= v.left - 1 && r.right <= v.right + 1; }"""
    edge_nodes = [n for n in (first, last) if not view.evaluate(inside, n)]
    assert edge_nodes  # some input is out of sight at first: the drawing is wider than the pane

    # dragging pans: the view moves by what the mouse moved
    pane = view.locator(".fx-view").first.bounding_box()
    x, y = pane["x"] + pane["width"] / 2, pane["y"] + 40
    left = sides[0]["left"]
    view.mouse.move(x, y)
    view.mouse.down()
    view.mouse.move(x - 150, y, steps=5)
    view.mouse.up()
    assert _boxes(view)[0]["left"] == pytest.approx(left + 150, abs=2)
    # ... and scrolling to the end shows the last input whole
    view.evaluate("() => { const v = document.querySelector('.fx-view'); v.scrollLeft = v.scrollWidth; }")
    view.evaluate("() => { const v = document.querySelector('.fx-view'); v.scrollLeft = v.scrollWidth; }")
    assert view.evaluate(inside, last) or view.evaluate(inside, first)
    assert view.evaluate("""() => { const v = document.querySelector('.fx-view');
        return v.scrollLeft + v.clientWidth >= v.scrollWidth - 1; }""")

    # fit to width: the whole row of inputs in sight
    view.get_by_role("button", name="Both graphs as wide as their panes").click()
    fitted = _boxes(view)
    assert fitted[0]["sw"] == pytest.approx(fitted[0]["w"], abs=4)
    assert view.evaluate(inside, first) and view.evaluate(inside, last)

    # Ctrl + wheel zooms around the pointer
    before_zoom = _boxes(view)[0]["sw"]
    view.mouse.move(x, y)
    view.keyboard.down("Control")
    view.mouse.wheel(0, -240)
    view.keyboard.up("Control")
    view.wait_for_function("w => document.querySelector('.fx-pane svg').getBoundingClientRect().width > w * 1.2",
                           arg=before_zoom)


def test_the_view_is_kept_across_a_redraw_of_the_same_graphs(view):
    document = _drawing(*_tall())
    _open(view, document)
    view.get_by_role("button", name="Zoom in").click()
    view.get_by_role("button", name="Zoom in").click()
    zoomed = view.locator("#fx-zoom").inner_text()
    # the view is written to sessionStorage once the zooming has stopped
    view.wait_for_function("""z => Object.keys(sessionStorage).some(key => key.startsWith('fx-view:')
        && Math.round(JSON.parse(sessionStorage.getItem(key)).k * 100) + '%' === z)""", arg=zoomed)
    _open(view, document)  # the page reran: the same drawing in a new document
    assert view.locator("#fx-zoom").inner_text() == zoomed


# The page's own backgrounds (Streamlit's light and dark themes), under the frame's transparent body.
PAGE_BACKGROUND = {"light": (255, 255, 255), "dark": (14, 17, 23)}


def _luminance(rgb) -> float:
    def channel(c):
        c /= 255
        return c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (channel(c) for c in rgb)
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def _contrast(a, b) -> float:
    high, low = sorted((_luminance(a), _luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_find_nodes_outline_stands_out_on_every_kind_of_node_in_both_themes(browser, theme):
    """Issue 31: Find nodes' outline must be seen on every node whatever its diff colour (fused, absorbed, changed,
    unchanged) and under a lesson's halo, on the dark theme too: at least 3:1 against the node's fill and
    against the page (WCAG's contrast for what is not text)."""
    from devkit.browser import new_context

    before = Graph((Node("x", "_Arg"), Node("w", "_Arg"), Node("b", "_Arg"),
                    Node("mm", "MatMul", inputs=(Edge("x"), Edge("w"))),
                    Node("ba", "BiasAdd", inputs=(Edge("mm"), Edge("b"))), Node("r", "Relu", inputs=(Edge("ba"),)),
                    Node("t", "Tanh", inputs=(Edge("r"),)), Node("s", "Square", inputs=(Edge("t"),))))
    after = Graph((Node("x", "_Arg"), Node("w", "_Arg"), Node("b", "_Arg"),
                   Node("r", "_FusedMatMul", inputs=(Edge("x"), Edge("w"), Edge("b")), fused_ops=("BiasAdd", "Relu")),
                   Node("t", "Tanh", inputs=(Edge("r"),)), Node("s", "Mul", inputs=(Edge("t"), Edge("t")))))
    marks = [html_id(name, side) for name, side in (("mm", "b-"), ("t", "b-"), ("s", "b-"), ("r", "a-"), ("s", "a-"))]
    context = new_context(browser, viewport={"width": 1280, "height": 720}, color_scheme=theme)
    page = context.new_page()
    try:
        _open(page, _drawing(before, after, marks=marks, focus=[html_id("t", "b-")], theme=theme))
        colours = page.evaluate("""ids => ids.map(id => {
            const shape = document.getElementById(id).querySelector('path, polygon, ellipse');
            const rgb = v => (v.match(/\\d+(\\.\\d+)?/g) || []).slice(0, 3).map(Number);
            const style = getComputedStyle(shape);
            return {id, stroke: rgb(style.stroke), fill: rgb(style.fill), width: parseFloat(style.strokeWidth)};
        })""", marks)
    finally:
        context.close()
    fills = {tuple(c["fill"]) for c in colours}
    assert len(fills) >= 3, colours  # the marks sit on nodes of several diff colours
    for c in colours:
        assert c["width"] >= 4, c
        assert _contrast(c["stroke"], c["fill"]) >= 3, c
        assert _contrast(c["stroke"], PAGE_BACKGROUND[theme]) >= 3, c
