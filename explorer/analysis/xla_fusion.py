"""XLA's fusions mapped back to the model's TensorFlow ops, in the same terms as Grappler's.

Input: the worker's XLA result (``worker.xla.inspect``): the optimised HLO module as plain dicts and
the traced graph. Each top-level HLO instruction that does work becomes one group:

* a ``fusion`` instruction: its kind (kLoop -> loop, kInput -> input, kOutput -> output; kCustom is
  a library call, such as XLA:CPU's YNNPACK ``ynn_fusion``), holding every TF op named in the
  metadata of the instructions of its fused computation;
* a ``custom-call`` (a library kernel named by its target), a plain ``dot`` or ``convolution``
  (XLA:CPU keeps MatMul and Conv2D as these, outside any fusion);
* any other lone instruction, outside any fusion.

A loop's body and condition (a ``while``'s computations) and a ``conditional``'s branches are code of their
own: their instructions are groups too, each saying whose body it sits in (``within``), with the ops of the
loop's function its metadata names (``body_ops``, relative to the loop: "lstm_cell_1/MatMul"), which the traced
graph holds only as the loop's one While node. A ``while`` or ``conditional`` is then its own lone instruction.

TF 2.21 writes the traced node's name as ``op_name`` (no function prefix); an op of a nested
function gets its call node's name as a prefix, and MLIR may join two locations with ';'. Const
nodes never appear (their HLO constant carries the consumer's name), nor do Identity nodes.
One TF op can sit in several groups (layer norm's mean is recomputed in three fusions).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ..model import evidence

FUSION_KINDS = {"kLoop": "loop", "kInput": "input", "kOutput": "output", "kCustom": "custom"}
LIBRARY_OPCODES = ("dot", "convolution")
# Instructions that move or reinterpret data: no TF op's computation on their own.
PLUMBING = frozenset({"parameter", "tuple", "get-tuple-element", "bitcast", "copy", "constant"})
CONVERTS = PLUMBING | {"convert"}  # what carries a TF op's name into a fusion when only its dtype changes there
SPECIAL_NAMES = frozenset({"XLA_Args", "XLA_Retvals"})
CALL_OPS = frozenset({"PartitionedCall", "StatefulPartitionedCall"})
INPUT_OPS = frozenset({"Placeholder", "_Arg"})
CONST_OPS = frozenset({"Const", "_HostConst"})
NO_HLO_OPS = frozenset({"Identity", "IdentityN", "NoOp", "StopGradient", "_Retval", "PreventGradient"})

# Where an op went, in the order the page and the CLI list them.
STATUS_WORDS = {
    "fusion": "in an XLA fusion",
    "library": "in a library call, plain dot or convolution",
    "outside": "a lone HLO instruction outside any fusion",
    "argument": "a model input (an HLO parameter)",
    "no_hlo": "no HLO of its own",
}


def resolver(nodes: list[dict]):
    """op_name -> the traced node it names, or None (parameters, results, unknown names)."""
    names = {n["name"]: n["op"] for n in nodes}

    def resolve(op_name: str | None) -> str | None:
        if not op_name or op_name in SPECIAL_NAMES:
            return None
        if op_name in names:
            return op_name
        if ";" in op_name:
            return next((r for r in map(resolve, op_name.split(";")) if r), None)
        parts = op_name.split("/")
        for i in range(1, len(parts)):  # a caller's prefix: "PartitionedCall/Gelu/mul"
            if "/".join(parts[i:]) in names:
                return "/".join(parts[i:])
        for i in range(len(parts) - 1, 0, -1):  # an op inside a nested function: its call node
            if names.get("/".join(parts[:i])) in CALL_OPS:
                return "/".join(parts[:i])
        return None

    return resolve


# Instructions that run computations of their own as code (not as one fused kernel): what part each one is.
CONTROL_PARTS = {"while": ("body", "condition"), "conditional": ("branch",), "call": ("call",)}


def _bodies(module: dict) -> dict[str, dict]:
    """{computation: {"instruction", "op_name", "part"}} for every loop body and condition, branch and call."""
    out = {}
    for comp in module["computations"]:
        for ins in comp["instructions"]:
            parts = CONTROL_PARTS.get(ins["opcode"], ())
            for k, sub in enumerate(ins["called_computations"] if parts else ()):
                out[sub] = {"instruction": ins["name"], "op_name": ins.get("op_name"), "part": parts[min(k, len(parts) - 1)]}
    return out


def relative(op_name: str, loop: str | None) -> str:
    """An op name of a loop's function without the loop's own path: "functional_1/lstm_1/while/lstm_cell_1/MatMul"
    in "StatefulPartitionedCall/functional_1/lstm_1/while" is "lstm_cell_1/MatMul"."""
    parts, outer = op_name.split("/"), (loop or "").split("/")
    for i in range(len(outer)):
        tail = outer[i:]
        if tail and parts[:len(tail)] == tail and len(parts) > len(tail):
            return "/".join(parts[len(tail):])
    return op_name


def _members(computations: dict, name: str, seen: set) -> list[dict]:
    """Every instruction of a computation and of the computations it calls (a reduce's adder)."""
    if name in seen or name not in computations:
        return []
    seen.add(name)
    out = []
    for ins in computations[name]["instructions"]:
        out.append(ins)
        for sub in ins["called_computations"]:
            out += _members(computations, sub, seen)
    return out


def _kind(ins: dict) -> tuple[str, str, str]:
    """(kind, category, words) of a top-level instruction."""
    opcode = ins["opcode"]
    if opcode == "fusion":
        kind = FUSION_KINDS.get(ins.get("fusion_kind") or "", str(ins.get("fusion_kind")))
        if kind == "custom":
            library = "YNNPACK" if ins["name"].startswith("ynn") else "a library"
            return "custom", "library", f"library call ({library}, custom fusion {ins['name']})"
        return kind, "fusion", f"{kind} fusion"
    if opcode == "custom-call":
        return "custom-call", "library", f"library call ({ins.get('custom_call_target') or 'custom-call'})"
    if opcode in LIBRARY_OPCODES:
        return opcode, "library", opcode
    return "unfused", "outside", opcode


def xla_fusions(module: dict, nodes: list[dict]) -> list[dict]:
    """One group per top-level HLO instruction doing work, with the TF ops its metadata names."""
    resolve = resolver(nodes)
    order = {n["name"]: i for i, n in enumerate(nodes)}
    node_op = {n["name"]: n["op"] for n in nodes}
    computations = {c["name"]: c for c in module["computations"]}
    called = {sub for c in module["computations"] for ins in c["instructions"] for sub in ins["called_computations"]}
    bodies = _bodies(module)
    groups: dict[tuple[str, str], dict] = {}  # (computation, instruction) -> its group
    for comp in module["computations"]:
        if comp["name"] in called and comp["name"] not in bodies:  # a fusion body, a reduce's adder: via its caller
            continue
        within = bodies.get(comp["name"])
        loop = resolve(within["op_name"]) if within else None
        for ins in comp["instructions"]:
            if ins["opcode"] in PLUMBING:
                continue
            members = [ins] if ins["opcode"] != "fusion" else []
            seen: set = set()
            for sub in ins["called_computations"] if ins["opcode"] not in CONTROL_PARTS else ():
                members += _members(computations, sub, seen)
            kind, category, words = _kind(ins)
            ops, unresolved = set(), []
            opcodes: dict[str, set] = {}
            for m in members:
                target = resolve(m.get("op_name"))
                if target is not None:
                    ops.add(target)
                    opcodes.setdefault(target, set()).add(m["opcode"])
                elif m.get("op_name") and m["op_name"] not in SPECIAL_NAMES and m["op_name"] not in unresolved:
                    unresolved.append(m["op_name"])
            if category == "outside" and not ops and not unresolved:
                continue  # a reshape or broadcast of an argument: plumbing too
            tf_ops = sorted(ops, key=lambda op: order.get(op, len(order)))
            body_ops = list(dict.fromkeys(relative(n, within["op_name"]) for n in unresolved)) if within else []
            where = dict(within, tf_op=loop) if within else None
            groups[comp["name"], ins["name"]] = {
                "node": ins["name"], "kind": kind, "category": category, "words": words,
                "opcode": ins["opcode"], "computation": comp["name"], "shape": ins["shape"],
                "tf_ops": tf_ops, "tf_op_types": [node_op[t] for t in tf_ops], "within": where, "body_ops": body_ops,
                "unresolved_op_names": unresolved, "hlo_instructions": len(members),
                "converted_ops": [], "_converts": {op for op, codes in opcodes.items() if codes <= CONVERTS},
            }
    return _in_order(module, _conversions_named(groups))


def _conversions_named(groups: dict[tuple[str, str], dict]) -> dict[tuple[str, str], dict]:
    """Each group's description, with the ops a fusion holds only the dtype conversions of (``converted_ops``): a
    float16 Conv2D on XLA:CPU runs as a float32 dot or convolution, and the converts back carry its name into the
    loop fusion after it, which computes none of it. An op converted and nowhere else (a Cast) is its conversion."""
    elsewhere = {op for g in groups.values() if g["category"] != "fusion" for op in g["tf_ops"]}
    for g in groups.values():
        converts = g.pop("_converts")
        if g["category"] == "fusion":
            g["converted_ops"] = [op for op in g["tf_ops"] if op in converts and op in elsewhere]
        g["description"] = describe(g["words"], g["category"], g["tf_ops"], g["within"], g["body_ops"],
                                    g["converted_ops"])
    return groups


def _in_order(module: dict, groups: dict[tuple[str, str], dict]) -> list[dict]:
    """The groups in the order a reader follows: the entry's, each loop's or branch's right after its instruction."""
    computations = {c["name"]: c for c in module["computations"]}
    out: list[dict] = []
    done: set = set()

    def emit(name: str) -> None:
        if name in done or name not in computations:
            return
        done.add(name)
        for ins in computations[name]["instructions"]:
            if (name, ins["name"]) in groups:
                out.append(groups[name, ins["name"]])
            if ins["opcode"] in CONTROL_PARTS:
                for sub in ins["called_computations"]:
                    emit(sub)

    for comp in sorted(module["computations"], key=lambda c: not c.get("is_entry")):
        emit(comp["name"])
    return out


def where_words(within: dict | None) -> str:
    """Where a group of a loop's body or a branch sits, short: "body of lstm_1/while" ("" for the entry's)."""
    if not within:
        return ""
    return f"{within['part']} of {'/'.join((within['tf_op'] or within['instruction']).split('/')[-2:])}"


def describe(words: str, category: str, tf_ops: list[str], within: dict | None = None,
             body_ops: Sequence[str] = (), converted: Sequence[str] = ()) -> str:
    """'loop fusion of 9 ops: BiasAdd, Gelu/mul, ...', 'dot: MatMul (outside any fusion)' or, in a loop's body,
    'dot in the body of model/lstm/while: lstm_cell/MatMul (outside any fusion)'; an op a fusion holds only the
    dtype conversions of reads 'Conv2D (its dtype conversion)'."""
    named = [*tf_ops, *(op for op in body_ops if op not in tf_ops)]
    held = ", ".join(f"{op} (its dtype conversion)" if op in converted else op for op in named) or \
        "no TF op named in its metadata"
    where = f" in the {within['part']} of {within['tf_op'] or within['instruction']}" if within else ""
    if category == "fusion":
        return f"{words} of {len(named)} op{'s' if len(named) != 1 else ''}{where}: {held}"
    if words in LIBRARY_OPCODES or category == "outside":
        return f"{words}{where}: {held} (outside any fusion)"
    return f"{words}{where}: {held}"


_OP_NAME = re.compile(r'op_name="([^"]*)"')


def account(groups: list[dict], nodes: list[dict], unoptimized_hlo: str | None = None,
            module: dict | None = None) -> dict[str, dict]:
    """Where every traced TF op went: {name: {"op", "status", "where", "note"}} (see STATUS_WORDS)."""
    resolve = resolver(nodes)
    before = {resolve(n) for n in _OP_NAME.findall(unoptimized_hlo)} if unoptimized_hlo is not None else None
    # a name carried only by an instruction that moves or reinterprets data (a Squeeze as a bitcast)
    moved = {resolve(ins.get("op_name")): ins["opcode"] for comp in (module or {}).get("computations", [])
             for ins in comp["instructions"] if ins["opcode"] in PLUMBING - {"parameter", "constant"}}
    out = {}
    for node in nodes:
        name, op = node["name"], node["op"]
        where = [g for g in groups if name in g["tf_ops"]]
        converted = [g["node"] for g in where if name in g.get("converted_ops", ())]
        categories = {g["category"] for g in where if name not in g.get("converted_ops", ())}
        note = f"its dtype conversions sit in {', '.join(converted)}, which computes none of it" if converted else None
        status = next((c for c in ("fusion", "library", "outside") if c in categories), None)
        if status is None and op in INPUT_OPS:
            status = "argument"
        elif status is None:
            status = "no_hlo"
            if op in CONST_OPS:
                note = "a constant: XLA emits it inside its consumer (an HLO constant under the consumer's name)"
            elif op in NO_HLO_OPS:
                note = f"{op} computes nothing: it lowers to no HLO"
            elif name in moved:
                note = f"only a {moved[name]} carries its name: it moves or reinterprets data, computing nothing"
            elif before is not None and name in before:
                note = "in the HLO before optimisation; XLA's passes folded or removed it"
            else:
                note = "no instruction of the optimised HLO carries its name"
        out[name] = {"op": op, "status": status, "where": [g["node"] for g in where], "note": note}
    return out


def summary(groups: list[dict]) -> str:
    """'dot, loop fusion (9 ops)': what XLA made of the model, at a glance, one entry per kind in order
    of first appearance, counted where there are several ('104 loop fusions (2–11 ops each)')."""
    kinds: dict[str, list[int]] = {}
    for g in groups:
        kinds.setdefault(g["words"], []).append(len(g["tf_ops"]) + len(g.get("body_ops") or ())
                                                if g["category"] == "fusion" else 0)
    parts = []
    for words, sizes in kinds.items():
        count = words if len(sizes) == 1 else f"{len(sizes)} {words}" + ("" if words.endswith("s") else "s")
        low, high = min(sizes), max(sizes)
        if high:
            span = f"{low}–{high}" if low != high else f"{high}"
            count += f" ({span} op{'s' if high != 1 else ''}{' each' if len(sizes) > 1 else ''})"
        parts.append(count)
    return ", ".join(parts) or "nothing"


def annotate_xla(result: dict) -> dict:
    """The worker's XLA result with its fusions, the account of every TF op and a one-line summary."""
    result = dict(result)
    nodes = result["traced"]["nodes"]
    groups = xla_fusions(result["module"], nodes)
    result["fusions"] = groups
    result["accounting"] = account(groups, nodes, (result.get("hlo") or {}).get("hlo"), result["module"])
    result["summary"] = summary(groups)
    result["executed_vs_shown"] = executed_vs_shown(result)
    passes = result.get("passes")
    if passes and "log" in passes:  # the log is read once, into the table; the dumps stay for the diffs
        from . import xla_passes

        table = xla_passes.pass_table(xla_passes.vlog_rows(passes["log"], result["module"]["name"]), passes["dumps"])
        result["pass_table"] = table
        result["pass_summary"] = xla_passes.summary(table)
        result["passes"] = {"dumps": passes["dumps"], "log_lines": len(passes["log"])}
    return result


# What XLA's GPU compiler does, which this machine cannot show: each sentence labelled with its evidence
# (model.evidence), and said only of the ops the model has, so that a CNN is not told about GELU.
GPU_NOT_MEASURED = ("Not measured here (no GPU): XLA's GPU compiler runs its own fusion passes, so its fusions are "
                    "not the CPU ones shown.")
GPU_ONLY_THERE = "With --device gpu on a machine with a GPU, this same view shows XLA's GPU module."
GELU_OPS = frozenset({"Erf", "Erfc", "Gelu"})
CONV_OPS = frozenset({"Conv2D", "Conv3D", "DepthwiseConv2dNative", "Conv2DBackpropInput"})
MATMUL_OPS = frozenset({"MatMul", "BatchMatMulV2", "BatchMatMulV3", "Einsum"})
SOURCE_VERSION = "XLA's source; which version was read is not recorded"
# shared/reference/measured-gpu.md, in words: what XLA did with dense + bias + GELU on an H200.
GELU_MEASURED = (f"{evidence.MEASURED_H200}: for dense + bias + GELU (4096×256×1024 and 4096×1024×4096, float32, "
                 "bfloat16, float16) XLA always put the bias into the matmul (cuBLASLt's BIAS epilogue, or a Triton "
                 "GEMM) and made the GELU's element-wise ops one loop fusion. Its gemm rewriter's GELU epilogue "
                 "(cuBLASLt BIAS_GELU, nothing else left) fired only for one exact form of the tanh GELU, "
                 "jax.nn.gelu(approximate=True), and only with Triton GEMMs switched off "
                 "(--xla_gpu_enable_triton_gemm=false). TensorFlow's own GELU form, "
                 "0.5·x·(1 + tanh(c·(x + 0.044715·x³))), was never matched (with pow or x·x·x), nor the exact (erf) "
                 "GELU.")


def gpu_note(ops) -> str:
    """What XLA's GPU compiler does with a model of these TF op types, each statement with its evidence."""
    ops = set(ops)
    said = [GPU_NOT_MEASURED]
    gelu = bool(ops & GELU_OPS) or {"Tanh", "Pow"} <= ops
    if ops & MATMUL_OPS and gelu:
        said.append(GELU_MEASURED)
    elif ops & MATMUL_OPS:
        said.append(f"Read from {SOURCE_VERSION} (gemm_rewriter.cc), not measured: its gemm rewriter folds a bias "
                    "add, and a ReLU after it, into the cuBLASLt matmul as its epilogue.")
    if ops & CONV_OPS:
        said.append(f"Read from {SOURCE_VERSION} (cudnn_fused_conv_rewriter.cc), not measured: it folds a "
                    "convolution's bias, a side input and an activation such as ReLU into one cuDNN call, where "
                    "cuDNN supports the combination.")
    said.append(GPU_ONLY_THERE)
    return " ".join(said)


def status_lines(accounting: dict[str, dict]) -> list[tuple[str, list[str]]]:
    """(words, ops) for each status in use, in STATUS_WORDS order: the account at a glance."""
    out = []
    for status, words in STATUS_WORDS.items():
        ops = [name for name, a in accounting.items() if a["status"] == status]
        if ops:
            out.append((words, ops))
    return out


def cluster_lines(clusters: list[dict]) -> list[str]:
    """Auto-clustering's clusters in words: 'cluster_0: 9 ops compiled by XLA: Gelu/mul, ...' (constants counted)."""
    lines = []
    for c in clusters:
        ops = [o["name"] for o in c["ops"] if o["op"] not in CONST_OPS]
        consts = len(c["ops"]) - len(ops)
        extra = f" (+{consts} const{'s' if consts != 1 else ''})" if consts else ""
        lines.append(f"{c['cluster']}: {len(ops)} op{'s' if len(ops) != 1 else ''} compiled by XLA{extra}: "
                     + (", ".join(ops) or "(its members were not dumped)"))
    return lines


def executed_vs_shown(result: dict) -> dict:
    """Does the module a call ran (its profiled HLO instructions) look like the module shown?

    The two are separate compiles with different module names; the same instruction names on the
    same model say they came out of XLA's passes alike. A loop's body and a branch are the shown module's
    too, and a branch not taken does not run: every instruction that ran being one shown (``within``) says
    the same, with the ones that did not run named (``only_shown``). A data move that ran (a copy) counts
    for neither side, as the shown side leaves moves out.
    """
    module = result["module"]
    bodies = _bodies(module)  # a loop's body and condition, a branch: their instructions run as the entry's do
    opcode = {i["name"]: i["opcode"] for c in module["computations"] for i in c["instructions"]}
    ran = {n for n in (result.get("executed") or {}).get("hlo_instructions") or [] if opcode.get(n) not in PLUMBING}
    shown = {i["name"] for c in module["computations"] if c["is_entry"] or c["name"] in bodies
             for i in c["instructions"] if i["opcode"] not in PLUMBING}
    return {"same": bool(ran) and ran == shown, "within": bool(ran) and ran <= shown, "only_ran": sorted(ran - shown),
            "only_shown": sorted(shown - ran)}


def executed_words(compared: dict, some=lambda names: ", ".join(names)) -> str:
    """What ``executed_vs_shown`` found, in one sentence (``some`` shortens a long list of names)."""
    if compared.get("same"):
        return "It ran the same instructions as the module shown."
    if compared.get("within"):
        return (f"It ran instructions of the module shown only; {len(compared['only_shown'])} of those shown did not "
                f"run in that call ({some(compared['only_shown'])}): in a branch not taken or a loop's condition, an "
                "instruction may not run.")
    parts = [f"ran only: {some(compared['only_ran'])}" if compared.get("only_ran") else "",
             f"shown only: {some(compared['only_shown'])}" if compared.get("only_shown") else ""]
    return f"Its instructions differ from the module shown ({'; '.join(p for p in parts if p)})."
