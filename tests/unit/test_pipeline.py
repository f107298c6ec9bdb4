"""Grappler's log, as TensorFlow 2.21 prints it, turned into passes."""

from explorer.analysis.grappler_log import main_run, parse_log, split_line

LOG = """\
I0000 00:00:1795308399.996640    4275 meta_optimizer.cc:791] Optimize GrapplerItem: item.id=__inference_model_39 num_optimizers=13, num nodes = 20
I0000 00:00:1795308399.996647    4275 meta_optimizer.cc:826] Starting optimization iteration 0
I0000 00:00:1795308399.997207    4275 dump_graph.cc:245] Dumped Graph to /d/before_MetaOptimizer_iteration_0_1407.pbtxt
I0000 00:00:1795308361.470844    4241 meta_optimizer.cc:930] Replace function library with a stub for model_pruner
I0000 00:00:1795308361.470920    4241 meta_optimizer.cc:973] model_pruner: Graph size after: 19 nodes (-1), 20 edges (-1), time = 0.07ms.
I0000 00:00:1795308399.997502    4275 dump_graph.cc:245] Dumped Graph to /d/after_MetaOptimizer_iteration_0_model_pruner_1407.pbtxt
I0000 00:00:1795308361.471704    4241 meta_optimizer.cc:973] tfg_optimizer{any(tfg-consolidate-attrs,tfg-toposort)}: Graph size after: 19 nodes (0), 20 edges (0), time = 0.742ms.
I0000 00:00:1795308361.472037    4241 meta_optimizer.cc:930] Replace function library with a stub for shape_optimizer
I0000 00:00:1795308361.472491    4241 meta_optimizer.cc:930] Replace function library with a stub for remapper
I0000 00:00:1795308361.472934    4241 remapper.cc:3377] Fuse MatMul with BiasAdd:  bias_add=BiasAdd contraction=MatMul
I0000 00:00:1795308361.473104    4241 meta_optimizer.cc:973] remapper: Graph size after: 19 nodes (-1), 21 edges (-1), time = 0.605ms.
I0000 00:00:1795308399.997502    4275 dump_graph.cc:245] Dumped Graph to /d/after_MetaOptimizer_iteration_0_remapper_1407.pbtxt
I0000 00:00:1795308361.473687    4241 meta_optimizer.cc:826] Starting optimization iteration 1
I0000 00:00:1795308361.473104    4241 meta_optimizer.cc:973] remapper: Graph size after: 9 nodes (-9), 4 edges (-16), time = 0.265ms.
To enable the following instructions: AVX2, rebuild TensorFlow
W0000 00:00:1795308361.473104    4241 function.cc:11] Ignoring multi-device function optimization failure: INVALID_ARGUMENT: Node 'Relu' does not specify an operation
I0000 00:00:1795308399.996640    4275 meta_optimizer.cc:791] Optimize GrapplerItem: item.id=__inference_model_39 num_optimizers=1, num nodes = 5
"""


def test_split_line_reads_the_prefix_and_skips_continuations():
    assert split_line(LOG.splitlines()[0])["file"] == "meta_optimizer.cc"
    assert split_line("To enable the following instructions") is None


def test_passes_iterations_and_remapper_lines():
    parsed = parse_log(LOG.splitlines())
    assert [it["optimizers"] for it in parsed["items"]] == [13, 1]
    run = main_run(parsed)
    assert run["optimizers"] == 13 and len(run["iterations"]) == 2
    first = run["iterations"][0]
    assert first["before_dump"] == "/d/before_MetaOptimizer_iteration_0_1407.pbtxt"
    names = [p["pass"] for p in first["passes"]]
    assert names == ["model_pruner", "tfg_optimizer", "shape_optimizer", "remapper"]
    pruner, tfg, shape, remapper = first["passes"]
    assert pruner["changed"] and pruner["nodes_delta"] == -1 and pruner["dump"].endswith("model_pruner_1407.pbtxt")
    assert tfg["ran"] and not tfg["changed"] and tfg["time_ms"] == 0.742
    assert shape["ran"] is False
    assert remapper["log"] == ["Fuse MatMul with BiasAdd:  bias_add=BiasAdd contraction=MatMul"]
    assert remapper["dump"].endswith("remapper_1407.pbtxt")
    assert run["iterations"][1]["passes"][0]["nodes"] == 9
    assert parsed["remapper_log"] == ["Fuse MatMul with BiasAdd:  bias_add=BiasAdd contraction=MatMul"]
    assert any("Ignoring multi-device" in line for line in parsed["notable"])


def test_no_log_gives_no_run():
    assert main_run(parse_log([])) is None


def test_pass_graph_deltas_are_made_whole_in_dump_order():
    from explorer.analysis.grappler_passes import expand_pass_graphs, pass_delta

    def node(name, op, *inputs):
        return {"name": name, "op": op, "inputs": [{"src": i, "port": 0, "control": False} for i in inputs]}

    first = {"stage": "pass", "nodes": [node("x", "Placeholder"), node("m", "MatMul", "x"), node("b", "BiasAdd", "m"),
                                        node("r", "Relu", "b")]}
    fused = node("r", "_FusedMatMul", "x")
    sent = {"before.pb": first,
            # the remapper: m and b gone, r replaced by the fused node
            "remapper.pb": pass_delta("before.pb", ["x", "r"], [fused]),
            # a later pass adds an Identity in front and reorders nothing else
            "dependency.pb": pass_delta("remapper.pb", ["i", "x", "r"], [node("i", "Identity", "r")])}
    whole = expand_pass_graphs(sent)
    assert list(whole) == ["before.pb", "remapper.pb", "dependency.pb"]
    assert whole["before.pb"] is first
    assert [(n["name"], n["op"]) for n in whole["remapper.pb"]["nodes"]] == [("x", "Placeholder"), ("r", "_FusedMatMul")]
    assert [(n["name"], n["op"]) for n in whole["dependency.pb"]["nodes"]] == [
        ("i", "Identity"), ("x", "Placeholder"), ("r", "_FusedMatMul")]
    assert all(g["stage"] == "pass" for g in whole.values())
    assert expand_pass_graphs(whole) == whole  # whole graphs (a cached or recorded result) stay as they are


FAILED_PASS = (
    "I0000 00:00:1795931659.380000   32151 remapper.cc:3479] Fuse Conv2D with BiasAdd and Relu: activation=res_1/Relu "
    "bias_add=res_0/BiasAdd contraction=res_0/Conv2D\n"
    "E0000 00:00:1795931659.380611   32151 meta_optimizer.cc:967] remapper failed: INVALID_ARGUMENT: Mutation::Apply "
    "error: fanout 'add_1' exist for missing node 'add'.\n"
    "I0000 00:00:1795931659.380700   32151 meta_optimizer.cc:973] remapper: Graph size after: 19 nodes (0), 20 edges "
    "(0), time = 0.6ms.\n")


def test_a_pass_that_failed_is_notable_and_said_in_words():
    """meta_optimizer's '<pass> failed: <status>': TensorFlow drops that pass's changes and goes on, so a remapper
    that logged fusions then failed kept none of them (measured: a pre-activation residual block with oneDNN)."""
    from explorer.analysis.annotate import REMAPPER_FAILED, tf_failures
    from explorer.analysis.fix_report import failed

    parsed = parse_log(FAILED_PASS.splitlines())
    (line,) = [n for n in parsed["notable"] if "failed" in n]
    assert line.startswith("meta_optimizer.cc:967] remapper failed: INVALID_ARGUMENT") and REMAPPER_FAILED in line
    (said,) = tf_failures(parsed["notable"])
    assert said.startswith("Grappler's remapper failed on this graph") and said.endswith(line)
    assert failed({"grappler": {"notable": parsed["notable"]}}) == [said.split(" TensorFlow logged:")[0]]
    assert tf_failures([n for n in parsed["notable"] if "failed" not in n]) == []  # its Fuse line alone: nothing


def test_a_remapper_that_failed_again_in_the_same_process_is_seen_by_its_missing_graph():
    """TensorFlow logs 'remapper failed' once in a process (measured: three failing functions, one line). In a warm
    worker that logged it before, the pass shows its failure only by its Fuse lines and no size line after them. An
    unchanged size is no sign: FusedBatchNorm + Relu into _FusedBatchNormEx keeps the node and edge counts."""
    from explorer.analysis.annotate import remapper_failure, tf_failures

    item = ["I0000 00:00:1795931659.300000   32151 meta_optimizer.cc:791] Optimize GrapplerItem: "
            "item.id=__inference_model_7 num_optimizers=13, num nodes = 20",
            "I0000 00:00:1795931659.300001   32151 meta_optimizer.cc:826] Starting optimization iteration 0",
            "I0000 00:00:1795931659.300002   32151 meta_optimizer.cc:930] Replace function library with a stub for remapper"]
    fused, size = [line for line in FAILED_PASS.splitlines() if "remapper failed" not in line]
    parsed = parse_log(item + [fused])  # Fuse lines, then the next pass: no size line
    line = remapper_failure(parsed["notable"])
    assert line is not None and "on __inference_model_7: it logged 1 fusion(s), and no graph after it" in line
    (said,) = tf_failures(parsed["notable"])
    assert said.startswith("Grappler's remapper failed on this graph")
    assert remapper_failure(parse_log(item + [fused, size])["notable"]) is None  # 19 nodes (0): an in-place rewrite
