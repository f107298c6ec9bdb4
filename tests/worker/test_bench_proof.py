"""The benchmark's proof that it timed the graphs it shows: it counts the model's re-instantiations
during timing, and nothing else TensorFlow instantiates (GPU timings call SyncDevice, which TF runs
as a one-op function of its own)."""

from __future__ import annotations

import pytest
from worker_script import run_in_worker

pytestmark = pytest.mark.tf

SCRIPT = r"""
from explorer.worker.bench import model_instantiations

ctx = worker.context
fn = tf.function(lambda x, w: tf.nn.relu(tf.matmul(x, w)))
args = [tf.ones((4, 8)), tf.ones((8, 8))]
stages, _, _ = worker.capture(fn, args, {}, remapping=True)


def recorded(steps):
    ctx.enable_graph_collection()
    try:
        steps()
        graphs = ctx.export_run_metadata().function_graphs
    finally:
        ctx.disable_graph_collection()
    return {"all": len(graphs), "model": model_instantiations(graphs, stages["traced"])}


def same_options():
    worker.set_grappler({}, True)
    fn(*args)
    tf.test.experimental.sync_devices()
    fn(*args)


def options_switched():
    worker.set_grappler({}, False)  # the remapper off: TF instantiates the function again
    fn(*args)
    tf.test.experimental.sync_devices()


protocol.send({"same": recorded(same_options), "switched": recorded(options_switched)})
"""


@pytest.fixture(scope="module")
def counts():
    return run_in_worker(SCRIPT)


def test_sync_devices_is_recorded_but_is_not_the_model(counts):
    assert counts["same"]["all"] >= 1  # SyncDevice's own function
    assert counts["same"]["model"] == 0


def test_switching_grappler_options_between_calls_is_caught(counts):
    assert counts["switched"]["model"] == 1
