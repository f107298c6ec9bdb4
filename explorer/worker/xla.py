"""XLA as the worker sees it: the model compiled with ``tf.function(jit_compile=True)``, as plain data.

``inspect`` returns the HLO before and after XLA's passes, the optimised module walked from its
HloProto (each fusion's kind, each instruction's TensorFlow op name from its metadata), XLA's own DOT
of it and the compile times. The module shown is the one ``experimental_get_compiler_ir`` compiles:
a separate compile of the same function, not the executable a call runs (TF 2.21 names them
differently). The call's own module is read from a profile of one real call (``executed``).
A model XLA cannot compile raises ``XlaRefused``, whose message names the op XLA refused.
"""

from __future__ import annotations

import os
import re
import time

from ..model.spec import resolve
from . import models
from .elide import parse_dump
from .protocol import Refused
from .op_time import profiled
from .runtime import Runtime, as_list, finish

# Text stages of experimental_get_compiler_ir, and the optimised module as a serialized HloModuleProto.
# Not "optimized_hlo_proto_serialized": with XLA's dumping on (the worker dumps every pass), TF 2.21
# returns the module *before* optimisation there (measured), while this stage stays the optimised one.
TEXT_STAGES = ("hlo", "optimized_hlo", "optimized_hlo_dot")
PROTO_STAGE = "optimized_hlo_serialized"
SOURCE = ("experimental_get_compiler_ir: a separate compile of the same jit_compile=True function "
          "(its own module, named apart from the one a call executes)")


class XlaRefused(Refused):
    """XLA cannot compile the model; ``message`` names the op it refused."""


def inspect(rt: Runtime, request: dict) -> dict:
    tf = rt.tf
    spec = resolve(request["spec"])
    rt.clear_dumps()
    rt.reset_grappler()
    body, args = rt.build(spec)
    fn = models.function(body, tf, jit_compile=True)
    concrete = fn.get_concrete_function(*args)
    traced = rt.graph_to_dict(concrete.graph.as_graph_def(), "traced")
    stages, timings = {}, {}
    try:
        with rt.device_scope():
            t0 = time.perf_counter()
            ir = fn.experimental_get_compiler_ir(*args)
            timings["trace_s"] = time.perf_counter() - t0
            for stage in TEXT_STAGES + (PROTO_STAGE,):
                # Each stage compiles again: the passes are read around one compile, optimized_hlo's.
                if stage == "optimized_hlo":
                    log_start, files_before = len(rt.log.read()), _dump_files(rt)
                t0 = time.perf_counter()
                stages[stage] = ir(stage=stage)
                timings[f"{stage}_s"] = time.perf_counter() - t0
                if stage == "optimized_hlo":
                    pass_log, new_files = rt.log.read()[log_start:], _dump_files(rt) - files_before
    except Exception as exc:  # noqa: BLE001 - turned into a message naming the refused op
        raise refused(exc) from None
    module = hlo_proto_to_dict(stages.pop(PROTO_STAGE))
    passes = {"log": [ln for ln in pass_log if "hlo_pass_pipeline" in ln], "dumps": _read_dumps(rt, new_files)}
    # The real call: trace + tf2xla + XLA compile on the first call, then the profile of one more.
    t0 = time.perf_counter()
    try:
        out = rt.call(fn, args)
        finish(out)
    except Exception as exc:  # noqa: BLE001
        raise refused(exc) from None
    first_call_s = time.perf_counter() - t0
    executed = profile_call(rt, fn, args)
    rt.log.read()
    return {
        "spec": spec.to_dict(),
        "compiler": "xla",
        "source": SOURCE,
        "traced": traced,
        "hlo": {"hlo": stages["hlo"], "optimized_hlo": stages["optimized_hlo"]},
        "hlo_dot": stages["optimized_hlo_dot"],
        "module": module,
        "executed": executed,
        "passes": passes,
        "output_shapes": [list(t.shape) for t in as_list(out)],
        "timings": {
            "compiler_ir": {k: round(v, 4) for k, v in timings.items()},
            # What one XLA compile of the optimised module costs, as experimental_get_compiler_ir measured it.
            "compile_s": round(timings["optimized_hlo_s"], 4),
            "first_call_s": round(first_call_s, 4),
        },
        "fingerprint": rt.fingerprint,
    }


def _dump_files(rt: Runtime) -> set:
    directory = rt.xla_dump_dir
    return set(os.listdir(directory)) if directory and os.path.isdir(directory) else set()


def _read_dumps(rt: Runtime, names: set) -> list[dict]:
    """The per-pass HLO texts one compile wrote (XLA writes one after each pass that changed the module)."""
    from ..analysis.xla_passes import parse_dump_name

    dumps = []
    for name in names:
        info = parse_dump_name(name)
        if info is None:
            continue
        try:
            with open(os.path.join(rt.xla_dump_dir, name)) as handle:
                info["text"] = handle.read()
        except OSError:
            continue
        dumps.append(info)
    return sorted(dumps, key=lambda d: d["seq"])


# --- auto-clustering -------------------------------------------------------------------------

def clusters(rt: Runtime, graph_def) -> list[dict]:
    """XLA clusters of a graph run with auto-clustering on (TF_XLA_FLAGS=--tf_xla_auto_jit=...).

    The cluster names come from the _XlaCompile / XlaLaunch nodes of the graph after Grappler; the TF
    ops in each from the graph auto-clustering marked (its ``_XlaCluster`` attribute), which it dumps
    with --tf_xla_clustering_debug (the worker adds that flag when auto-clustering is on). The
    cluster's function body is not in the run metadata's library (measured on TF 2.21).
    """
    from google.protobuf import text_format
    from google.protobuf.message import DecodeError

    names = []
    for node in graph_def.node:
        if (node.op in ("_XlaCompile", "XlaLaunch") and "function" in node.attr
                and node.attr["function"].func.name not in names):
            names.append(node.attr["function"].func.name)
    if not names:
        return []
    members: dict[str, dict] = {name: {} for name in names}
    directory = rt.dump_dir
    for file in sorted(os.listdir(directory)) if directory and os.path.isdir(directory) else []:
        # TF_DUMP_GRAPH_FMT=BIN (the runtime's default) writes .pb; a user's TXT setting writes .pbtxt
        if not (file.startswith("mark_for_compilation") and "annotated" not in file
                and file.endswith((".pb", ".pbtxt"))):
            continue
        try:
            with open(os.path.join(directory, file), "rb") as handle:
                marked = parse_dump(file, handle.read(), rt.tf)
        except (OSError, text_format.ParseError, DecodeError):
            continue
        for node in marked.node:
            if "_XlaCluster" in node.attr:
                cluster = node.attr["_XlaCluster"].s.decode()
                members.setdefault(cluster, {})[node.name] = node.op
    return [{"cluster": name, "ops": [{"name": n, "op": op} for n, op in members.get(name, {}).items()]}
            for name in names]


# --- errors ---------------------------------------------------------------------------------------

_UNSUPPORTED = re.compile(r"No registered '([^']+)' OpKernel for (\S+) devices[^{]*\{\{node ([^}]+)\}\}")


def refused(exc: Exception) -> XlaRefused:
    """A failed XLA compile as one readable sentence naming the op XLA refused.

    TF 2.21 raises InvalidArgumentError (a call) or ValueError "Failed getting HLO text"
    (experimental_get_compiler_ir), both holding "No registered 'Op' OpKernel for XLA_CPU_JIT
    devices ... {{node name}}" for each op without an XLA kernel.
    """
    message = str(getattr(exc, "message", None) or exc)
    found, seen = [], set()
    for op, device, node in _UNSUPPORTED.findall(message):
        if (op, node) not in seen:
            seen.add((op, node))
            found.append((op, device, node))
    if found:
        ops = "; ".join(f"{op} (node '{node}')" for op, _, node in found)
        text = (f"XLA cannot compile this model: no XLA kernel on {found[0][1]} for {ops}. "
                "Ops XLA cannot compile run only through TensorFlow's own kernels; the Grappler view "
                "still works.")
    else:
        first = next((ln.strip() for ln in message.splitlines() if ln.strip()), type(exc).__name__)
        text = f"XLA failed to compile this model: {type(exc).__name__}: {first[:400]}"
    return XlaRefused(text, message[-4000:])


# --- HloProto -> plain dict -----------------------------------------------------------------------

def _type_names() -> dict:
    from tensorflow.compiler.xla import xla_data_pb2

    # HLO text spells them lower case: F32 -> f32, PRED -> pred.
    return {value: name.lower() for name, value in xla_data_pb2.PrimitiveType.items()}


def shape_text(shape, names: dict) -> str:
    """An xla ShapeProto as HLO text writes it: f32[64,16], (f32[2], s32[])."""
    kind = names.get(shape.element_type, str(shape.element_type))
    if kind == "tuple":
        return "(" + ", ".join(shape_text(s, names) for s in shape.tuple_shapes) + ")"
    if kind == "token":
        return "token[]"
    return f"{kind}[{','.join(str(d) for d in shape.dimensions)}]"


def hlo_proto_to_dict(serialized: bytes) -> dict:
    """Serialized HloModuleProto bytes as {"name", "entry", "computations": [{"name", "is_entry",
    "is_fusion_body", "instructions": [...]}]}; operand and computation ids resolved to names."""
    from tensorflow.compiler.xla.service import hlo_pb2

    module = hlo_pb2.HloModuleProto()
    module.ParseFromString(serialized)
    names = _type_names()
    comp_names = {c.id: c.name for c in module.computations}
    fusion_bodies = {comp_names.get(cid) for c in module.computations for i in c.instructions
                     if i.opcode == "fusion" for cid in i.called_computation_ids}
    computations = []
    for comp in module.computations:
        by_id = {i.id: i.name for i in comp.instructions}
        instructions = [{
            "name": ins.name,
            "opcode": ins.opcode,
            "shape": shape_text(ins.shape, names),
            "operands": [by_id.get(o, str(o)) for o in ins.operand_ids],
            "called_computations": [comp_names.get(c, str(c)) for c in ins.called_computation_ids],
            "fusion_kind": ins.fusion_kind or None,
            "custom_call_target": ins.custom_call_target or None,
            "op_type": ins.metadata.op_type or None,
            "op_name": ins.metadata.op_name or None,
            "is_root": ins.id == comp.root_id,
            # A fused computation's parameter k is its fusion instruction's operand k.
            "parameter_number": int(ins.parameter_number) if ins.opcode == "parameter" else None,
        } for ins in comp.instructions]
        computations.append({"name": comp.name, "is_entry": comp.name == module.entry_computation_name,
                             "is_fusion_body": comp.name in fusion_bodies, "instructions": instructions})
    return {"name": module.name, "entry": module.entry_computation_name, "computations": computations}


# --- what a call ran ------------------------------------------------------------------------------

def profile_call(rt: Runtime, fn, args) -> dict:
    """One call of fn under TF's profiler: did an XLA executable run, which module, which instructions.

    Run metadata records nothing for a jit_compile call (TF 2.21), and reading TF's XLA counters
    from Python re-registers (and wipes) them, so the profile is the proof of what ran.
    """
    modules, instructions, kernels, xla_ran = set(), set(), set(), False
    for plane in profiled(rt.tf, lambda: finish(rt.call(fn, args)), "explorer_xla_prof_"):
        event_names = {k: v.name for k, v in plane.event_metadata.items()}
        stat_names = {k: v.name for k, v in plane.stat_metadata.items()}
        for line in plane.lines:
            for event in line.events:
                name = event_names.get(event.metadata_id, "")
                if name.startswith(("CpuExecutable::", "GpuExecutable::")):
                    xla_ran = True
                stats = {stat_names.get(s.metadata_id): s for s in event.stats}
                if "hlo_module" in stats:
                    modules.add(_stat_text(stats["hlo_module"], stat_names))
                    instructions.add(name)
                elif ":" in name and not name.startswith(("end:", "__inference")):
                    kernels.add(name)
    return {"xla_executable_ran": xla_ran, "modules": sorted(modules),
            "hlo_instructions": sorted(instructions), "tf_kernels": sorted(kernels)}


def _stat_text(stat, stat_names: dict) -> str:
    kind = stat.WhichOneof("value")
    value = stat_names.get(stat.ref_value, "") if kind == "ref_value" else getattr(stat, kind) if kind else ""
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)
