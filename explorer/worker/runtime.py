"""TensorFlow inside the worker process: imported once, with the configuration's environment in place.

``Runtime`` owns what every request needs: the ``tf`` module and the eager context, the device to
run on, Grappler's options (global in TensorFlow, so set before every call and cleared after every
request), the models' builders, and ``capture``: one call of a ``tf.function`` with run metadata on,
giving the three graphs worth showing (as traced, after Grappler, as executed).
"""

from __future__ import annotations

import gc
import os
import time
from contextlib import contextmanager

from . import host, models
from .convert import graph_to_dict, merge_partitions
from .protocol import NoGpu, Protocol, StderrCapture


class Runtime:
    def __init__(self, protocol: Protocol):
        self.protocol = protocol
        self.log = StderrCapture()
        self.dump_dir = os.environ.get("TF_DUMP_GRAPH_PREFIX", "")
        # Grappler's per-pass dumps in binary: quicker for TF to write and for us to read than text
        # (text_format's parser is pure Python: ~20 s for a 1,000-node model's 30 dumps).
        os.environ.setdefault("TF_DUMP_GRAPH_FMT", "BIN")
        self.xla_dump_dir = os.environ.get("EXPLORER_XLA_DUMP", "")
        xla_flags = os.environ.get("TF_XLA_FLAGS", "")
        if "tf_xla_auto_jit" in xla_flags and "tf_xla_clustering_debug" not in xla_flags:
            # Auto-clustering then dumps its marked graph (which op went into which XLA cluster) beside
            # Grappler's dumps; TF reads these flags once, at first use.
            os.environ["TF_XLA_FLAGS"] = f"{xla_flags} --tf_xla_clustering_debug"
        start = time.perf_counter()
        import tensorflow as tf  # the one place TensorFlow is imported
        from tensorflow.python.eager import context

        self.tf, self.context = tf, context
        self.import_s = time.perf_counter() - start
        self.device = os.environ.get("EXPLORER_DEVICE", "cpu")
        self.gpus = tf.config.list_physical_devices("GPU")
        self.fingerprint = host.fingerprint(tf, self.device, self.gpus, self.import_s)
        # TensorFlow's import leaves ~320,000 objects that live as long as the process: out of the
        # collector's sight, a full collection during a request takes ~5 ms instead of ~0.3 s (it struck
        # every other first-graphs request of an imported MobileNetV2).
        gc.freeze()

    def device_scope(self):
        # A simulated GPU builds its inputs on the CPU; simulate.py places the graph itself.
        if self.device == "gpu":
            if not self.gpus:
                raise NoGpu()
            return self.tf.device("/GPU:0")
        return self.tf.device("/CPU:0")

    def set_grappler(self, switches: dict, remapping: bool | None = None) -> dict:
        options = {name: value == "on" for name, value in switches.items()}
        if remapping is not None:
            options["remapping"] = remapping
        self.tf.config.optimizer.set_experimental_options(options)
        return options

    def reset_grappler(self) -> None:
        # set_experimental_options only ever adds keys: clear them so that every request starts
        # from TensorFlow's defaults, then let TF rebuild its per-call options.
        ctx = self.context.context()
        ctx._optimizer_experimental_options.clear()  # noqa: SLF001 - TensorFlow offers no call that removes an option
        ctx.set_optimizer_experimental_options({})

    def clear_dumps(self) -> None:
        for directory in (self.dump_dir, self.xla_dump_dir):  # XLA dumps every compile's passes
            if directory and os.path.isdir(directory):
                for name in os.listdir(directory):
                    try:
                        os.unlink(os.path.join(directory, name))
                    except OSError:
                        pass

    @contextmanager
    def without_dumps(self):
        """Grappler writes no per-pass graphs meanwhile: TF reads TF_DUMP_GRAPH_PREFIX at every dump, and
        a frozen model's dumps (its weights as text, after every pass) take minutes and gigabytes."""
        saved = os.environ.pop("TF_DUMP_GRAPH_PREFIX", None)
        try:
            yield
        finally:
            if saved is not None:
                os.environ["TF_DUMP_GRAPH_PREFIX"] = saved

    def build(self, spec):
        """The model's Python body and its seeded arguments, made on the run's device."""
        with self.device_scope():
            inputs = models.make_inputs(spec, self.tf)
            body, names = models.build(spec, self.tf)
        return body, [inputs[n] for n in names]

    def call(self, fn, args):
        with self.device_scope():
            return fn(*args)

    def graph_to_dict(self, graph_def, stage: str) -> dict:
        return graph_to_dict(graph_def, stage, self.tf)

    def capture(self, fn, args, switches, remapping=None):
        """Call fn once with collection on; return its three stage GraphDefs, the output and the count of
        function graphs recorded."""
        ctx = self.context
        self.set_grappler(switches, remapping)
        ctx.enable_run_metadata()
        ctx.export_run_metadata()  # drop graphs left by an earlier request that failed mid-call
        try:
            out = self.call(fn, args)
            metadata = ctx.export_run_metadata()
        finally:
            ctx.disable_run_metadata()
        entries = list(metadata.function_graphs)
        if not entries:
            raise RuntimeError("TensorFlow recorded no function graphs for this call")
        entry = entries[-1]
        return {
            "traced": entry.pre_optimization_graph,
            "optimized": entry.post_optimization_graph,
            "executed": merge_partitions(entry.partition_graphs, self.tf),
        }, out, len(entries)

    def sync(self) -> None:
        """Wait for the device: a GPU runs kernels asynchronously, a CPU call has finished on return."""
        if self.device == "gpu":
            self.tf.test.experimental.sync_devices()

    def tf32_active(self) -> bool:
        """Whether float32 matmuls and convolutions run in TF32 (GPU:0 of compute capability 8.0+)."""
        gpus = self.fingerprint["gpus"]
        return (self.device == "gpu" and self.fingerprint["tf32"] and bool(gpus)
                and (gpus[0]["compute_capability"] or [0])[0] >= 8)


def as_list(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]
