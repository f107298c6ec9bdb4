"""What the remapper's rules predict for a model: the fusions to expect and the checklist behind them.

``predict(ctx)`` walks the model's op chain pattern by pattern (contraction + bias, the activation
joining it, batch norm, the oneDNN-only activations) and the special model kinds, collecting the
preconditions (``preconditions.Check``) and the fused nodes they allow.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model.chain import ACTIVATION_LABELS
from ..model.devices import is_simulated
from .preconditions import (FUSED_OP, NO_FIX, ONEDNN_ON, PERSISTENT_BN_ON, STANDALONE, STOCK_ACTS, USE_FLOAT32,
                            USE_NHWC, Check, Context, act_into_contraction, common_checks, consumer_checks,
                            core_checks, gpu_batchnorm_checks, onednn_dtype_ok, chain, device, env, fix, param)


@dataclass
class Prediction:
    pattern: str  # the op chain the rules look at
    fusions: list[tuple[str, tuple[str, ...]]]  # fused nodes the rules expect: (op, fused_ops)
    full: tuple[str, tuple[str, ...]] | None  # the one fused node if every condition held
    checks: list[Check]
    certain: bool = True  # False where the rules cannot tell (e.g. a GPU condition on this machine)
    notes: list[str] = field(default_factory=list)


def _predict_kind(ctx: Context) -> Prediction:
    """Models that are not contraction chains: one pattern each (catalogue rows 14, 17, 18, 25, 29, 30)."""
    c, p = ctx.chain, ctx.p
    checks = common_checks(ctx)
    notes: list[str] = []
    blocked = any(ch.ok is False for ch in checks)
    certain = ctx.on_cpu
    onednn_ok = ctx.on_cpu and ctx.onednn and onednn_dtype_ok(ctx, p.get("dtype", "float32"))[0]
    full: tuple[str, tuple[str, ...]] | None
    fusions: list[tuple[str, tuple[str, ...]]]
    if c.kind == "hash_bucket":
        full = ("_TensorToHashBucketFast", ())
        fusions = [full]
    elif c.kind == "batchnorm_fold":
        full = None
        ok = p["dtype"] == "float32"
        checks.append(Check("float32 inference batch norm with constant statistics", ok,
                            "the remapper splits it into Mul and Add, which later passes fold" if ok else
                            f"the decomposition takes float32 only; this is {p['dtype']}", NO_FIX if ok else USE_FLOAT32))
        notes.append("This rewrite removes a fused op instead of making one: look for FusedBatchNormV3 being "
                     "replaced by Rsqrt/Mul/Add (or folded constants) after Grappler.")
        fusions = []
    elif c.kind == "batchnorm_grad":
        full = ("_FusedBatchNormGradEx", ("Relu",))
        flag = ctx.env.get("TF_USE_CUDNN_BATCHNORM_SPATIAL_PERSISTENT") == "1"
        if ctx.on_cpu:
            checks.append(Check("device", False, "the gradient fusion exists only on GPU", fix("choose a GPU (or gpu-sim)", [device("gpu")], [device("gpu-sim")])))
        else:
            checks.append(Check("TF_USE_CUDNN_BATCHNORM_SPATIAL_PERSISTENT=1", flag, "needed for training-mode fusion",
                                NO_FIX if flag else PERSISTENT_BN_ON))
            checks.append(Check("float16", p["dtype"] == "float16", "training-mode fusion takes float16 only",
                                NO_FIX if p["dtype"] == "float16" else fix("use float16", [param("dtype", "float16")])))
        fwd_cpu = onednn_ok
        fusions = [("_FusedBatchNormEx", ("Relu",))] if fwd_cpu else []
        if fwd_cpu:
            notes.append("On CPU, oneDNN still fuses the forward FusedBatchNorm+Relu; the gradient stays unfused.")
    else:
        op, ops = {"batch_matmul_scale_add": ("_MklFusedBatchMatMulV2", ("Mul", "Add")),
                   "layer_norm": ("_MklLayerNorm", ()),
                   "instance_norm": ("_MklFusedInstanceNorm", (c.activation,) if c.activation != "none" else ())}[c.kind]
        full = (op, ops)
        fusions = [full] if onednn_ok else []
        checks.append(Check("oneDNN on this CPU", onednn_ok if ctx.on_cpu else False,
                            f"{op} is a oneDNN kernel" + ("" if onednn_ok else "; it needs oneDNN on a CPU with the dtype"),
                            NO_FIX if onednn_ok else fix("set TF_ENABLE_ONEDNN_OPTS=1 (CPU, float32)", [env("TF_ENABLE_ONEDNN_OPTS", "1")])))
        if not ctx.on_cpu:
            certain = True
    if blocked:
        fusions = []
    return Prediction(c.describe(), fusions, full, checks, certain, notes)


@dataclass
class _Draft:
    """A prediction as ``predict``'s steps build it."""

    checks: list[Check]
    notes: list[str]
    certain: bool
    standalone: bool  # the activation is not folded into anything else, so it may become one op of its own
    fusions: list[tuple[str, tuple[str, ...]]] = field(default_factory=list)
    full: tuple[str, tuple[str, ...]] | None = None


def predict(ctx: Context) -> Prediction:
    """The fusions the rules expect for an op chain, in steps: what holds for any chain, an explicit Pad,
    the contraction with its bias and what joins it, the batch norm, an activation standing alone."""
    if ctx.chain.kind != "chain":
        return _predict_kind(ctx)
    d = _start(ctx)
    blocked = any(ch.ok is False for ch in d.checks)
    _pad(ctx, d)
    _contraction(ctx, d)
    _norm(ctx, d)
    _standalone(ctx, d)
    return Prediction(ctx.chain.describe(), [] if blocked else d.fusions, d.full, _unique(d.checks), d.certain, d.notes)


def _start(ctx: Context) -> _Draft:
    """What holds for any chain: the remapper runs, XLA does not take over; on a GPU, a note on certainty."""
    notes: list[str] = []
    if not ctx.on_cpu:
        notes.append("Simulated GPU: the graph is Grappler's own decision on a virtual GPU, the checklist is read "
                     "from the remapper's source; kernels are not run, so run-time refusals cannot show."
                     if is_simulated(ctx.device) else
                     "GPU rules are read from the remapper's source; on this machine they cannot be confirmed.")
    return _Draft(common_checks(ctx), notes, certain=ctx.on_cpu, standalone=ctx.chain.activation in STANDALONE)


def _pad(ctx: Context, d: _Draft) -> None:
    """An explicit Pad before Conv3D, folded by oneDNN."""
    c = ctx.chain
    if c.pad and c.bias == "none":
        ok = ctx.on_cpu and ctx.onednn
        d.checks.append(Check("oneDNN on", ok, "oneDNN folds an explicit Pad into Conv3D" if ok else
                              "Pad+Conv3D fuses only with oneDNN on CPU", NO_FIX if ok else ONEDNN_ON))
        d.full = ("_FusedConv3D", ())
        if ok:
            d.fusions.append(d.full)


def _contraction(ctx: Context, d: _Draft) -> None:
    """The contraction and its bias, and what joins them: a residual Add, a Squeeze, the activation."""
    c, act = ctx.chain, ctx.chain.activation
    contraction = FUSED_OP.get(c.contraction)

    if contraction and c.bias != "none":
        core = core_checks(ctx) + consumer_checks(ctx, "bias")
        d.checks += core
        core_ok = all(ch.ok is not False for ch in core)
        ops: list[str] = ["BiasAdd"] if core_ok else []
        full_ops = ["BiasAdd"]
        if c.side_add:
            full_ops.append("Add")
            ok = ctx.on_cpu and ctx.onednn and c.contraction in ("Conv2D", "MatMul")
            d.checks.append(Check("oneDNN Contraction+BiasAdd+Add", ok,
                                  "oneDNN fuses the residual Add into the contraction" if ok else
                                  "a residual Add joins the fused op only with oneDNN on CPU, for Conv2D and MatMul",
                                  NO_FIX if ok else ONEDNN_ON))
            if act != "none":
                full_ops.append(act)
            if core_ok and ok:
                ops.append("Add")
                if act in ("Relu", "Relu6", "Elu") or (act == "LeakyRelu" and c.contraction == "Conv2D"):
                    ops.append(act)
                    if c.contraction == "MatMul":
                        d.checks.append(Check("TensorFlow can build the fused node", False,
                                              "TensorFlow 2.21 defect: for MatMul+BiasAdd+Add+activation the remapper "
                                              "writes a node with no op, Grappler gives up and the function runs with "
                                              "no Grappler optimisation at all",
                                              fix("use Conv2D, drop the activation, or set TF_ENABLE_ONEDNN_OPTS=0", [chain("contraction", "Conv2D")], [chain("activation", "none")], [env("TF_ENABLE_ONEDNN_OPTS", "0")])))
                        ops = []
        elif c.squeeze:
            ok = ctx.on_cpu
            d.checks.append(Check("device", ok, "Conv2D+Squeeze+BiasAdd fuses on CPU only", NO_FIX if ok else fix("choose the CPU", [device("cpu")])))
            if not ok:
                ops = []
            if act in STOCK_ACTS:  # what would join a Conv2D + BiasAdd with no Squeeze
                full_ops.append(act)
                d.checks.append(Check("activation before the Squeeze", False,
                                      f"the remapper's Conv2D+Squeeze+BiasAdd pattern takes no activation: the {act} "
                                      "after the Squeeze runs as an op of its own (so does a Keras Conv1D's)",
                                      fix("apply the activation before the Squeeze: no Squeeze between the Conv2D and "
                                          "its bias (a Conv1D written 4-D; the fix squeeze-after-activation for an "
                                          "imported model)", [chain("squeeze", False)])))
        elif act != "none" and c.norm == "none":
            act_ok, act_checks, label = act_into_contraction(ctx)
            act_checks += consumer_checks(ctx, "norm")
            d.checks += act_checks
            full_ops.append(label)
            if act_ok is None:
                d.certain = False
            if core_ok and act_ok and all(ch.ok is not False for ch in act_checks):
                ops.append(label)
                d.standalone = False
        if c.norm == "none":
            d.full = (contraction, tuple(full_ops))
        if ops:
            d.fusions.append((contraction, tuple(ops)))
    elif c.contraction == "BatchMatMulV2":
        d.notes.append("BatchMatMulV2 has no bias or activation fusion in the remapper (oneDNN fuses only "
                       "BatchMatMul×scale+addend, another pattern).")


def _norm(ctx: Context, d: _Draft) -> None:
    """A batch norm: into the convolution before it, with the Relu after it, or (GPU) with a side input."""
    c, p, act = ctx.chain, ctx.p, ctx.chain.activation
    if c.norm != "none":
        training = bool(p.get("training"))
        dtype = p["dtype"]
        bn_ex = ctx.on_cpu and ctx.onednn and onednn_dtype_ok(ctx, dtype)[0]
        conv_bn = False
        if c.contraction == "Conv2D" and c.bias == "none":
            acts = STOCK_ACTS + (("Tanh",) if ctx.onednn else ())
            d.full = ("_FusedConv2D", ("FusedBatchNorm",) + ((act,) if act in STOCK_ACTS + ("Tanh",) else ()))
            bn = [Check("device", ctx.on_cpu, "Conv2D+FusedBatchNorm fuses on CPU only", NO_FIX if ctx.on_cpu else fix("choose the CPU", [device("cpu")])),
                  Check("inference mode", not training,
                        "in training the batch statistics must be computed first, so the convolution cannot absorb "
                        "the batch norm" if training else "is_training=False: the batch norm is a fixed scale and shift",
                        fix("use inference mode (training=False)", [param("training", False)]) if training else NO_FIX),
                  Check("data type", dtype == "float32", f"Conv2D+FusedBatchNorm fuses in float32 here; this is {dtype}",
                        NO_FIX if dtype == "float32" else USE_FLOAT32)]
            if p.get("data_format") == "NCHW" and not ctx.onednn:
                bn.append(Check("data format", False, "the stock CPU fuses convolutions only in NHWC", USE_NHWC))
            bn += consumer_checks(ctx, "norm")
            d.checks += bn
            if all(ch.ok is not False for ch in bn):
                conv_bn = True
                ops = ["FusedBatchNorm"]
                if act in acts:
                    ops.append(act)
                    if act == "Tanh":
                        d.notes.append("TensorFlow 2.21 with oneDNN fuses Conv2D+FusedBatchNorm+Tanh, but the kernel does "
                                       "not implement it: the model fails when run (a TF defect).")
                elif act == "Swish" and ctx.onednn:
                    ops.append("_MklSwish")
                    d.standalone = False
                d.fusions.append(("_FusedConv2D", tuple(ops)))
        if not conv_bn and act == "Relu":
            if c.side_add:
                d.checks.append(Check("device", not ctx.on_cpu,
                                      "FusedBatchNorm+Add+Relu fuses only on GPU (oneDNN refuses the side input)",
                                      fix("run on a GPU", [device("gpu")], [device("gpu-sim")]) if ctx.on_cpu else NO_FIX))
                if d.full is None:
                    d.full = ("_FusedBatchNormEx", ("Add", "Relu"))
                if not ctx.on_cpu:
                    gpu = gpu_batchnorm_checks(ctx)
                    d.checks += gpu
                    d.certain = False
                    if all(ch.ok for ch in gpu):
                        d.fusions.append(("_FusedBatchNormEx", ("Add", "Relu")))
            elif not ctx.on_cpu:
                gpu = gpu_batchnorm_checks(ctx)
                d.checks += gpu
                if d.full is None:
                    d.full = ("_FusedBatchNormEx", ("Relu",))
                d.certain = False
                if all(ch.ok for ch in gpu) and p.get("return_intermediate") != "norm":
                    d.fusions.append(("_FusedBatchNormEx", ("Relu",)))
            else:
                ok = bn_ex
                d.checks.append(Check("FusedBatchNorm+Relu supported here", ok,
                                      "oneDNN fuses FusedBatchNorm+Relu (training and inference)" if ok else
                                      "the stock CPU has no FusedBatchNorm+Relu kernel (_FusedBatchNormEx) of "
                                      "its own: without oneDNN the pair fuses only into a Conv2D before it, "
                                      "and only in inference",
                                      NO_FIX if ok else ONEDNN_ON))
                if d.full is None:
                    d.full = ("_FusedBatchNormEx", ("Relu",))
                second = p.get("return_intermediate") == "norm"
                if ok and not second:
                    d.fusions.append(("_FusedBatchNormEx", ("Relu",)))
        elif not conv_bn and act not in ("none", "Swish"):
            d.checks.append(Check("activation after FusedBatchNorm", False,
                                  f"FusedBatchNorm fuses with Relu only, not {ACTIVATION_LABELS[act]}", fix("use Relu", [chain("activation", "Relu")])))


def _standalone(ctx: Context, d: _Draft) -> None:
    """An activation folded into nothing else, which oneDNN's block of the remapper may still make one op."""
    c, p, act = ctx.chain, ctx.p, ctx.chain.activation
    if d.standalone and c.contraction == "none" and c.norm == "none":
        ok = ctx.on_cpu and ctx.onednn
        d.checks.append(Check("oneDNN on", ok, f"{STANDALONE[act][0]} is made by the remapper's oneDNN block" if ok else
                              f"{ACTIVATION_LABELS[act]} becomes {STANDALONE[act][0]} only with oneDNN on CPU",
                              NO_FIX if ok else ONEDNN_ON))
    if d.standalone and ctx.on_cpu and ctx.onednn and onednn_dtype_ok(ctx, p["dtype"])[0]:
        d.fusions.append(STANDALONE[act])
        if d.full is None:
            d.full = STANDALONE[act]


def _unique(checks: list[Check]) -> list[Check]:
    """A condition reached from two parts of the chain (a consumer check) is listed once."""
    seen, out = set(), []
    for check in checks:
        if (check.name, check.detail) not in seen:
            seen.add((check.name, check.detail))
            out.append(check)
    return out
