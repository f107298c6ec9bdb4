"""Pin and compare, and the what-if matrix, for a layer stack and an imported model (recorded worker answers): the
comparison's summaries and both graphs side by side, and a matrix whose row is the sidebar's own model."""

from __future__ import annotations

import pytest

from explorer.model import stack_examples
from explorer.model.stack import to_text
from explorer.ui import matrix, state
from tests.page_tabs import open_tab
from tests.security.hostile_graphs import good

SOURCES = ("stack", "import")


def _page(replay_app, source: str):
    if source == "stack":
        text = to_text(stack_examples.example("layout_fp32"))
        at = replay_app(**{state.MODE: "stack", state.STACK_TEXT: text, state.STACK_SAVED: text}).run()
    else:
        at = replay_app(**{state.MODE: "import"}).run()
        at.file_uploader(key=state.UPLOAD).set_value(("scaled.pbtxt", good(3.0), "application/octet-stream"))
        at.run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    return at


@pytest.mark.parametrize("source", SOURCES)
def test_pin_then_switch_the_remapper_off_shows_both_sides_and_both_graphs(replay_app, source):
    at = _page(replay_app, source)
    at.button(key="whatif.pin").click().run()
    at.radio(key=state.switch_key("remapping")).set_value("off").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    text = "\n".join(m.value for m in at.markdown)
    assert "Changed: `remapping: default → off`" in text
    sides = [m.value for m in at.markdown if m.value.startswith(("**Pinned**", "**Current**"))]
    assert len(sides) == 2
    headings = [m.value for m in at.markdown if m.value.startswith(("**Pinned ·", "**Current ·"))]
    assert [h.split(" · ")[1] for h in headings] == ["after Grappler", "after Grappler"]  # both graphs drawn
    assert at.get("iframe"), "the two graphs, linked, side by side"


@pytest.mark.parametrize("source", SOURCES)
def test_the_matrix_has_the_sidebars_own_model_as_a_row(replay_app, source):
    at = _page(replay_app, source)
    at.session_state[matrix.VARY_KEY] = "remapping=on,off"
    open_tab(at, "matrix")
    assert at.checkbox(key=matrix.THIS_KEY).value
    at.button(key="matrix.run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    rows = at.session_state[matrix.RESULT_KEY]["rows"]
    name = "layer stack layout_fp32" if source == "stack" else "scaled.pbtxt (GraphDef)"
    assert [(r["model"], r["label"], r["status"]) for r in rows] == [(name, "remapping=on", "ok"),
                                                                     (name, "remapping=off", "ok")]
    assert rows[1]["verdict"] == "not fused"
    assert all("path" not in str(r) for r in rows), "a row names the model, never the server's file"
    # a cell opens in the explorer: the same model, the cell's configuration
    at.selectbox(key=matrix.OPEN_KEY).set_value(1)
    at.button(key="matrix.open_button").click().run()
    assert not at.exception
    assert at.session_state[state.switch_key("remapping")] == "off" and at.session_state[state.MODE] == source
