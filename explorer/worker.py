"""The worker process: the only module that imports TensorFlow.

Started by ``explorer.runner`` as ``python -m explorer.worker`` with the configuration's
environment already set (several TF flags are read once per process). It answers JSON requests,
one per line on stdin, with JSON lines on its original stdout: zero or more
``{"id", "progress"}`` lines, then ``{"id", "ok": true, "result"}`` or
``{"id", "ok": false, "error"}``. Everything else TensorFlow prints goes to stderr, which the
worker rewinds before each request so that it can hand back that request's log lines.
"""

from __future__ import annotations

import json
import os
import platform
import sys
import time
import traceback

from . import pipeline
from .flags import ENV_FLAGS, is_simulated
from .fusion import is_fused_node
from .graphs import Graph, parse_input, short_device
from .spec import resolve

MAIN_PREFIX = "__inference_model_"
# Attributes worth showing on a node; everything else stays in the pbtxt download.
DISPLAY_ATTRS = (
    "data_format", "padding", "strides", "dilations", "transpose_a", "transpose_b", "adj_x", "adj_y",
    "epsilon", "is_training", "alpha", "leakyrelu_alpha", "num_args", "squeeze_dims", "activation_mode",
    "num_side_inputs", "explicit_paddings", "approximate",
)


class Protocol:
    """Writes response lines on the original stdout; fd 1 is pointed at stderr for stray prints."""

    def __init__(self):
        self.out = os.fdopen(os.dup(1), "w", buffering=1)
        os.dup2(2, 1)
        sys.stdout = sys.stderr

    def send(self, message: dict) -> None:
        self.out.write(json.dumps(message, default=_jsonable) + "\n")
        self.out.flush()


def _jsonable(value):
    if hasattr(value, "item"):
        return value.item()
    if isinstance(value, (set, tuple)):
        return list(value)
    return str(value)


class StderrCapture:
    """Rewinds the stderr file before a request and reads back what was written during it."""

    def __init__(self):
        try:
            os.lseek(2, 0, os.SEEK_CUR)
            self.seekable = True
        except OSError:
            self.seekable = False

    def start(self) -> None:
        sys.stderr.flush()
        if self.seekable:
            os.ftruncate(2, 0)
            os.lseek(2, 0, os.SEEK_SET)

    def read(self) -> list[str]:
        sys.stderr.flush()
        if not self.seekable:
            return []
        size = os.lseek(2, 0, os.SEEK_CUR)
        try:
            data = os.pread(2, size, 0)
        except OSError:
            return []
        return data.decode("utf-8", "replace").splitlines()


class Worker:
    def __init__(self, protocol: Protocol):
        self.protocol = protocol
        self.capture = StderrCapture()
        self.dump_dir = os.environ.get("TF_DUMP_GRAPH_PREFIX", "")
        start = time.perf_counter()
        import tensorflow as tf  # noqa: PLC0415 - the one place TensorFlow is imported
        from tensorflow.python.eager import context

        self.tf, self.context = tf, context
        self.import_s = time.perf_counter() - start
        self.device = os.environ.get("EXPLORER_DEVICE", "cpu")
        self.gpus = tf.config.list_physical_devices("GPU")
        self.fingerprint_data = self._fingerprint()

    # ---- helpers -------------------------------------------------------------------------

    def _fingerprint(self) -> dict:
        tf = self.tf
        build = dict(tf.sysconfig.get_build_info())
        gpu_details = []
        for gpu in self.gpus:
            try:
                details = tf.config.experimental.get_device_details(gpu)
            except Exception:
                details = {}
            gpu_details.append({"name": gpu.name, "model": details.get("device_name", ""),
                                "compute_capability": list(details.get("compute_capability", ()) or ())})
        return {
            "tensorflow": tf.__version__,
            "python": platform.python_version(),
            "onednn": onednn_enabled(),
            "cuda_build": bool(build.get("is_cuda_build")),
            "cuda_version": build.get("cuda_version", ""),
            "cudnn_version": build.get("cudnn_version", ""),
            "devices": [d.name for d in tf.config.list_physical_devices()],
            "gpus": gpu_details,
            "cpu_model": _cpu_model(),
            "cpu_flags": _cpu_flags(),
            "cpu_count": os.cpu_count(),
            "flags": env_flags(),
            # GPU settings that change results or whether workers can share a GPU.
            "tf32": bool(tf.config.experimental.tensor_float_32_execution_enabled()),
            "gpu_memory_growth": os.environ.get("TF_FORCE_GPU_ALLOW_GROWTH", "") == "true",
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
            "device": self.device,
            "import_s": round(self.import_s, 3),
            "pid": os.getpid(),
        }

    def _device_scope(self):
        # A simulated GPU builds its inputs on the CPU; simulate.py places the graph itself.
        if self.device == "gpu":
            if not self.gpus:
                raise NoGpu()
            return self.tf.device("/GPU:0")
        return self.tf.device("/CPU:0")

    def _set_grappler(self, switches: dict, remapping: bool | None = None) -> dict:
        options = {name: value == "on" for name, value in switches.items()}
        if remapping is not None:
            options["remapping"] = remapping
        self.tf.config.optimizer.set_experimental_options(options)
        return options

    def _reset_grappler(self) -> None:
        # set_experimental_options only ever adds keys: clear them so that every request starts
        # from TensorFlow's defaults, then let TF rebuild its per-call options.
        ctx = self.context.context()
        ctx._optimizer_experimental_options.clear()
        ctx.set_optimizer_experimental_options({})

    def _clear_dumps(self) -> None:
        if self.dump_dir and os.path.isdir(self.dump_dir):
            for name in os.listdir(self.dump_dir):
                try:
                    os.unlink(os.path.join(self.dump_dir, name))
                except OSError:
                    pass

    def _build(self, spec):
        from . import models

        with self._device_scope():
            inputs = models.make_inputs(spec, self.tf)
            body, names = models.build(spec, self.tf)
        args = [inputs[n] for n in names]
        return body, args

    def _call(self, fn, args):
        with self._device_scope():
            out = fn(*args)
        return out

    def graph_to_dict(self, graph_def, stage: str) -> dict:
        tf = self.tf
        nodes = []
        for node in graph_def.node:
            attrs = {}
            dtype = ""
            for key in ("T", "dtype", "Tout", "U"):
                if key in node.attr and node.attr[key].WhichOneof("value") == "type":
                    dtype = tf.dtypes.as_dtype(node.attr[key].type).name
                    break
            for key in DISPLAY_ATTRS:
                if key in node.attr:
                    attrs[key] = _attr_text(node.attr[key])
            fused = [s.decode() for s in node.attr["fused_ops"].list.s] if "fused_ops" in node.attr else []
            shape = ""
            if "_output_shapes" in node.attr and node.attr["_output_shapes"].list.shape:
                dims = node.attr["_output_shapes"].list.shape[0]
                if not dims.unknown_rank:
                    shape = _shape_text(dims)
            if node.op == "Const" and "value" in node.attr:
                tensor = node.attr["value"].tensor
                if tensor.tensor_shape.dim:
                    shape = _shape_text(tensor.tensor_shape)
                else:
                    try:
                        attrs["value"] = str(tf.make_ndarray(tensor).item())[:24]
                    except Exception:
                        pass
            nodes.append({
                "name": node.name, "op": node.op, "device": short_device(node.device),
                "dtype": dtype, "inputs": [parse_input(i).to_dict() for i in node.input],
                "fused_ops": fused, "attrs": attrs, "shape": shape,
            })
        _link_transfers(graph_def, nodes)
        return {"stage": stage, "nodes": nodes}

    def _merge_partitions(self, partitions):
        merged = self.tf.compat.v1.GraphDef()
        for part in partitions:
            merged.node.extend(part.node)
        return merged

    def _capture(self, fn, args, switches, remapping=None):
        """Call fn once with collection on; return its three stage GraphDefs and the output."""
        ctx = self.context
        self._set_grappler(switches, remapping)
        ctx.enable_run_metadata()
        ctx.export_run_metadata()  # drop graphs left by an earlier request that failed mid-call
        try:
            out = self._call(fn, args)
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
            "executed": self._merge_partitions(entry.partition_graphs),
        }, out, len(entries)

    # ---- requests ------------------------------------------------------------------------

    def handle(self, request: dict) -> dict:
        op = request.get("op")
        if op == "ping":
            return {"pong": True, "pid": os.getpid()}
        if op == "fingerprint":
            return self.fingerprint_data
        if op == "inspect" and is_simulated(self.device):
            return self.simulate(request)
        if op == "inspect":
            return self.inspect(request)
        if op == "bench" and is_simulated(self.device):
            raise BadRequest("a simulated GPU runs nothing, so it cannot be timed; benchmark on the CPU or a real GPU")
        if op == "bench":
            return self.bench(request)
        raise BadRequest(f"unknown request {op!r}")

    def inspect(self, request: dict) -> dict:
        from google.protobuf import text_format

        spec = resolve(request["spec"])
        switches = request.get("grappler") or {}
        self._clear_dumps()
        self._reset_grappler()
        body, args = self._build(spec)
        fn = self.tf.function(body)
        t0 = time.perf_counter()
        stages, out, entries = self._capture(fn, args, switches)
        capture_s = time.perf_counter() - t0
        self._reset_grappler()
        parsed, log = self._request_log()
        passes = self._pass_graphs(parsed)
        return {
            "spec": spec.to_dict(),
            "stages": {name: self.graph_to_dict(g, name) for name, g in stages.items()},
            "pbtxt": {name: text_format.MessageToString(g) for name, g in stages.items()},
            "output_shapes": [list(t.shape) for t in _as_list(out)],
            "function_graphs": entries,
            "grappler": {
                "remapper_log": parsed["remapper_log"],
                "notable": parsed["notable"],
                "items": parsed["items"],
                "pass_graphs": passes,
                "log": log,
            },
            "fingerprint": self.fingerprint_data,
            "timings": {"capture_s": round(capture_s, 4), "import_s": round(self.import_s, 3)},
        }

    def simulate(self, request: dict) -> dict:
        """Grappler's decisions on a virtual GPU of the requested profile (no execution)."""
        from . import simulate

        spec = resolve(request["spec"])
        profile = self.device.partition(":")[2] or simulate.DEFAULT_PROFILE
        self._reset_grappler()
        result = simulate.simulate(spec, request.get("grappler") or {}, profile, self.tf, self.graph_to_dict)
        self._reset_grappler()
        parsed, log = self._request_log()
        # The remapper log stays simulate's own: that of the run with the requested switches only.
        result["grappler"].update(notable=parsed["notable"], items=parsed["items"], pass_graphs={}, log=log)
        result["fingerprint"] = dict(self.fingerprint_data, simulated_gpu=result.get("profile"))
        return result

    def _request_log(self) -> tuple[dict, list[str]]:
        """This request's stderr parsed, and its lines as shown (without the graph-dump notices)."""
        log = self.capture.read()
        return pipeline.parse_log(log), [line for line in log if "dump_graph.cc" not in line][-4000:]

    def _pass_graphs(self, parsed: dict) -> dict:
        """Neutral graphs of the model's per-pass dumps, keyed by dump file name."""
        from google.protobuf import text_format

        run = pipeline.main_run(parsed, MAIN_PREFIX)
        graphs: dict[str, dict] = {}
        if run is None:
            return graphs
        paths = []
        for iteration in run["iterations"]:
            if iteration.get("before_dump"):
                paths.append(iteration["before_dump"])
            paths += [p["dump"] for p in iteration["passes"] if p.get("dump")]
        for path in paths:
            try:
                with open(path) as handle:
                    graph_def = text_format.Parse(handle.read(), self.tf.compat.v1.GraphDef())
            except (OSError, text_format.ParseError):
                continue
            graphs[os.path.basename(path)] = self.graph_to_dict(graph_def, "pass")
        return graphs

    def bench(self, request: dict) -> dict:
        """Fused (remapper on) against unfused (remapper off), interleaved, same inputs."""
        import numpy as np

        tf, ctx = self.tf, self.context
        spec = resolve(request["spec"])
        switches = {k: v for k, v in (request.get("grappler") or {}).items() if k != "remapping"}
        reps = int(request.get("reps", 50))
        warmup = int(request.get("warmup", 5))
        budget_s = float(request.get("max_seconds", 60.0))
        req_id = request.get("id")
        self._clear_dumps()
        self._reset_grappler()
        body, args = self._build(spec)
        variants = {"fused": True, "unfused": False}
        fns = {name: tf.function(body) for name in variants}
        proof, outputs = {}, {}
        for name, remap in variants.items():
            stages, out, _ = self._capture(fns[name], args, switches, remapping=remap)
            executed = Graph.from_dict(self.graph_to_dict(stages["executed"], "executed"))
            proof[name] = {
                "remapping": remap,
                "executed_ops": executed.compute_ops(),
                "fused_nodes": [{"name": n.name, "op": n.op, "fused_ops": list(n.fused_ops)}
                                for n in executed.nodes if is_fused_node(n)],
                "optimized_ops": Graph.from_dict(self.graph_to_dict(stages["optimized"], "optimized")).compute_ops(),
            }
            outputs[name] = [np.asarray(t.numpy(), dtype=np.float64) for t in _as_list(out)]
        self.protocol.send({"id": req_id, "progress": {"fraction": 0.05, "message": "warming up"}})
        order = list(variants)
        for _ in range(warmup):
            for name in order:
                self._set_grappler(switches, variants[name])
                self._call(fns[name], args)
        # Nothing queued may spill into the first timed call (on a GPU the warm-up's kernels may
        # still be running); on the CPU this returns at once, and it runs there too so that the
        # CPU tests exercise the call the GPU timings rely on.
        tf.test.experimental.sync_devices()
        samples = {name: [] for name in variants}
        sync = self._sync
        # Graph collection records a function graph only when a function is (re)instantiated:
        # any entry that appears during the timed loop means a variant did not run the graph
        # captured above.
        ctx.enable_graph_collection()
        started = time.perf_counter()
        done = 0
        try:
            for i in range(reps):
                pair = order if i % 2 == 0 else order[::-1]
                for name in pair:
                    self._set_grappler(switches, variants[name])
                    t0 = time.perf_counter_ns()
                    self._call(fns[name], args)
                    sync()
                    samples[name].append(time.perf_counter_ns() - t0)
                done += 1
                if i % max(1, reps // 20) == 0:
                    self.protocol.send({"id": req_id, "progress": {
                        "fraction": 0.05 + 0.95 * done / reps, "message": f"rep {done}/{reps}"}})
                if time.perf_counter() - started > budget_s:
                    break
            metadata = ctx.export_run_metadata()
        finally:
            ctx.disable_graph_collection()
        self._reset_grappler()
        reinstantiated = model_instantiations(metadata.function_graphs, stages["traced"])
        fused_out, unfused_out = outputs["fused"], outputs["unfused"]
        agreement = _agreement(fused_out, unfused_out, spec.p.get("dtype", "int64"), tf32=self._tf32_active())
        self.capture.read()  # drop the (long) log of the benchmark's instantiations
        return {
            "spec": spec.to_dict(),
            "reps_requested": reps,
            "reps_done": done,
            "warmup": warmup,
            "order": "interleaved, alternating which variant goes first",
            "samples_ns": samples,
            "proof": proof,
            "reinstantiated_during_timing": reinstantiated,
            "agreement": agreement,
            "fingerprint": self.fingerprint_data,
            "elapsed_s": round(time.perf_counter() - started, 3),
        }

    def _sync(self) -> None:
        if self.device == "gpu":
            self.tf.test.experimental.sync_devices()

    def _tf32_active(self) -> bool:
        """Whether float32 matmuls and convolutions run in TF32 (GPU:0 of compute capability 8.0+)."""
        gpus = self.fingerprint_data["gpus"]
        return (self.device == "gpu" and self.fingerprint_data["tf32"] and bool(gpus)
                and (gpus[0]["compute_capability"] or [0])[0] >= 8)


def onednn_enabled() -> bool | None:
    """Whether this TensorFlow runs with oneDNN; None when the build cannot say."""
    try:
        from tensorflow.python.util import _pywrap_util_port

        return bool(_pywrap_util_port.IsMklEnabled())
    except Exception:  # an internal module: absent in some builds
        return None


def env_flags() -> dict:
    """The explorer's TF flags set in this process's environment."""
    return {name: os.environ[name] for name in ENV_FLAGS if name in os.environ}


class NoGpu(Exception):
    pass


class BadRequest(Exception):
    pass


def _as_list(out):
    return list(out) if isinstance(out, (list, tuple)) else [out]


def model_instantiations(function_graphs, traced) -> int:
    """How many of the recorded function graphs are the model's own.

    TF runs some eager ops as one-op functions of their own (SyncDevice, which GPU timings call,
    is one): those are not the model being re-instantiated.
    """
    from .graphs import BOILERPLATE_OPS

    model_ops = {n.op for n in traced.node} - BOILERPLATE_OPS
    return sum(1 for g in function_graphs
               if not model_ops or model_ops & {n.op for n in g.pre_optimization_graph.node})


def _link_transfers(graph_def, nodes: list[dict]) -> None:
    """Join each _Recv to the _Send feeding it, so that a graph split across devices reads as one.

    TF gives a _Recv no inputs: the pair only shares its tensor_name and devices.
    """
    def key(node):
        attr = node.attr
        return tuple(attr[k].s for k in ("tensor_name", "send_device", "recv_device") if k in attr)

    sends = {key(n): n.name for n in graph_def.node if n.op in ("_Send", "_HostSend")}
    for node, data in zip(graph_def.node, nodes):
        if node.op in ("_Recv", "_HostRecv") and key(node) in sends:
            data["inputs"].append({"src": sends[key(node)], "port": 0, "control": False})


# Largest difference still counted as agreement, by dtype. Integer outputs (the hash-bucket
# model) must match exactly. TF32 keeps 10 mantissa bits, so float32 on a TF32 GPU gets a
# tolerance between float32's and bfloat16's.
TOLERANCE = {"float64": 1e-9, "float32": 1e-3, "float16": 5e-2, "bfloat16": 1e-1}
TF32_TOLERANCE = 1e-2


def _agreement(a: list, b: list, dtype: str, tf32: bool = False) -> dict:
    import numpy as np

    max_abs = max_rel = 0.0
    for x, y in zip(a, b):
        diff = np.abs(x - y)
        max_abs = max(max_abs, float(diff.max()) if diff.size else 0.0)
        # Relative to each element, floored at 1e-3 of the output's range so that values
        # near zero do not turn rounding noise into huge ratios.
        floor = max(float(np.abs(y).max()) * 1e-3, 1e-12) if y.size else 1.0
        max_rel = max(max_rel, float((diff / np.maximum(np.abs(y), floor)).max()) if diff.size else 0.0)
    tf32 = tf32 and dtype == "float32"
    tol = TF32_TOLERANCE if tf32 else TOLERANCE.get(dtype, 0.0)
    close = all(np.allclose(x, y, rtol=tol, atol=tol) for x, y in zip(a, b))
    return {"max_abs": max_abs, "max_rel": max_rel, "tolerance": tol, "within_tolerance": bool(close),
            "tf32": tf32}


def _shape_text(shape) -> str:
    """A TensorShapeProto as '[64,256]' (-1 for an unknown dimension)."""
    return "[" + ",".join(str(d.size) for d in shape.dim) + "]"


def _attr_text(value) -> str:
    kind = value.WhichOneof("value")
    if kind == "s":
        return value.s.decode("utf-8", "replace")
    if kind == "list":
        items = list(value.list.i) or [s.decode() for s in value.list.s] or list(value.list.f)
        return "[" + ",".join(str(i) for i in items) + "]"
    if kind in ("i", "f", "b"):
        return str(getattr(value, kind))
    if kind == "type":
        return str(value.type)
    return ""


# CPU features that decide which dtypes oneDNN fuses (IsDataTypeSupportedByOneDNNOnThisCPU).
ONEDNN_CPU_FLAGS = ("avx512f", "avx512bw", "avx512_bf16", "avx512_fp16", "amx_tile", "amx_bf16", "amx_fp16",
                    "avx_vnni", "avx512_vnni", "avx_ne_convert")


def _cpuinfo(field: str) -> str | None:
    """The value of the first /proc/cpuinfo line for field; None when there is none."""
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith(field):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _cpu_flags() -> list[str]:
    present = set((_cpuinfo("flags") or "").split())
    return [f for f in ONEDNN_CPU_FLAGS if f in present]


def _cpu_model() -> str:
    model = _cpuinfo("model name")
    return model if model is not None else (platform.processor() or platform.machine())


def _error_line(message: str) -> str:
    """The line of a TF error that says what went wrong, not where ('Graph execution error:')."""
    lines = [ln.strip() for ln in message.strip().splitlines() if ln.strip()]
    skip = ("Graph execution error", "Detected at node", "[[", "in user code", "File ", "Traceback")
    useful = [ln for ln in lines if not ln.startswith(skip) and not ln.endswith(":")]
    text = useful[-1] if useful else (lines[-1] if lines else "")
    return text.split(" [Op:")[0].split("\t [[")[0].strip()


def _error(kind: str, message: str, detail: str = "") -> dict:
    return {"kind": kind, "message": message, "detail": detail[-4000:]}


def main() -> None:
    protocol = Protocol()
    try:
        worker = Worker(protocol)
    except Exception as exc:  # TensorFlow failed to import: say so and stop
        protocol.send({"ready": False, "error": _error("tensorflow", f"TensorFlow failed to start: {exc}",
                                                       traceback.format_exc())})
        return
    protocol.send({"ready": True, "fingerprint": worker.fingerprint_data})
    from .errors import SpecError
    from .machine import no_gpu_words, nvidia_gpus_present

    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            request = json.loads(line)
        except json.JSONDecodeError:
            protocol.send({"id": None, "ok": False, "error": _error("protocol", "request is not JSON")})
            continue
        req_id = request.get("id")
        worker.capture.start()
        try:
            result = worker.handle(request)
            protocol.send({"id": req_id, "ok": True, "result": result})
        except SpecError as exc:
            protocol.send({"id": req_id, "ok": False, "error": dict(_error("spec", exc.message), field=exc.field)})
        except NoGpu:
            protocol.send({"id": req_id, "ok": False, "error": _error(
                "no_gpu", "No GPU is visible to TensorFlow on this machine, so nothing was run. "
                f"{no_gpu_words(nvidia_gpus_present())} Choose the CPU (or a simulated GPU profile).")})
        except BadRequest as exc:
            protocol.send({"id": req_id, "ok": False, "error": _error("protocol", str(exc))})
        except Exception as exc:  # TensorFlow refused or failed: report its words, keep serving
            worker._reset_grappler()
            first = _error_line(getattr(exc, "message", None) or str(exc)) or type(exc).__name__
            log = worker.capture.read()
            protocol.send({"id": req_id, "ok": False, "error": _error(
                "tensorflow", f"TensorFlow failed: {type(exc).__name__}: {first[:400]}",
                traceback.format_exc() + "\n".join(log[-60:]))})


if __name__ == "__main__":
    main()
