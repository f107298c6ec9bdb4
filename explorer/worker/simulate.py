"""GPU what-if without a GPU: Grappler run from Python on a graph placed on a *virtual* GPU.

Imported only inside the worker process (it needs TensorFlow, and the CUDA build of it: only that
build compiles the remapper's GPU rules). ``simulate(spec, switches, profile, tf, graph_to_dict)``
traces the model as a ``tf.function`` would, places every node on ``/device:GPU:0``, and runs the
meta-optimizer (``tf_optimizer.OptimizeGraph``) against a ``VirtualCluster`` whose GPU is described
by one of ``GPU_PROFILES`` (type, compute capability, memory, SM count ...), once with the
requested Grappler switches and once with the remapper off.

What makes the simulation faithful (see docs/gpu-simulation.md for the evidence):

* Shapes. A Grappler item built from a MetaGraph treats every ``Placeholder`` as a *feed*, drops
  every ``_output_shapes`` attribute, and the shape inference the remapper runs
  (``assume_valid_feeds=false``) keeps only the rank of a fed tensor. In a real ``tf.function``
  the arguments are ``_Arg`` nodes whose ``_output_shapes`` give full shapes. Without them the GPU
  Conv2D rule (filter height and width known and != 1) can never hold. So each argument is given
  to Grappler as ``PlaceholderWithDefault(shape=<full shape>)`` fed by a shapeless placeholder:
  not a feed itself, and its output shape is the declared one. The helper placeholders are
  removed again from the graphs this module returns.
* Placement. In the eager runtime the placer runs before Grappler, so every node carries a device.
  Here every node is put on the virtual GPU if a GPU kernel is registered for its op and type
  (soft placement puts the rest on the CPU, as the runtime would); arguments are on the GPU.
* Device properties. The layout optimizer (NHWC/NCHW choice) and the remapper's cuDNN
  runtime-fusion gate read the GPU's ``architecture`` (compute capability) from the cluster.
* Process-wide flags. ``TF_USE_CUBLASLT``, ``TF_CUDNN_USE_RUNTIME_FUSION``,
  ``TF_USE_CUDNN_BATCHNORM_SPATIAL_PERSISTENT``, ``TF_ENABLE_ONEDNN_OPTS`` ... are read by
  TensorFlow once per process, so the worker must have them in its environment before TensorFlow
  is imported. ``RuntimeFusionEnabled`` also caches its first answer, computed from the first
  cluster it sees: one GPU profile per process.
"""

from __future__ import annotations

import functools
import os

from ..analysis import grappler_log
from ..model.devices import DEFAULT_PROFILE, GPU_PROFILES
from ..model.graph import short_device
from ..model.spec import resolve
from . import models
from .host import env_flags, onednn_enabled
from .protocol import fd2_lines
from .shapes import placed_tensors

GPU_DEVICE = "/job:localhost/replica:0/task:0/device:GPU:0"
CPU_DEVICE = "/job:localhost/replica:0/task:0/device:CPU:0"
FEED_SUFFIX = "/sim_feed"


# Grappler switches as tf.config.optimizer.set_experimental_options maps them (context.py):
# toggles become RewriterConfig ON/OFF, the two "disable_*" switches are booleans. Anything else
# (e.g. memory_optimization) is ignored there, and so here.
_TOGGLES = (
    "layout_optimizer", "constant_folding", "shape_optimization", "remapping", "arithmetic_optimization",
    "dependency_optimization", "loop_optimization", "function_optimization", "debug_stripper",
    "scoped_allocator_optimization", "pin_to_host_optimization", "implementation_selector",
    "auto_mixed_precision", "use_plugin_optimizers",
)
_BOOLS = ("disable_model_pruning", "disable_meta_optimizer")

LIMITS = (
    "Simulated: no GPU ran anything. There is no executed stage (no partition graphs) and no timing.",
    "Grappler's decisions are real (TensorFlow's own meta-optimizer on this graph); whether the GPU "
    "kernels then accept the fused node at run time (cuBLASLt / cuDNN support for these shapes and "
    "this GPU) is not checked, only that a GPU kernel is registered for the op and type.",
    "cuDNN runtime fusion is decided from the profile's compute capability, the process's "
    "TF_CUDNN_USE_RUNTIME_FUSION / TF_CUDNN_USE_FRONTEND and the cuDNN version TensorFlow was built "
    "with; the installed cuDNN library and driver are assumed to support it.",
    "Placement is simulated: every node with a registered GPU kernel for its type is put on GPU:0 "
    "(the rest on the CPU); the real placer also weighs colocation and host-memory constraints.",
    "Autotuning (TF_MATMUL_AUTOTUNE_ENABLE, TF_CUDNN_USE_AUTOTUNE) happens at run time and is not "
    "simulated.",
    "The host's oneDNN setting still applies to the remapper (it is read from this machine's CPU): "
    "on a GPU machine it depends on that machine's CPU.",
    "CUDA and cuDNN versions are those this TensorFlow build was compiled with; the remapper's "
    "version checks are compile-time, so a profile cannot change them.",
)


def profile_data(name: str, tf) -> dict:
    if name not in GPU_PROFILES:
        raise ValueError(f"unknown GPU profile {name!r}; choose one of {', '.join(GPU_PROFILES)}")
    data = dict(GPU_PROFILES[name], name=name)
    build = dict(tf.sysconfig.get_build_info())
    data["cuda_version"] = build.get("cuda_version", "")
    data["cudnn_version"] = build.get("cudnn_version", "")
    data["build_compute_capabilities"] = list(build.get("cuda_compute_capabilities", []))
    data["is_cuda_build"] = bool(build.get("is_cuda_build"))
    return data


def _parts(text: str) -> list[int]:
    return [int(p) for p in str(text).split(".") if p.isdigit()] + [0, 0, 0]


def cuda_code(text: str) -> str:
    """'12.5.1' -> '12050', the CUDA_VERSION macro TensorFlow puts in environment["cuda"]."""
    if not text:
        return ""
    major, minor, _ = _parts(text)[:3]
    return str(major * 1000 + minor * 10)


def cudnn_code(text: str) -> str:
    """'9' -> '90000', the CUDNN_VERSION macro (major*10000 + minor*100 + patch for cuDNN 9)."""
    if not text:
        return ""
    major, minor, patch = _parts(text)[:3]
    return str(major * 10000 + minor * 100 + patch)


def device_properties(profile: dict):
    """The DeviceProperties TensorFlow's own GetLocalGPUInfo would report for this GPU."""
    from tensorflow.core.protobuf import device_properties_pb2

    env = {"architecture": profile["compute_capability"]}
    cuda = cuda_code(profile.get("cuda_version", ""))
    cudnn = cudnn_code(profile.get("cudnn_version", ""))
    if cuda:
        env["cuda"] = cuda
    if cudnn:
        env["cudnn"] = cudnn
    return device_properties_pb2.DeviceProperties(
        type="GPU", vendor="NVIDIA", model=profile["model"], frequency=profile["clock_mhz"],
        num_cores=profile["num_sms"], environment=env, num_registers=profile["registers_per_sm"],
        l2_cache_size=profile["l2_cache_bytes"],
        shared_memory_size_per_multiprocessor=profile["shared_memory_per_sm_bytes"],
        memory_size=profile["memory_bytes"], bandwidth=profile["memory_bandwidth_kbps"],
    )


def _cpu_properties():
    from tensorflow.core.protobuf import device_properties_pb2

    return device_properties_pb2.DeviceProperties(type="CPU", vendor="GenuineIntel", num_cores=os.cpu_count() or 1)


def rewriter_config(switches: dict, remapping: bool | None = None):
    from tensorflow.core.protobuf import config_pb2, rewriter_config_pb2

    config = config_pb2.ConfigProto()
    rw = config.graph_options.rewrite_options
    on, off = rewriter_config_pb2.RewriterConfig.ON, rewriter_config_pb2.RewriterConfig.OFF
    ignored = []
    for name, value in (switches or {}).items():
        flag = value in (True, "on")
        if name in _TOGGLES:
            setattr(rw, name, on if flag else off)
        elif name in _BOOLS:
            setattr(rw, name, flag)
        else:
            ignored.append(name)
    if remapping is not None:
        rw.remapping = on if remapping else off
    return config, ignored


# ---- kernels and placement ------------------------------------------------------------------

@functools.cache
def _kernel_list(op: str) -> tuple:
    from tensorflow.python.framework import kernels

    try:
        return tuple(kernels.get_registered_kernels_for_op(op).kernel)
    except Exception:  # noqa: BLE001 - an op TensorFlow cannot list kernels for has none here
        return ()


def has_kernel(node, device_type: str) -> bool:
    """Is a kernel registered for this node's op on device_type, for the node's type attrs?"""
    for kernel in _kernel_list(node.op):
        if kernel.device_type != device_type:
            continue
        ok = True
        for constraint in kernel.constraint:
            allowed = list(constraint.allowed_values.list.type)
            if not allowed or constraint.name not in node.attr:
                continue
            attr = node.attr[constraint.name]
            if attr.WhichOneof("value") == "type" and attr.type not in allowed:
                ok = False
                break
        if ok:
            return True
    return False


# ---- building the graph Grappler sees ---------------------------------------------------------


def _signature(spec, tf):
    """The model's body and a tf.TensorSpec per argument, typed as models.make_inputs makes them."""
    shapes = spec.tensor_shapes()
    body, names = models.build(spec, tf)
    return body, [tf.TensorSpec(shapes[name], models.input_dtype(spec, name, tf), name=name) for name in names]


def trace_body(body, specs, tf, device: str = "/GPU:0"):
    """body's graph as tf.function traces it under tf.device(device): (GraphDef, fetch names)."""
    with tf.device(device):
        concrete = models.function(body, tf, trace=True).get_concrete_function(*specs)
    graph_def = concrete.graph.as_graph_def()
    fetch = [tensor.name.split(":")[0] for tensor in concrete.outputs]
    return graph_def, fetch


def place(graph_def, device_type: str = "GPU") -> list[str]:
    """Put every node on the (virtual) device if it has a kernel there, else on the CPU.

    Returns the names of the nodes that fell back to the CPU. Arguments stay on the device (the
    inputs live there in a real run)."""
    target = GPU_DEVICE if device_type == "GPU" else CPU_DEVICE
    on_cpu = []
    for node in graph_def.node:
        if node.op in ("Placeholder", "PlaceholderWithDefault") or has_kernel(node, device_type):
            node.device = target
        else:
            node.device = CPU_DEVICE
            if device_type != "CPU":
                on_cpu.append(node.name)
    return on_cpu


def with_shaped_args(graph_def, tf):
    """Copy of graph_def whose Placeholders are not feeds but keep their full static shape."""
    out = tf.compat.v1.GraphDef()
    out.versions.CopyFrom(graph_def.versions)
    out.library.CopyFrom(graph_def.library)
    for node in graph_def.node:
        new = out.node.add()
        new.CopyFrom(node)
        if node.op != "Placeholder":
            continue
        feed = out.node.add()
        feed.name = node.name + FEED_SUFFIX
        feed.op = "Placeholder"
        feed.device = node.device
        feed.attr["dtype"].CopyFrom(node.attr["dtype"])
        feed.attr["shape"].shape.unknown_rank = True
        new.op = "PlaceholderWithDefault"
        new.input.append(feed.name)
        new.attr.pop("_user_specified_name", None)
    return out


def without_helpers(graph_def, tf):
    """Undo with_shaped_args on an optimized graph: drop the helper feeds, restore Placeholders."""
    out = tf.compat.v1.GraphDef()
    out.CopyFrom(graph_def)
    del out.node[:]
    for node in graph_def.node:
        if node.name.endswith(FEED_SUFFIX) and node.op == "Placeholder":
            continue
        new = out.node.add()
        new.CopyFrom(node)
        if node.op == "PlaceholderWithDefault" and any(i.endswith(FEED_SUFFIX) for i in node.input):
            new.op = "Placeholder"
            del new.input[:]
    return out


def _metagraph(graph_def, fetch):
    from tensorflow.core.protobuf import meta_graph_pb2

    meta = meta_graph_pb2.MetaGraphDef()
    meta.graph_def.CopyFrom(graph_def)
    # GrapplerItemFromMetaGraphDef takes its fetch nodes from the "train_op" collection.
    meta.collection_def["train_op"].node_list.value.extend(fetch)
    return meta


def optimize(graph_def, fetch, profile: dict, switches: dict, remapping: bool | None, tf):
    """One meta-optimizer run on the virtual cluster; returns (GraphDef, log lines, ignored)."""
    from tensorflow.core.protobuf import device_properties_pb2
    from tensorflow.python.grappler import cluster as gcluster
    from tensorflow.python.grappler import tf_optimizer

    config, ignored = rewriter_config(switches, remapping)
    devices = [
        device_properties_pb2.NamedDevice(name=CPU_DEVICE, properties=_cpu_properties()),
        device_properties_pb2.NamedDevice(name=GPU_DEVICE, properties=device_properties(profile)),
    ]
    cluster = gcluster.Cluster(devices=devices)
    lines: list[str] = []
    try:
        with fd2_lines(lines):
            out = tf_optimizer.OptimizeGraph(config, _metagraph(graph_def, fetch), verbose=True,
                                             graph_id=b"__inference_model_sim", cluster=cluster)
    finally:
        cluster.Shutdown()
    return out, lines, ignored


def _gpu_kernel_report(graph_def) -> list[dict]:
    report = []
    for node in graph_def.node:
        if node.op.startswith("_") and node.op not in ("_Arg", "_Retval"):
            type_attr = ""
            if "T" in node.attr and node.attr["T"].WhichOneof("value") == "type":
                from tensorflow.python.framework import dtypes

                type_attr = dtypes.as_dtype(node.attr["T"].type).name
            report.append({"name": node.name, "op": node.op, "T": type_attr,
                           "device": short_device(node.device),
                           "gpu_kernel_registered": has_kernel(node, "GPU")})
    return report


_FIRST_PROFILE: list[str] = []

# Boolean flags the remapper reads with TF_CHECK_OK(ReadBoolFromEnvVar(...)): a value TensorFlow
# cannot parse (even "") aborts the whole process at the first GPU-placed candidate node.
_CHECKED_BOOL_FLAGS = ("TF_USE_CUBLASLT", "TF_USE_CUDNN_BATCHNORM_SPATIAL_PERSISTENT")


def check_flags(environ=os.environ) -> None:
    for name in _CHECKED_BOOL_FLAGS:
        if name in environ and environ[name].strip().lower() not in ("0", "1", "true", "false"):
            raise ValueError(f"{name}={environ[name]!r} is not a boolean TensorFlow can read: its remapper "
                             "would abort the process (TF_CHECK_OK in remapper.cc). Unset it or use 0 or 1.")


def simulate(spec, switches: dict, profile: str, tf, graph_to_dict, *, place_on: str = "GPU") -> dict:
    """Grappler's GPU decisions for ``spec`` on the named virtual GPU, as plain data.

    ``graph_to_dict(graph_def, stage)`` is the worker's neutral graph converter
    (``Worker.graph_to_dict``); ``switches`` are Grappler switches as the worker takes them
    ({"remapping": "off", ...}). ``place_on="CPU"`` runs the same machinery with the nodes on the
    CPU, as a control.
    """
    spec = resolve(spec)
    body, specs = _signature(spec, tf)
    result = simulate_body(body, specs, switches, profile, tf, graph_to_dict, place_on=place_on)
    result["spec"] = spec.to_dict()
    return result


def simulate_body(body, specs, switches: dict, profile: str, tf, graph_to_dict, *, place_on: str = "GPU") -> dict:
    """simulate() for any Python body and its list of tf.TensorSpec arguments."""
    from google.protobuf import text_format


    check_flags()
    prof = profile_data(profile or DEFAULT_PROFILE, tf)
    limits = list(LIMITS)
    if not prof["is_cuda_build"]:
        limits.insert(0, "This TensorFlow is not a CUDA build: its remapper has no GPU rules compiled in "
                         "(cuDNN checks are compile-time), so GPU fusions that need them cannot appear.")
    if _FIRST_PROFILE and _FIRST_PROFILE[0] != prof["name"]:
        limits.insert(0, f"This process first simulated the {_FIRST_PROFILE[0]} profile; TensorFlow caches "
                         "its cuDNN runtime-fusion decision from the first GPU it sees, so the "
                         f"{prof['name']} result may carry the {_FIRST_PROFILE[0]} decision.")
    elif not _FIRST_PROFILE:
        _FIRST_PROFILE.append(prof["name"])

    place_on = place_on.upper()
    traced, fetch = trace_body(body, specs, tf, f"/{place_on}:0")
    on_cpu = place(traced, place_on)
    shaped = with_shaped_args(traced, tf)
    optimized_raw, log, ignored = optimize(shaped, fetch, prof, switches, None, tf)
    unfused_raw, log_off, _ = optimize(shaped, fetch, prof, switches, False, tf)
    optimized = without_helpers(optimized_raw, tf)
    unfused = without_helpers(unfused_raw, tf)

    parsed = grappler_log.parse_log(log)
    return {
        # what each GPU kernel of either graph reads and writes (analysis.gpu_roofline predicts its time)
        "tensors": {"fused": placed_tensors(tf, optimized), "unfused": placed_tensors(tf, unfused)},
        "simulated": True,
        "device": f"gpu-sim:{prof['name']}" if place_on == "GPU" else "cpu (simulation control)",
        "profile": prof,
        "stages": {"traced": graph_to_dict(traced, "traced"), "optimized": graph_to_dict(optimized, "optimized")},
        "pbtxt": {"traced": text_format.MessageToString(traced),
                  "optimized": text_format.MessageToString(optimized),
                  "unfused_optimized": text_format.MessageToString(unfused)},
        "unfused_optimized": graph_to_dict(unfused, "optimized"),
        "remapper_log": parsed["remapper_log"],
        "grappler": {
            "remapper_log": parsed["remapper_log"],
            "notable": parsed["notable"],
            "items": parsed["items"],
            "log": log[-4000:],
            "log_remapper_off": log_off[-2000:],
        },
        "placement": {"device": GPU_DEVICE if place_on == "GPU" else CPU_DEVICE, "on_cpu": on_cpu},
        "gpu_kernels": _gpu_kernel_report(optimized),
        "env_flags": env_flags(),
        "host_onednn": onednn_enabled(),
        "ignored_switches": ignored,
        "limits": limits,
        "method": "tf_optimizer.OptimizeGraph on a VirtualCluster (CPU:0 + one virtual GPU:0 with the "
                  "profile's DeviceProperties), default two meta-optimizer iterations; arguments given to "
                  "Grappler as PlaceholderWithDefault with their full shape (the helper feed placeholders "
                  "are removed from the graphs shown).",
    }
