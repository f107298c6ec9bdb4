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

from ..model import json_text
from . import host, models
from .convert import graph_to_dict, merge_partitions
from .protocol import NoGpu, Protocol, StderrCapture


FLUSH_ARG = "explorer_flush_arg"  # the flush function's argument: where its nodes start in a merged graph


def _before_flush(graph_def):
    """The nodes of ``graph_def`` before the flush function's own (all of them if it holds none)."""
    names = [n.name for n in graph_def.node]
    if FLUSH_ARG not in names:
        return graph_def
    cut = type(graph_def)()
    cut.CopyFrom(graph_def)
    del cut.node[names.index(FLUSH_ARG):]
    return cut


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
        json_text.prepare()  # every request's spec is checked against its schema
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

    def recover(self) -> None:
        """After a request that failed: TensorFlow's defaults again, and nothing of the failed call pending."""
        self.reset_grappler()
        self.flush_run_metadata()

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

    def build(self, spec, names: bool = False):
        """The model's Python body and its seeded arguments, made on the run's device (and, with ``names``,
        the arguments' names)."""
        with self.device_scope():
            inputs = models.make_inputs(spec, self.tf)
            body, arg_names = models.build(spec, self.tf)
        args = [inputs[n] for n in arg_names]
        return (body, args, list(arg_names)) if names else (body, args)

    def call(self, fn, args):
        with self.device_scope():
            return fn(*args)

    def graph_to_dict(self, graph_def, stage: str) -> dict:
        return graph_to_dict(graph_def, stage, self.tf)

    def capture(self, fn, args, switches, remapping=None):
        """Call fn once with collection on; return its three stage GraphDefs, the output and the count of
        function graphs recorded.

        A call that fails raises TensorFlow's error with ``failed_stages``: the failed call's stages where
        TensorFlow had made them (Grappler ran before the kernel failed), or None; nothing is left behind."""
        ctx = self.context
        self.set_grappler(switches, remapping)
        ctx.enable_run_metadata()
        ctx.export_run_metadata()  # drop graphs of an earlier call already handed to the context
        try:
            out = self.call(fn, args)
            metadata = ctx.export_run_metadata()
        except Exception as exc:
            ctx.disable_run_metadata()
            left = self.flush_run_metadata()
            exc.failed_stages = self.stages(left[-1]) if left else None  # what Grappler made of the failed call
            raise
        finally:
            ctx.disable_run_metadata()
        entries = list(metadata.function_graphs)
        if not entries:
            raise RuntimeError("TensorFlow recorded no function graphs for this call")
        stages = self.stages(entries[-1])
        names = [n.name for n in stages["optimized"].node]
        if len(names) != len(set(names)):  # two calls' graphs in one: never pass them on as this model's
            raise RuntimeError("TensorFlow's run metadata mixed this call's graphs with an earlier call's")
        return stages, out, len(entries)

    def stages(self, entry) -> dict:
        return {
            "traced": entry.pre_optimization_graph,
            "optimized": entry.post_optimization_graph,
            "executed": merge_partitions(entry.partition_graphs, self.tf),
        }

    def flush_run_metadata(self) -> list:
        """Collect what a failed call left pending, and return its function graphs.

        TF 2.21 keeps the graphs of a function call that failed (Grappler's output included) out of the
        context's run metadata and hands them over, merged into the first entry, with the next call that
        collects it: the next model's graphs would hold the failed one's too. A one-op function called
        with collection on takes them now; its own nodes, appended after the failed call's, are cut off."""
        tf, ctx = self.tf, self.context
        flush = tf.function(lambda explorer_flush_arg: tf.identity(explorer_flush_arg))
        ctx.enable_run_metadata()
        try:
            ctx.export_run_metadata()
            with tf.device("/CPU:0"):
                flush(tf.constant(0.0))
            metadata = ctx.export_run_metadata()
        finally:
            ctx.disable_run_metadata()
        left = []
        for entry in metadata.function_graphs:
            kept = type(entry)()
            kept.pre_optimization_graph.CopyFrom(_before_flush(entry.pre_optimization_graph))
            kept.post_optimization_graph.CopyFrom(_before_flush(entry.post_optimization_graph))
            for graph in entry.partition_graphs:
                graph = _before_flush(graph)
                if len(graph.node):
                    kept.partition_graphs.add().CopyFrom(graph)
            if len(kept.pre_optimization_graph.node):
                left.append(kept)
        return left

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


def finish(out) -> None:
    """Wait for a call's results (a GPU returns before its kernels end)."""
    for tensor in as_list(out):
        tensor.numpy()
