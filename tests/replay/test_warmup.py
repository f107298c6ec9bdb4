"""The engine's background work (engine/warmup.py) on recorded answers: what the page asks to have ready."""

from __future__ import annotations

import threading

from explorer.engine.replay import ReplayEngine
from explorer.model.experiment import Experiment
from explorer.model.flags import Config
from tests.replay.conftest import RECORDINGS, SMALL

DEFAULT = "matmul_bias_gelu_approx"


def test_prepared_once_per_name_and_each_result_handed_on():
    engine = ReplayEngine(RECORDINGS)
    experiment = Experiment({"preset": DEFAULT, "params": SMALL[DEFAULT]},
                            Config.make("cpu", {"TF_ENABLE_ONEDNN_OPTS": "1"}))
    made, done = [], threading.Event()

    def then(result):
        made.append(result)
        done.set()

    try:
        assert engine.prepare("test: one experiment", [experiment], then=then) is True
        assert engine.prepare("test: one experiment", [experiment], then=then) is False  # asked for already
        assert done.wait(60), "the background work never handed its result on"
        assert [(f["op"], f["fused_ops"]) for f in made[0]["fusions"]] == [("_FusedMatMul", ["BiasAdd", "GeluApproximate"])]
        assert engine.is_ready("inspect", experiment.model, experiment.config)
    finally:
        engine.close()

