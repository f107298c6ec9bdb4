"""Which variant goes first: rotated every repetition inside a process, and by process in a replicated
run (the request's ``rotate``), so no variant always leads, nor is always the one warmed last."""

from __future__ import annotations

from explorer.engine.engine import Engine
from explorer.model.flags import Config
from explorer.worker.timing import Setup

TINY = {"preset": "matmul_bias_relu", "params": {"m": 16, "k": 8, "n": 8}}


def test_schedule_rotates_each_repetition_from_the_given_start():
    two = Setup(None, {}, 4, 1, 1.0, None, None, [], rotate=1).schedule(("fused", "unfused"))
    assert [two(i) for i in range(4)] == [("unfused", "fused"), ("fused", "unfused")] * 2
    three = Setup(None, {}, 3, 1, 1.0, None, None, []).schedule(("unfused", "fused", "xla"))
    assert [three(i)[0] for i in range(3)] == ["unfused", "fused", "xla"]


def test_the_worker_starts_with_the_variant_the_request_rotates_to(engine: Engine):
    """The real worker (the session's warm one): rotate=1 puts unfused first; both still measured alike."""
    worker = engine.pool.get(Config.make("cpu"))
    payload = {"spec": TINY, "grappler": {}, "reps": 4, "warmup": 1, "max_seconds": 10.0}
    plain = worker.request("bench", payload, 60)
    rotated = worker.request("bench", dict(payload, rotate=1), 60)
    assert plain["first_variant"] == "fused" and rotated["first_variant"] == "unfused"
    assert all(len(r["samples_ns"][v]) == 4 for r in (plain, rotated) for v in ("fused", "unfused"))
