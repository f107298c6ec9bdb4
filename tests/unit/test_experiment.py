"""Experiments as links and files (model/experiment.py, model/links.py): every model source round-trips, a link
holds only what differs from the server's defaults, a malformed link keeps what it can and names the rest, and
an experiment file is checked like any other input."""

from __future__ import annotations

import json

import pytest

from explorer.errors import SpecError
from explorer.model import stack_examples
from explorer.model.experiment import KEYS, Bench, Experiment, ignored_line, link_of
from explorer.model.flags import ENV_FLAGS, Config
from explorer.model.sources import sources
from explorer.model.spec import resolve

DIGEST = "3f" * 32
EDITED_STACK = dict(stack_examples.example("layout_fp32"), seed=7)

MODELS = {
    "preset": {"preset": "conv2d_bias_relu", "params": {"batch": 1, "height": 8, "dtype": "bfloat16"}},
    "chain": {"chain": {"contraction": "Conv2D", "activation": "Swish", "squeeze": False},
              "params": {"filter_size": 5, "second_consumer": True}},
    "ready stack": {"stack": stack_examples.example("resnet_basic_block")},
    "edited stack": {"stack": EDITED_STACK},
    "import": {"import": {"format": "savedmodel", "digest": DIGEST, "name": "my model.zip", "unknown_dim": 4,
                          "signature": "classify"}},
    "graphdef import": {"import": {"format": "graphdef", "digest": DIGEST, "name": "frozen.pb",
                                   "outputs": ["dense/BiasAdd", "out:1"], "fixed_dims": True}},
    "import before its upload": {"import": None},
}


def everything(model) -> Experiment:
    return Experiment(model=model, config=Config.make("gpu-sim:ampere", {"TF_USE_CUBLASLT": "1"},
                                                      {"remapping": "off", "memory_optimization": "on"}),
                      compiler="both", tab="bench", stages="optimized->executed", fold=True, graph_view="scopes",
                      bench=Bench(reps=100, warmup=0, seconds=30, processes=4), present=True, lesson="gelu-fusion",
                      step=3)


def test_the_default_experiment_is_the_bare_page():
    assert Experiment().to_query() == {}
    assert Experiment.from_query({}) == (Experiment(), [])


@pytest.mark.parametrize("name", MODELS)
def test_every_model_source_round_trips_through_a_link_and_a_file(name):
    exp = everything(MODELS[name])
    query = exp.to_query()
    assert all(isinstance(v, str) or all(isinstance(x, str) for x in v) for v in query.values())
    back, ignored = Experiment.from_query(query)
    assert ignored == [] and back == exp
    assert Experiment.from_json(exp.to_json()) == exp
    # a model alone: its link is its source's words and nothing else
    alone = Experiment(model=MODELS[name]).to_query()
    assert Experiment.from_query(alone) == (Experiment(model=MODELS[name]), [])


def test_links_are_short_words_not_json():
    assert Experiment(model=MODELS["preset"]).to_query() == {"preset": "conv2d_bias_relu", "batch": "1",
                                                             "height": "8", "dtype": "bfloat16"}
    assert Experiment(model=MODELS["chain"]).to_query() == {"chain": "Conv2D-BiasAdd-Swish",
                                                            "filter_size": "5", "second_consumer": "true"}
    assert Experiment(model=MODELS["ready stack"]).to_query() == {"stack": "resnet_basic_block"}
    assert json.loads(Experiment(model=MODELS["edited stack"]).to_query()["stack"]) == EDITED_STACK
    assert Experiment(model=MODELS["import"]).to_query() == {"import": DIGEST, "name": "my model.zip",
                                                             "fmt": "savedmodel", "dim": "4", "sig": "classify"}
    assert everything(MODELS["import before its upload"]).to_query()["import"] == ""
    query = everything(MODELS["preset"]).to_query()
    assert {k: query[k] for k in ("device", "TF_USE_CUBLASLT", "on", "off", "stages", "fold", "view", "present",
                                  "lesson", "step")} \
        == {"device": "gpu-sim:ampere", "TF_USE_CUBLASLT": "1", "on": ["memory_optimization"], "off": ["remapping"],
            "stages": "optimized-executed", "fold": "1", "view": "scopes", "present": "1", "lesson": "gelu-fusion",
            "step": "3"}


def test_a_link_holds_what_differs_from_the_servers_defaults():
    server = Experiment(config=Config.make("cpu", {"TF_ENABLE_ONEDNN_OPTS": "1"}))
    assert server.to_query(server) == {}
    # the flag left at TensorFlow's default on a server that sets it: said explicitly
    unset = Experiment()
    assert unset.to_query(server) == {"TF_ENABLE_ONEDNN_OPTS": "unset"}
    assert Experiment.from_query({"TF_ENABLE_ONEDNN_OPTS": "unset"}, server) == (unset, [])
    assert Experiment.from_query({}, server) == (server, [])
    # a link with no switch set, on top of a base with one
    base = Experiment(config=Config.make("cpu", None, {"remapping": "off"}))
    assert Experiment().to_query(base) == {"off": ""}
    assert Experiment.from_query({"off": ""}, base)[0] == Experiment()


def test_a_malformed_link_keeps_what_it_can_and_names_the_rest():
    exp, ignored = Experiment.from_query({
        "preset": "matmul_bias_relu", "m": "abc", "k": "32", "filter_size": "3", "TF_USE_CUBLASLT": "7",
        "TF_ENABLE_ONEDNN_OPTS": "0", "off": "remapping,warp_drive", "stages": "sideways", "reps": "1",
        "tab": "<script>", "lesson": "../etc", "view": "sideways", "colour": "red"})
    assert exp.model == resolve({"preset": "matmul_bias_relu", "params": {"k": 32}}).public_dict()
    assert exp.config == Config.make("cpu", {"TF_ENABLE_ONEDNN_OPTS": "0"}, {"remapping": "off"})
    assert exp.stages == "traced->optimized" and exp.bench == Bench() and exp.tab is None and exp.lesson is None
    assert exp.graph_view == "auto" and exp.fold is False
    line = ignored_line(ignored)
    for part in ("m=abc (expected a whole number", "filter_size=3 (MatMul + BiasAdd + ReLU has no such parameter)",
                 "TF_USE_CUBLASLT=7", "off=warp_drive (not a Grappler switch)", "stages=sideways", "reps=1",
                 "tab=<script>", "lesson=../etc", "view=sideways (", "colour (not a setting of the explorer)"):
        assert part in line, (part, line)
    assert line.startswith("Ignored from the link: ") and "\n" not in line


@pytest.mark.parametrize("query,phrase", [
    ({"preset": "no_such_thing"}, "preset=no_such_thing (unknown preset 'no_such_thing'); the default model instead"),
    ({"chain": "Conv9D-Relu"}, "chain=Conv9D-Relu ('Conv9D' is not an op of a chain"),
    ({"chain": "Squeeze-MatMul"}, "chain=Squeeze-MatMul"),
    ({"stack": "{not json"}, "not valid JSON"),
    ({"stack": "nonesuch"}, "no ready stack 'nonesuch'"),
    ({"import": "deadbeef"}, "64 hex digits"),
    ({"import": DIGEST, "fmt": "onnx"}, "'onnx' is not one of"),
    ({"preset": "matmul_bias_relu", "m": "1000000", "n": "1000000"}, "make the sizes smaller"),
])
def test_a_model_a_link_cannot_name_opens_the_default_model_or_its_own_sizes(query, phrase):
    exp, ignored = Experiment.from_query(query)
    assert phrase in ignored_line(ignored)
    assert exp.ready


def test_repeated_keys_are_lists_and_special_chains_have_words():
    exp, ignored = Experiment.from_query({"preset": "matmul_bias_relu", "off": ["remapping", "constant_folding"],
                                          "on": "memory_optimization"})
    assert ignored == [] and exp.config.grappler_dict == {"remapping": "off", "constant_folding": "off",
                                                         "memory_optimization": "on"}
    assert Experiment.from_query({"off": "remapping,constant_folding", "on": ["memory_optimization"]})[0].config \
        == exp.config
    layer_norm = {"chain": {"kind": "layer_norm"}}
    assert Experiment(model=layer_norm).to_query() == {"chain": "layer_norm"}
    padded = {"chain": {"contraction": "Conv3D", "pad": True, "bias": "BiasAdd", "activation": "Relu"}}
    assert Experiment(model=padded).to_query()["chain"] == "Pad-Conv3D-BiasAdd-Relu"
    assert Experiment.from_query({"chain": "Pad-Conv3D-BiasAdd-Relu"})[0] == Experiment(model=padded)


def test_two_sources_in_one_link_take_the_first_and_say_so():
    exp, ignored = Experiment.from_query({"preset": "matmul_bias_relu", "stack": "layout_fp32"})
    assert exp.source.id == "preset" and ignored == ["stack=layout_fp32 (the link already names a preset)"]


def test_link_keys_do_not_collide():
    per_source = {source.id: tuple(link_of(source).keys) for source in sources().values()}
    shared = set(KEYS) | set(ENV_FLAGS)
    assert len(shared) == len(KEYS) + len(ENV_FLAGS)
    for source, keys in per_source.items():
        assert not set(keys) & shared, (source, set(keys) & shared)
        assert keys[0] == source
        for other in per_source:
            assert other == source or other not in keys


def test_a_step_needs_its_lesson_and_a_lesson_starts_at_step_one():
    assert Experiment.from_query({"lesson": "gelu", "step": "2"})[0].step == 2
    assert Experiment.from_query({"lesson": "gelu"})[0].step == 1
    exp, ignored = Experiment.from_query({"step": "2"})
    assert exp.step is None and ignored == ["step=2 (no lesson named)"]
    assert Experiment.from_query({"lesson": "gelu", "step": "0"})[1][0].startswith("step=0")
    assert Experiment(lesson="gelu", step=1).to_query() == {"lesson": "gelu"}
    assert Experiment(present=True).to_query() == {"present": "1"}


def test_an_experiment_file_carries_results_and_its_link_but_reads_neither_back():
    exp = everything(MODELS["preset"])
    text = exp.to_json(results={"fusions": ["_FusedConv2D"]}, link="http://localhost:8501/?preset=x")
    data = json.loads(text)
    assert data["experiment"] == 1 and data["results"] == {"fusions": ["_FusedConv2D"]}
    assert Experiment.from_json(text) == exp
    minimal = Experiment.from_json('{"experiment": 1, "model": {"preset": "matmul_bias_relu"}}')
    assert minimal == Experiment(model={"preset": "matmul_bias_relu"})


@pytest.mark.parametrize("data,field", [
    ("not json", "experiment: not valid JSON"),
    ("[]", "experiment: expected an experiment file"),
    ({"experiment": 2, "model": {}}, "format 2 is not known here"),
    ({"experiment": 1}, "model: missing"),
    ({"experiment": 1, "model": {"preset": "x"}}, "preset: unknown preset"),
    ({"experiment": 1, "model": {"preset": "matmul_bias_relu"}, "extra": 1}, "unknown field(s) ['extra']"),
    ({"experiment": 1, "model": {"preset": "matmul_bias_relu"}, "config": {"env": {"TF_X": "1"}}}, "env.TF_X"),
    ({"experiment": 1, "model": {"preset": "matmul_bias_relu"}, "bench": {"reps": 0}}, "bench.reps"),
    ({"experiment": 1, "model": {"preset": "matmul_bias_relu"}, "view": {"present": "yes"}}, "view.present"),
    ({"experiment": 1, "model": {"preset": "matmul_bias_relu"}, "lesson": {"id": "A B"}}, "lesson:"),
    ({"experiment": 1, "model": {"import": {"format": "graphdef", "digest": DIGEST, "path": "/etc/passwd"}}},
     "model.import.path: an experiment names a model by its content"),
])
def test_an_experiment_file_is_checked_like_any_input(data, field):
    text = data if isinstance(data, str) else json.dumps(data)
    with pytest.raises(SpecError) as caught:
        Experiment.from_json(text)
    assert field in str(caught.value)


def test_an_experiment_file_that_is_not_text_or_too_big_is_refused():
    with pytest.raises(SpecError, match="not a text file"):
        Experiment.from_json(b"\xff\xfe\x00binary")
    with pytest.raises(SpecError, match="at most 4 MiB"):
        Experiment.from_json(b" " * (5 << 20))


@pytest.mark.parametrize("model,stem", [
    ({"import": {"format": "graphdef", "name": "resnet50 frozen.pb", "digest": "ab" * 32}}, "resnet50_frozen"),
    ({"import": {"format": "keras", "name": "../../etc/passwd.keras", "digest": "ab" * 32}}, "passwd"),
    ({"import": {"format": "graphdef", "name": "...", "digest": "ab" * 32}}, "import"),
    ({"preset": "matmul_bias_relu"}, "matmul_bias_relu"),
])
def test_files_of_an_imported_model_are_named_after_it(model, stem):
    # Every saved experiment of an imported model was import.experiment.json.
    exp = Experiment(model=model)
    assert exp.source.stem(exp.model) == stem
