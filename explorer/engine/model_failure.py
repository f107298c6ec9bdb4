"""A model that fails with the remapper on and off alike: whether oneDNN is what fails it.

The agreement check holds the fused graph to the same model with the remapper off. With oneDNN on, both still run
oneDNN's own rewrites: its layout pass folds a Pad into the convolution after it (``_MklNativePadWith…Conv2D``)
whatever the remapper does. On TF 2.21 (measured 2026-11-29, Intel Xeon with AMX) a Pad of the channel axis folded
that way fails ("input depth must be evenly divisible by filter depth"), which reads as the model's own failure.
So such a failure is run once more with oneDNN off, in that configuration's own worker, and where the model runs
and agrees there the error says so: the user's model is not what fails.
"""

from __future__ import annotations

from ..analysis.agreement import disagrees
from ..errors import ExplorerError, WorkerError
from ..model.flags import Config

ONEDNN_OFF = ("With oneDNN off (TF_ENABLE_ONEDNN_OPTS=0, run here in a worker of its own) the model runs and its "
              "fused and unfused graphs agree: what fails is TensorFlow's oneDNN path (its kernels, or the rewrites "
              "of its layout pass, which run with the remapper off too), not the model. Run it with "
              "TF_ENABLE_ONEDNN_OPTS=0.")


class FailsWithOneDnn(WorkerError):
    """TensorFlow failed to run the model with oneDNN on, and it runs without: the error says so (``ONEDNN_OFF``), and
    the page offers the setting."""


def explained(engine, spec, config: Config, exc: WorkerError) -> WorkerError:
    """``exc`` (TensorFlow failed to run the model), saying so where oneDNN was on and the model runs without it."""
    if exc.kind != "tensorflow" or config.device != "cpu" or not engine.fingerprint(config).get("onednn"):
        return exc
    try:
        without = engine.inspect(spec, config.with_env("TF_ENABLE_ONEDNN_OPTS", "0"))
    except ExplorerError:
        return exc  # it fails without oneDNN too: the model's failure, as TensorFlow said
    if disagrees(without.get("agreement")):
        return exc
    return FailsWithOneDnn(exc.kind, f"{exc.message.rstrip('. ')}. {ONEDNN_OFF}", exc.detail)
