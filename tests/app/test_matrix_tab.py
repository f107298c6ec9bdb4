"""The page's what-if matrix: the real page and engine, a small matrix, a cell opened in the explorer."""

from __future__ import annotations

from explorer.ui import matrix as tab
from explorer.ui import state
from tests.page_tabs import open_tab


def test_matrix_runs_shows_heatmap_and_opens_a_cell(make_app):
    at = open_tab(make_app(**{state.PRESET: "matmul_bias_relu", tab.PRESETS_KEY: ["matmul_bias_relu"],
                              tab.VARY_KEY: "remapping=on,off"}), "matrix")
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
    at = open_tab(make_app(**{state.PRESET: "matmul_bias_relu", tab.PRESETS_KEY: ["matmul_bias_relu"],
                              tab.VARY_KEY: "remapping=on,off\ndependency_optimization=off", tab.RAY_KEY: True}),
                  "matrix")
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


def test_open_in_the_explorer_with_a_choice_made_in_an_earlier_matrix(make_app):
    # The browser sends a selectbox's choice back as its words; one chosen in an earlier matrix (options since
    # changed) comes back as a str, and the callback compared it with an int: TypeError (ui/matrix.py:79).
    at = open_tab(make_app(**{state.PRESET: "matmul_bias_relu", tab.PRESETS_KEY: ["matmul_bias_relu"],
                              tab.VARY_KEY: "remapping=on,off"}), "matrix")
    at.button(key="matrix.run").click().run()
    assert not at.exception
    title = tab.cell_name(at.session_state[tab.RESULT_KEY]["rows"][0])
    _browser_sends(at, f"{title} · TF_ENABLE_ONEDNN_OPTS=0")  # a choice of an earlier matrix: no such cell here
    at.button(key="matrix.open_button").click().run()
    assert not at.exception
    assert any("no cell that ran as" in w.value for w in at.warning)
    assert at.session_state[state.switch_key("remapping")] != "off"  # nothing opened
    # words that name a cell of this matrix open that cell, whatever matrix they were chosen in
    _browser_sends(at, f"{title} · remapping=off")
    at.button(key="matrix.open_button").click().run()
    assert not at.exception
    assert at.session_state[state.switch_key("remapping")] == "off"
    assert not any("no cell that ran as" in w.value for w in at.warning)


def _browser_sends(at, words: str) -> None:
    """The picker's choice as a browser that still shows an earlier matrix's options sends it: its words."""
    picker = at.selectbox(key=tab.OPEN_KEY)
    if words not in picker.options:
        picker.options.append(words)
    picker.set_value(words)


def test_a_rows_configurations_against_a_chosen_base(make_app):
    from explorer.ui import matrix_against

    at = open_tab(make_app(**{state.PRESET: "matmul_bias_relu", tab.PRESETS_KEY: ["matmul_bias_relu"],
                              tab.VARY_KEY: "TF_ENABLE_ONEDNN_OPTS=0,1", state.BENCH_PROCESSES: 2}), "matrix")
    at.button(key="matrix.run").click().run()
    assert not at.exception
    at.selectbox(key=matrix_against.BASE_KEY).set_value(1)  # oneDNN on as A
    at.button(key="matrix.against_button").click().run(timeout=600)  # 2 rounds × 2 fresh processes
    assert not at.exception and not at.error, [e.value for e in at.error]
    frame = next(d.value for d in at.dataframe if "B against A" in d.value.columns)
    assert list(frame["B"]) == ["TF_ENABLE_ONEDNN_OPTS=0"] and list(frame["A (base)"]) == ["TF_ENABLE_ONEDNN_OPTS=1"]
    assert "95% CI" in frame["B against A"].iloc[0]
    assert any("replicated over 2 rounds" in c.value for c in at.caption)
