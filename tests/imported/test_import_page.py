"""The page's "an imported model": real uploads through AppTest's file uploader, the real engine.

What fuses is compared with TensorFlow run directly on the same file (conftest's oracle); refused
uploads are explained and the session goes on; one session's upload is not another's.
"""

from __future__ import annotations

import io
import os
import zipfile
from pathlib import Path

import pytest

from explorer.engine import uploads
from explorer.engine.model_failure import ONEDNN_OFF
from explorer.engine.uploads import spec_for_path
from explorer.model.flags import Config
from explorer.ui import state
from tests.page_tabs import open_tab

pytestmark = pytest.mark.tf
APP = str(Path(__file__).resolve().parents[2] / "app.py")


@pytest.fixture(scope="module", autouse=True)
def _page_engine(tmp_path_factory):
    old = {k: os.environ.get(k) for k in ("EXPLORER_CACHE_DIR", "EXPLORER_UPLOAD_DIR")}
    os.environ["EXPLORER_CACHE_DIR"] = str(tmp_path_factory.mktemp("cache"))
    os.environ["EXPLORER_UPLOAD_DIR"] = str(tmp_path_factory.mktemp("uploads"))
    yield
    from explorer.ui import cached

    cached.shutdown()
    for key, value in old.items():
        os.environ.pop(key) if value is None else os.environ.__setitem__(key, value)


@pytest.fixture(scope="module")
def faulty(tmp_path_factory):
    """The faulty-fusion corpus's imported models (tests/fixtures/faulty/make_faulty.py), made once."""
    from tests.faulty.corpus import make_imports

    return make_imports(tmp_path_factory.mktemp("faulty"))


def page(onednn: str = "0"):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=300)
    at.session_state[state.MODE] = "import"
    at.session_state[state.env_key("TF_ENABLE_ONEDNN_OPTS")] = onednn
    return at.run()


def upload(at, name: str, data: bytes):
    at.file_uploader(key=state.UPLOAD).set_value((name, data, "application/octet-stream"))
    return at.run()


def texts(at) -> str:
    return "\n".join([e.value for e in at.error] + [m.value for m in at.markdown] + [i.value for i in at.info])


def fused_total(counts: dict) -> int:
    return sum(n for op, n in counts.items() if op.startswith("_Fused"))


def report_fusions(at) -> dict:
    """The fusion report panel's table as {"_FusedConv2D[BiasAdd,Relu]": count} (the oracle's spelling)."""
    frame = next(d.value for d in at.dataframe if "fused op" in d.value.columns)
    return {op.replace(" [", "[").replace(", ", ","): int(n) for op, n in zip(frame["fused op"], frame["count"])}


def engine_result(at) -> dict:
    """The engine's result the page shows, from the result cache of the engine the page ran on."""
    return at.session_state[state.ENGINE].cache.get(at.session_state[state.SHOWN]["key"])


def zipped(directory: Path) -> bytes:
    data = io.BytesIO()
    with zipfile.ZipFile(data, "w") as archive:
        for path in directory.rglob("*"):
            if path.is_file():
                archive.write(path, str(path.relative_to(directory.parent)))
    return data.getvalue()


def test_a_graphdef_upload_shows_what_tensorflow_fuses(models, direct_counts):
    at = page("0")
    assert not at.exception and "Upload a model file" in texts(at)
    at = upload(at, "small.pb", (models / "small.pb").read_bytes())
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    fused = fused_total(direct_counts["0"]["small"]["graphdef"])
    assert f"**{fused} fusions** found by Grappler" in texts(at)
    assert "small.pb (GraphDef)" in texts(at)
    # The fusion report panel: every fused op TensorFlow made, counted as a direct run counts them.
    open_tab(at, "report")
    expected = {op: n for op, n in direct_counts["0"]["small"]["graphdef"].items() if op.startswith("_Fused")}
    assert report_fusions(at) == expected
    assert any(b.label == "Fusions (CSV)" for b in at.get("download_button"))
    assert "fed as [1, 16, 16, 3]" in "\n".join(c.value for c in at.sidebar.caption)  # the unknown batch, as fed
    # The upload lives in this session's own directory, in this server's folder (issue 30), under its digest.
    directory = at.session_state[state.UPLOAD_DIR]
    assert Path(directory).parent.parent == Path(os.environ["EXPLORER_UPLOAD_DIR"])
    assert Path(directory).parent.name.startswith(f"server-{os.getpid()}-")
    assert [p.suffix for p in Path(directory).iterdir()] == [".pb"]
    # XLA compiles the imported graph too, its fusions named by the graph's own nodes
    open_tab(at, "xla")
    at.toggle(key=state.XLA_ON).set_value(True).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    table = next(df.value for df in at.dataframe if "XLA instruction" in df.value.columns)
    nodes = {n["name"] for n in engine_result(at)["stages"]["traced"]["nodes"]}
    ops = {op for cell in table[table["what"] == "loop fusion"]["TF ops"] for op in cell.split(", ")}
    assert ops and ops <= nodes, ops - nodes
    assert "Size sweep with XLA" not in texts(at)  # an imported model has no size to sweep
    other = page("0")
    other = upload(other, "small.pb", (models / "small.pb").read_bytes())
    assert other.session_state[state.UPLOAD_DIR] != directory  # another session, another directory


def test_refused_uploads_are_explained_and_the_session_goes_on(models):
    at = page("0")
    at = upload(at, "model.zip", zipped(models / "small_savedmodel"))
    assert not at.exception
    assert f"{uploads.ALLOW_SETTING}=1" in texts(at) and "The upload was refused" in texts(at)
    for name, data, words in (
        ("empty.pb", b"", "the file is empty (0 bytes)"),
        ("notes.pb", b"just some notes\n" * 10, "a text file, but not a GraphDef"),
        ("writefile.pb", (models / "writefile.pb").read_bytes(), "op WriteFile (node 'WriteFile' in graph)"),
    ):
        at = upload(at, name, data)
        assert not at.exception
        assert words in texts(at), texts(at)
    assert at.session_state[state.MODE] == "import"
    # The server keeps serving: the next upload in the same session runs.
    at = upload(at, "small.pb", (models / "small.pb").read_bytes())
    assert not at.error and "fusions** found by Grappler" in texts(at)


def test_savedmodel_and_keras_uploads_when_the_server_allows_them(models, direct_counts, monkeypatch):
    monkeypatch.setenv(uploads.ALLOW_SETTING, "1")
    at = page("1")
    at = upload(at, "small.keras", (models / "small.keras").read_bytes())
    assert not at.exception and not at.error, [e.value for e in at.error]
    fused = fused_total(direct_counts["1"]["small"]["keras"])
    assert f"**{fused} fusions** found by Grappler" in texts(at) and "oneDNN on" in texts(at)
    at = upload(at, "lambda.keras", (models / "lambda.keras").read_bytes())
    assert "layer Lambda (named 'doubler' in config.json)" in texts(at)


def test_a_savedmodels_signatures_are_a_dropdown_and_unknown_dims_are_set(models, engine, monkeypatch):
    monkeypatch.setenv(uploads.ALLOW_SETTING, "1")
    path = models / "two_heads_savedmodel"
    at = upload(page("0"), "two_heads.zip", zipped(path))
    assert not at.exception and not at.error, [e.value for e in at.error]
    box = at.sidebar.selectbox(key=state.SIGNATURE)
    assert box.options == ["serving_default", "tanh_head"] and box.value == "serving_default"
    assert "`x` [?, 8] float32 → fed as [1, 8]" in "\n".join(c.value for c in at.sidebar.caption)
    at.sidebar.number_input(key=state.UNKNOWN_DIM).set_value(3)
    at = box.select("tanh_head").run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert "fed as [3, 8]" in "\n".join(c.value for c in at.sidebar.caption)
    # What the page shows is the engine's result for that signature and batch (checked against its graph).
    direct = engine.inspect(spec_for_path(str(path), signature="tanh_head", unknown_dim=3),
                            Config.make("cpu", {"TF_ENABLE_ONEDNN_OPTS": "0"}))
    assert direct["output_shapes"] == [[3, 4]]
    open_tab(at, "report")
    assert report_fusions(at) == {f["fused"].replace(" [", "[").replace(", ", ","): f["count"]
                                  for f in direct["report"]["fusions"]}
    misses = next((d.value for d in at.dataframe if "form found" in d.value.columns), None)
    expected = direct["report"]["near_misses"]
    assert (0 if misses is None else len(misses)) == len(expected)
    optimized = {n["name"]: n for n in direct["stages"]["optimized"]["nodes"]}
    for miss in expected:  # each near-miss is a real chain of the optimized graph
        first, second = (optimized[name] for name in miss["nodes"][:2])
        assert any(edge["src"] == first["name"] for edge in second["inputs"])


def test_a_big_models_pass_graphs_are_recorded_when_asked_for(models, monkeypatch):
    monkeypatch.setenv(uploads.ALLOW_SETTING, "1")
    at = upload(page("0"), "mobilenetv2.zip", zipped(models / "mobilenetv2_savedmodel"))
    assert not at.exception and not at.error, [e.value for e in at.error]
    open_tab(at, "passes")
    captions = "\n".join(str(c.value) for c in at.caption)
    assert "came without the graph after every pass" in captions
    assert not [s for s in at.selectbox if s.key == state.PASS]  # nothing drawn until asked
    at = at.button(key="passes.record").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert not [b for b in at.button if b.key == "passes.record"]  # the graphs instead of the button
    chosen = at.selectbox(key=state.PASS)
    assert "remapper" in chosen.options[chosen.index]  # the pass that fuses is the one shown first
    assert "apply to these two graphs too" in "\n".join(str(c.value) for c in at.caption)  # drawn, as boxes
    at = at.run()  # a rerun keeps them (the session asked; the engine's cache holds them)
    assert at.selectbox(key=state.PASS).options == chosen.options


def test_a_frozen_cnn_with_batch_norm_names_its_near_misses(models):
    """Issue 22's upload: a small CNN with batch norm, frozen. Its conv's BiasAdd → Mul → AddV2 → Relu is a
    near-miss, and a layer that has a bias (zero, here folded away) is never told to add one."""
    at = upload(page("0"), "small.pb", (models / "small.pb").read_bytes())
    assert not at.exception and not at.error, [e.value for e in at.error]
    open_tab(at, "report")
    misses = next(d.value for d in at.dataframe if "form found" in d.value.columns)
    norm = misses[misses["kind"] == "batch norm as arithmetic"]
    assert len(norm) == 1 and norm["pattern"].iloc[0] == "_FusedConv2D [BiasAdd] + batch norm"
    optimized = {n["name"]: n for n in engine_result(at)["stages"]["optimized"]["nodes"]}
    head, mul, add = norm["nodes"].iloc[0]
    assert [optimized[n]["op"] for n in (head, mul, add)] == ["_FusedConv2D", "Mul", "AddV2"]
    assert optimized[head]["fused_ops"] == ["BiasAdd"]
    assert any(n["op"] == "Relu" and n["inputs"][0]["src"] == add for n in optimized.values())
    assert norm["fix checked"].iloc[0].startswith("— no setting applies")
    at = upload(at, "small_zero_bias.pb", (models / "small_zero_bias.pb").read_bytes())
    assert not at.exception and not at.error, [e.value for e in at.error]
    misses = next(d.value for d in at.dataframe if "form found" in d.value.columns)
    assert len(misses) and not misses.apply(lambda row: "use_bias" in " ".join(map(str, row)), axis=1).any()
    # The zero bias folded away is named as zero, and the verified setting says what it ran.
    assert any("is all zeros" in form for form in misses["form found"])
    assert any(checked.startswith("✓ verified: ran TF_ENABLE_ONEDNN_OPTS=1") for checked in misses["fix checked"])
    assert "Settings are offered only once the engine has run them" in "\n".join(str(c.value) for c in at.caption)


def test_the_report_times_each_op_and_tries_the_fixes(models):
    """A frozen CNN with batch norm: "Time each op" ranks its near-miss by time; "Try the fixes" folds the batch
    norm into the convolution, whose Relu then fuses, checks the outputs and times the fixed model against
    the original, shows both graphs and offers the fixed GraphDef."""
    at = upload(page("0"), "small.pb", (models / "small.pb").read_bytes())
    assert not at.exception and not at.error, [e.value for e in at.error]
    open_tab(at, "report")
    at = at.button(key="report.time_ops").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    misses = next(d.value for d in at.dataframe if "form found" in d.value.columns)
    assert list(misses.columns[:4]) == ["kind", "layer", "time (ms)", "share"] and (misses["time (ms)"] > 0).all()
    assert "Op time per call" in [m.label for m in at.metric]
    assert at.multiselect(key="report.fixes.chosen").value == ["fold-batchnorm"]  # a frozen graph: no variables
    at = at.button(key="report.fixes.run").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    metrics = {m.label: m.value for m in at.metric}
    before, after = (int(n) for n in metrics["Fused kernels"].split(" → "))
    assert after >= before and metrics["Outputs"] == "agree" and metrics["Speedup, all fixes"].endswith("×")
    fused = next(d.value for d in at.dataframe if "gained" in d.value.columns)
    assert fused[fused["fused op"] == "_FusedConv2D [BiasAdd, Relu]"]["gained"].iloc[0] >= 1
    assert any("Fold each batch norm into the layer before it" in i.value for i in at.info)
    assert any(b.label.startswith("Download the fixed model (GraphDef)") for b in at.get("download_button"))
    # The fixed model lies in the session's folder, counted in its quota (issue 30: each click wrote another)
    session = Path(at.session_state[state.UPLOAD_DIR])
    assert len([p for p in session.iterdir() if p.name.startswith("fixed-")]) == 1
    assert len(list(session.iterdir())) <= uploads.SESSION_MAX_FILES
    at = at.toggle(key="report.fixes.graphs").set_value(True).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any(m.value.startswith("**With the fixes**, after Grappler") for m in at.markdown)


def test_try_the_fixes_starts_from_the_fixes_that_apply_to_the_model_on_screen(models, monkeypatch):
    """The fix picker kept the previous model's choice: after a Keras model (variables: freeze applies), a frozen
    GraphDef ran freeze, which the panel itself called not applicable to it."""
    monkeypatch.setenv(uploads.ALLOW_SETTING, "1")
    at = open_tab(upload(page("0"), "small.keras", (models / "small.keras").read_bytes()), "report")
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert "freeze" in at.multiselect(key="report.fixes.chosen").value
    at = upload(at, "small.pb", (models / "small.pb").read_bytes())
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.multiselect(key="report.fixes.chosen").value == ["fold-batchnorm"]
    assert "freeze (the model reads no variables" in "\n".join(c.value for c in at.caption)
    # a choice made for this model stays while it is on screen
    at = at.multiselect(key="report.fixes.chosen").set_value([]).run()
    assert at.multiselect(key="report.fixes.chosen").value == []


def test_a_setting_fix_is_timed_against_the_current_setting(models):
    """"set TF_ENABLE_ONEDNN_OPTS=1 (run here: it fuses …)" was never timed: a MatMul+Add+Tanh was no faster with
    it. The report's "Time it" runs A (the current setting) against B (the setting), each as served."""
    at = page("0")
    at.session_state[state.BENCH_PROCESSES] = 2
    at = open_tab(upload(at, "small_zero_bias.pb", (models / "small_zero_bias.pb").read_bytes()), "report")
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert any(m.value.startswith("`TF_ENABLE_ONEDNN_OPTS=1`: fuses here; not timed yet") for m in at.markdown)
    at = at.button(key="report.time.0").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    line = next(m.value for m in at.markdown if m.value.startswith("`TF_ENABLE_ONEDNN_OPTS=1`:"))
    assert "against the current setting" in line and "replicated over 2 rounds" in line
    assert any(w in line for w in ("it is faster here", "slower with it here", "not measurably faster here"))


def test_a_broken_import_is_diagnosed_and_the_model_with_only_that_fusion_prevented_offered(faulty):
    # the corpus's frozen Conv2D + FusedBatchNorm + Tanh: oneDNN on, the remapper's fusion fails; folding the batch
    # norm away prevents only that fusion, runs and agrees, and the page offers that model for download
    data = (faulty / "conv_bn_tanh.pb").read_bytes()
    at = upload(page("1"), "conv_bn_tanh.pb", data)
    assert not at.exception
    at = at.button(key="diagnose.run").click().run(timeout=900)
    assert not at.exception
    ways = next(d.value for d in at.dataframe if "way around" in d.value.columns)
    folded = ways[ways["way around"].str.contains("the batch norm folded into the convolution")]
    assert len(folded) == 1 and bool(folded["runs"].iloc[0]) and bool(folded["agrees"].iloc[0]), ways
    buttons = [b for b in at.get("download_button") if "fold-batchnorm" in str(b.proto.label)]
    assert len(buttons) == 1 and "GraphDef" in buttons[0].proto.label, [b.proto.label for b in at.get("download_button")]


def test_an_import_the_remapper_fails_on_is_offered_the_split_add_rewrite(faulty):
    # the corpus's pre-activation residual blocks, oneDNN on: the remapper fails and TensorFlow keeps none of its
    # fusions (the outputs agree: no banner). For an import the ways around it include split-add, which keeps the
    # convolutions' fusions; the caption says so before the button, and the rewritten model is offered.
    data = (faulty / "preact_residual.pb").read_bytes()
    at = upload(page("1"), "preact_residual.pb", data)
    assert not at.exception
    assert any("The remapper failed on this model" in m.value for m in at.markdown)
    assert any("a copy with each residual sum the remapper fails on computed twice (split-add)" in c.value
               for c in at.caption), [c.value for c in at.caption]
    at = at.button(key="diagnose.run").click().run(timeout=900)
    assert not at.exception
    ways = next(d.value for d in at.dataframe if "way around" in d.value.columns)
    split = ways[ways["way around"].str.contains("split-add")]
    assert len(split) == 1 and bool(split["runs"].iloc[0]) and bool(split["agrees"].iloc[0]), ways
    assert bool(split["Grappler optimises"].iloc[0]), ways
    labels = [str(b.proto.label) for b in at.get("download_button")]
    assert any("split-add" in label for label in labels), labels


def test_a_model_only_onednn_fails_says_so_and_one_click_runs_it_without(faulty):
    # the corpus's tf.pad of the channel axis + conv, oneDNN on: its layout pass folds the Pad into the conv, which
    # fails with the remapper on and off alike; the engine finds that it runs without oneDNN, and the page offers it
    data = (faulty / "pad_channel.pb").read_bytes()
    at = upload(page("1"), "pad_channel.pb", data)
    assert not at.exception
    assert any(ONEDNN_OFF in e.value for e in at.error), [e.value for e in at.error]
    at = at.button(key="page.onednn_off").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert at.session_state[state.env_key("TF_ENABLE_ONEDNN_OPTS")] == "0"
    assert any("found by Grappler" in m.value and "oneDNN off" in m.value for m in at.markdown)
    assert any("outputs agree" in c.value for c in at.caption), [c.value for c in at.caption]


def test_a_model_whose_outputs_onednn_misshapes_says_so_in_the_banner_and_the_benchmark(faulty):
    # the corpus's tf.pad of the batch axis + conv, oneDNN on: both runs drop the batch (the remapper off shares
    # oneDNN's fold), so only the declared shapes show it; the benchmark's outputs are no gain
    data = (faulty / "pad_batch.pb").read_bytes()
    at = upload(page("1"), "pad_batch.pb", data)
    assert not at.exception
    assert any("where the model's traced graph declares [2, 6, 6, 4]" in e.value for e in at.error), \
        [e.value for e in at.error]
    open_tab(at, "bench")
    at.session_state[state.BENCH_REPS] = 3
    at = at.button(key="bench.run").click().run()
    assert not at.exception
    assert any(e.value.startswith("**The outputs are wrong:** output 0 has shape [1, 6, 6, 4]") for e in at.error)
    assert any(m.label == "Outputs agree" and m.value == "NO" for m in at.metric)
