"""The agreement check runs in a thread of its own beside inspect's graph conversion (worker.agreement.start):
its calls carry their own Grappler options (Runtime.call_options / calling_with), so the remapper is off for
its reference alone, and neither Grappler's global options nor another thread's calls see it."""

from __future__ import annotations

from tests.worker.worker_script import run_in_worker

SCRIPT = """
import threading

x = tf.constant([[1.0, -2.0], [3.0, 0.5]])
w = tf.constant([[0.5, -1.0], [2.0, 1.5]])
b = tf.constant([0.25, -0.75])

def model():
    return tf.function(lambda x: tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w), b)))

def optimized_ops(call):
    ctx = worker.context.context()
    ctx.enable_run_metadata()
    ctx.export_run_metadata()
    try:
        out = call()
        graphs = ctx.export_run_metadata().function_graphs
    finally:
        ctx.disable_run_metadata()
    return sorted({n.op for g in graphs for n in g.post_optimization_graph.node}), out.numpy().tolist()

before = tf.config.optimizer.get_experimental_options()
off = worker.call_options({}, False)
seen = {"global_before": before, "global_after_snapshot": tf.config.optimizer.get_experimental_options()}

def beside():
    fn = model()
    with worker.calling_with(off):
        seen["beside"] = optimized_ops(lambda: fn(x))
    seen["beside_after"] = optimized_ops(lambda: model()(x))  # the thread's own options put back

thread = threading.Thread(target=beside)
thread.start()
thread.join()
seen["main"] = optimized_ops(lambda: model()(x))
seen["global_at_end"] = tf.config.optimizer.get_experimental_options()
protocol.send(seen)
"""


def test_the_checks_reference_alone_runs_with_the_remapper_off_and_the_global_options_stay_as_they_were():
    seen = run_in_worker(SCRIPT)
    assert "remapping" not in seen["global_before"], seen
    assert seen["global_after_snapshot"] == seen["global_at_end"] == seen["global_before"], seen
    beside_ops, beside_out = seen["beside"]
    assert "_FusedMatMul" not in beside_ops and {"MatMul", "BiasAdd", "Relu"} <= set(beside_ops), beside_ops
    for key in ("main", "beside_after"):  # the remapper on again: one fused node, the same numbers
        ops, out = seen[key]
        assert "_FusedMatMul" in ops and "Relu" not in ops, (key, ops)
        assert out == beside_out, (key, out, beside_out)
