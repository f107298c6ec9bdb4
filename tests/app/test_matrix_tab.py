"""The page's what-if matrix: the real page and engine, a small matrix, a cell opened in the explorer."""

from __future__ import annotations

from explorer.ui import matrix as tab
from explorer.ui import state


def test_matrix_runs_shows_heatmap_and_opens_a_cell(make_app):
    at = make_app(**{state.PRESET: "matmul_bias_relu", tab.PRESETS_KEY: ["matmul_bias_relu"],
                     tab.VARY_KEY: "remapping=on,off"}).run()
    assert not at.exception
    assert any("2 cells planned" in i.value for i in at.info)
    at.button(key="matrix.run").click().run()
    assert not at.exception
    assert not at.error, [e.value for e in at.error]
    rows = at.session_state[tab.RESULT_KEY]["rows"]
    assert [(r["label"], r["status"], r["verdict"]) for r in rows] == [
        ("remapping=on", "ok", "fused"), ("remapping=off", "ok", "not fused")]
    assert rows[0]["params"]["m"] == 64  # the sidebar's (small) sizes
    heatmap = next(c for c in at.get("plotly_chart") if '"type":"heatmap"' in c.proto.spec.replace(" ", ""))
    assert "_FusedMatMul" in heatmap.proto.spec
    downloads = [d.proto.label for d in at.get("download_button")]
    assert "Matrix (CSV)" in downloads and "Matrix (JSON)" in downloads
    frame = at.dataframe[-1].value
    assert list(frame["result"]) == ["fused _FusedMatMul[BiasAdd+Relu]",
                                     "not fused (the remapping pass (or all of Grappler) is switched off)"]
    # open the second cell: the sidebar takes its configuration, and the page shows that run
    at.selectbox(key=tab.OPEN_KEY).set_value(1)
    at.button(key="matrix.open_button").click().run()
    assert not at.exception
    assert at.session_state[state.switch_key("remapping")] == "off"
    assert at.session_state[state.PRESET] == "matmul_bias_relu"


def test_matrix_on_the_servers_ray(make_app, monkeypatch):
    """A server started with EXPLORER_RAY_ADDRESS offers Ray; the cells say which node ran them."""
    ray = __import__("pytest").importorskip("ray")
    monkeypatch.setenv(tab.RAY_ADDRESS, "local")
    # cells no other test ran (a cached cell is answered from the cache, not sent to Ray)
    at = make_app(**{state.PRESET: "matmul_bias_relu", tab.PRESETS_KEY: ["matmul_bias_relu"],
                     tab.VARY_KEY: "remapping=on,off\ndependency_optimization=off", tab.RAY_KEY: True}).run()
    assert not at.exception
    try:
        assert at.checkbox(key=tab.RAY_KEY).label == "Run on Ray (local)"
        at.button(key="matrix.run").click().run()
        assert not at.exception
        rows = at.session_state[tab.RESULT_KEY]["rows"]
        assert [(r["status"], r["verdict"], r["cached"]) for r in rows] == [("ok", "fused", False),
                                                                            ("ok", "not fused", False)]
        assert all(r["node"]["node_id"] == ray.get_runtime_context().get_node_id() for r in rows)
    finally:
        ray.shutdown()
