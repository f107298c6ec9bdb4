"""A graph split across devices, as a GPU run makes it: CPU-only ops (string hashing) on the host,
the rest on the GPU, with _Send/_Recv pairs between the partitions. Two logical CPUs give the same
split here, so the real worker code that reads the executed stage is exercised without a GPU."""

from __future__ import annotations

import pytest
from worker_script import run_in_worker

from explorer.model.graph import TRANSFER_OPS, Graph
from explorer.present.dot import to_dot

pytestmark = pytest.mark.tf

SCRIPT = r"""
cpu = tf.config.list_physical_devices("CPU")[0]
tf.config.set_logical_device_configuration(cpu, [tf.config.LogicalDeviceConfiguration()] * 2)


def body(x, w):
    y = tf.nn.relu(tf.nn.bias_add(tf.matmul(x, w), tf.ones([8])))
    with tf.device("/CPU:1"):
        buckets = tf.strings.to_hash_bucket_fast(tf.strings.as_string(y), 7)
    return tf.cast(buckets, tf.float32) + y


args = [tf.ones((4, 8)), tf.ones((8, 8))]
stages, _, _ = worker.capture(tf.function(body), args, {})
protocol.send({name: worker.graph_to_dict(graph, name) for name, graph in stages.items()})
"""


@pytest.fixture(scope="module")
def stages():
    return {name: Graph.from_dict(d) for name, d in run_in_worker(SCRIPT).items()}


def test_the_executed_stage_spans_both_devices(stages):
    executed = stages["executed"]
    assert {n.device for n in executed.nodes} == {"CPU:0", "CPU:1"}
    assert any(n.op.startswith("_Fused") or n.op.startswith("_Mkl") for n in executed.nodes if n.device == "CPU:0")
    assert executed["AsString"].device == "CPU:1"


def test_every_recv_is_joined_to_the_send_that_feeds_it(stages):
    executed = stages["executed"]
    recvs = [n for n in executed.nodes if n.op == "_Recv"]
    assert len(recvs) == 2  # one tensor to CPU:1 and one back
    for recv in recvs:
        [edge] = recv.data_inputs
        send = executed[edge.src]
        assert send.op == "_Send" and send.device != recv.device


def test_the_hashing_reads_the_matmul_output_across_the_devices(stages):
    executed = stages["executed"]

    def producers(name, seen=()):
        node = executed[name]
        for edge in node.data_inputs:
            if edge.src not in seen:
                yield edge.src
                yield from producers(edge.src, seen + (edge.src,))

    upstream = {executed[n].op for n in producers("AsString")}
    assert {"_Send", "_Recv"} <= upstream
    assert any("MatMul" in op for op in upstream)


def test_transfers_are_plumbing_not_compute(stages):
    executed = stages["executed"]
    assert {"_Send", "_Recv"} <= set(executed.ops)
    assert not set(executed.compute_ops()) & TRANSFER_OPS
    assert "StringToHashBucketFast" in executed.compute_ops()


def test_folded_drawing_bridges_the_transfer(stages):
    executed = stages["executed"]
    dot = to_dot(executed, fold_boilerplate=True)
    assert "_Send" not in dot and "_Recv" not in dot
    unfolded = to_dot(executed)
    assert "_Send" in unfolded and "_Recv" in unfolded
    # With the transfer folded, AsString is still drawn with an edge into it.
    as_string_id = next(line.split()[0] for line in dot.splitlines() if "AsString" in line and "label" in line)
    assert any(line.strip().endswith(f"-> {as_string_id};") or f"-> {as_string_id} " in line
               for line in dot.splitlines())
