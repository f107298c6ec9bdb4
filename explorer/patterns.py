"""Why a pattern did or did not fuse: the remapper's rules, evaluated on one model and configuration.

``explain(result)`` reads an inspect result (spec, configuration, fingerprint, graphs) and returns,
for the op chain of the model, the fusion the remapper's rules predict, a checklist of the
preconditions with the failing ones named in plain words and the change that would make them
pass, and a verdict taken from what TensorFlow actually did (fused, partly fused, not fused).
Where the prediction and the graph disagree, it says so rather than hiding either.

The rules follow Grappler's remapper (TensorFlow 2.21) as checked on this kind of machine; see
../shared/reference/remapper-patterns.md for the catalogue they come from.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .flags import is_simulated
from .fusion import is_fused_node
from .graphs import Graph
from .spec import ACTIVATION_LABELS, Chain, resolve

FUSED_OP = {"MatMul": "_FusedMatMul", "Conv2D": "_FusedConv2D",
            "DepthwiseConv2dNative": "_FusedDepthwiseConv2dNative", "Conv3D": "_FusedConv3D"}
# oneDNN activations that, when not folded into a contraction, still become one op of their own.
STANDALONE = {"Swish": ("_MklSwish", ()), "Mish": ("_MklFusedMish", ()), "LeakyReluMax": ("LeakyRelu", ())}
# oneDNN activations that join a fused convolution: activation -> (fused_ops label, contractions).
ONEDNN_ACTS = {"HardSwish": ("_FusedHardSwish", ("Conv2D", "DepthwiseConv2dNative")),
               "Mish": ("Mish", ("Conv2D", "Conv3D")),
               "LeakyReluMax": ("LeakyRelu", ("Conv2D", "Conv3D"))}
STOCK_ACTS = ("Relu", "Relu6", "Elu", "LeakyRelu")
GELU = ("GeluApproximate", "GeluExact")


@dataclass
class Check:
    name: str  # what is checked, e.g. "data type"
    ok: bool | None  # None: the rules cannot tell here
    detail: str  # the finding in plain words
    fix: str = ""  # the change that would make it pass

    def to_dict(self) -> dict:
        return {"name": self.name, "ok": self.ok, "detail": self.detail, "fix": self.fix}


@dataclass
class Context:
    chain: Chain
    p: dict
    device: str
    onednn: bool
    env: dict
    switches: dict
    cpu_flags: set = field(default_factory=set)

    @property
    def on_cpu(self) -> bool:
        return self.device == "cpu"


def _onednn_dtype_ok(ctx: Context, dtype: str) -> tuple[bool, str]:
    if dtype == "float32":
        return True, ""
    if dtype == "bfloat16":
        ok = bool(ctx.cpu_flags & {"avx512f", "avx_ne_convert"})
        return ok, "" if ok else "this CPU lacks AVX-512F/AVX-NE-CONVERT, which oneDNN needs for bfloat16"
    if dtype == "float16":
        ok = bool({"avx512bw"} <= ctx.cpu_flags and ctx.cpu_flags & {"avx512_fp16", "amx_fp16"}) or \
            "avx_ne_convert" in ctx.cpu_flags
        return ok, "" if ok else ("this CPU lacks AVX512-FP16/AMX-FP16, so oneDNN cannot run float16 here and "
                                  "the remapper skips every float16 node")
    return False, f"oneDNN fusions do not take {dtype}"


def _common_checks(ctx: Context) -> list[Check]:
    checks = []
    remap = ctx.switches.get("remapping", "on") != "off" and ctx.switches.get("disable_meta_optimizer") != "on"
    checks.append(Check("remapper enabled", remap,
                        "the remapping pass runs" if remap else "the remapping pass (or all of Grappler) is switched off",
                        "" if remap else "switch the 'remapping' Grappler switch on"))
    xla = ctx.env.get("TF_XLA_FLAGS", "")
    if ctx.on_cpu:
        jit_ok = "--tf_xla_cpu_global_jit" not in xla
        checks.append(Check("XLA CPU global JIT off", jit_ok,
                            "XLA does not take over CPU fusion" if jit_ok else
                            "TF_XLA_FLAGS has --tf_xla_cpu_global_jit, which disables the remapper's CPU fusions",
                            "" if jit_ok else "unset TF_XLA_FLAGS"))
    elif "--tf_xla_auto_jit" in xla:
        checks.append(Check("XLA auto-clustering off", False,
                            "with XLA auto-clustering on, the remapper leaves GPU fusions to XLA", "unset TF_XLA_FLAGS"))
    if ctx.onednn and ctx.on_cpu and "dtype" in ctx.p:
        ok, why = _onednn_dtype_ok(ctx, ctx.p["dtype"])
        if ctx.p["dtype"] in ("float16", "bfloat16"):
            checks.append(Check("oneDNN supports the dtype on this CPU", ok,
                                f"{ctx.p['dtype']} is supported by oneDNN here" if ok else why,
                                "" if ok else "use float32, or TF_ENABLE_ONEDNN_OPTS=0"))
    return checks


def _consumer_checks(ctx: Context, upto: str) -> list[Check]:
    """Intermediates of the chain must have one consumer and must not be returned."""
    checks = []
    if ctx.p.get("second_consumer") and ctx.chain.contraction != "none":
        checks.append(Check("contraction output has one consumer", False,
                            f"the {ctx.chain.contraction} output also feeds another op, so it has two consumers and "
                            "must stay a separate tensor", "remove the second consumer"))
    ret = ctx.p.get("return_intermediate", "none")
    order = ["contraction", "bias", "norm"]
    if ret != "none" and order.index(ret) < order.index(upto):  # an intermediate before ``upto``
        name = {"contraction": ctx.chain.contraction, "bias": ctx.chain.bias, "norm": ctx.chain.norm}[ret]
        checks.append(Check(f"{name} output not returned", False,
                            f"the {name} output is also returned from the function, so it has two consumers",
                            "do not return the intermediate"))
    return checks


@dataclass
class Prediction:
    pattern: str  # the op chain the rules look at
    fusions: list[tuple[str, tuple[str, ...]]]  # fused nodes the rules expect: (op, fused_ops)
    full: tuple[str, tuple[str, ...]] | None  # the one fused node if every condition held
    checks: list[Check]
    certain: bool = True  # False where the rules cannot tell (e.g. a GPU condition on this machine)
    notes: list[str] = field(default_factory=list)


def _act_into_contraction(ctx: Context) -> tuple[bool | None, list[Check], str]:
    """Can the chain's activation join the contraction+bias fusion? (ok, checks, fused_ops label)"""
    c, p, act = ctx.chain, ctx.p, ctx.chain.activation
    checks: list[Check] = []
    label = "_MklSwish" if act == "Swish" else ONEDNN_ACTS.get(act, (act,))[0]
    if act in ONEDNN_ACTS:
        _, contractions = ONEDNN_ACTS[act]
        ok = ctx.on_cpu and ctx.onednn and c.contraction in contractions
        checks.append(Check(f"{ACTIVATION_LABELS[act]} joins the contraction", ok,
                            f"oneDNN folds it into {' or '.join(contractions)}+BiasAdd" if ok else
                            f"it joins a fused {' or '.join(contractions)} only with oneDNN on CPU",
                            "" if ok else ("set TF_ENABLE_ONEDNN_OPTS=1" if not ctx.onednn else f"use {contractions[0]}")))
    elif act in GELU:
        if ctx.on_cpu:
            checks.append(Check("oneDNN on", ctx.onednn, "the CPU fuses GELU into MatMul+BiasAdd only with oneDNN",
                                "" if ctx.onednn else "set TF_ENABLE_ONEDNN_OPTS=1"))
            checks.append(Check("contraction is MatMul", c.contraction == "MatMul",
                                "MatMul+BiasAdd+GELU is a pattern; a convolution followed by GELU is not",
                                "" if c.contraction == "MatMul" else "use MatMul"))
            if c.bias == "Add":
                checks.append(Check("bias written as BiasAdd", False,
                                    "oneDNN turns the bias-like Add into a fused BiasAdd, but the GELU pattern needs "
                                    "a real BiasAdd node, so only MatMul+bias fuse", "use tf.nn.bias_add"))
        elif act == "GeluApproximate":
            lt = ctx.env.get("TF_USE_CUBLASLT") == "1"
            checks.append(Check("TF_USE_CUBLASLT=1", lt, "GPU fuses the approximate GELU through cuBLASLt",
                                "" if lt else "set TF_USE_CUBLASLT=1"))
        else:
            rf = ctx.env.get("TF_CUDNN_USE_RUNTIME_FUSION") == "1" and p["dtype"] == "float16"
            checks.append(Check("cuDNN runtime fusion", rf, "GPU fuses the exact GELU only with "
                                "TF_CUDNN_USE_RUNTIME_FUSION=1, float16, compute capability 8.0+",
                                "" if rf else "set TF_CUDNN_USE_RUNTIME_FUSION=1 and use float16"))
    elif act == "Swish":
        ok = ctx.on_cpu and ctx.onednn and c.contraction == "Conv2D"
        checks.append(Check("Swish joins the contraction", ok,
                            "oneDNN folds Swish into Conv2D+BiasAdd" if ok else
                            "Swish joins a fused contraction only for Conv2D with oneDNN on CPU",
                            "" if ok else ("use Conv2D" if ctx.onednn else "set TF_ENABLE_ONEDNN_OPTS=1")))
    elif act in ("Tanh", "Sigmoid"):
        ok = c.contraction == "MatMul" and (ctx.onednn if ctx.on_cpu else None)
        checks.append(Check(f"{act} can be fused", ok,
                            f"{act} fuses only into MatMul, and on CPU only with oneDNN" if ctx.on_cpu else
                            f"{act} fuses into MatMul on GPU only with cuDNN runtime fusion (float16)",
                            "" if ok else ("set TF_ENABLE_ONEDNN_OPTS=1" if c.contraction == "MatMul" else "use MatMul or Relu")))
    else:
        if c.contraction == "DepthwiseConv2dNative" and act == "LeakyRelu":
            checks.append(Check("activation", False, "DepthwiseConv2dNative fuses Relu, Relu6 and Elu, not LeakyRelu",
                                "use Relu, Relu6 or Elu"))
        if not ctx.on_cpu and c.contraction == "MatMul" and act != "Relu":
            checks.append(Check("activation", False, f"on GPU MatMul fuses Relu (cuBLASLt), not {act}", "use Relu"))
        if not ctx.on_cpu and c.contraction == "Conv2D":
            spatial = p.get("filter_size", 1) != 1
            checks.append(Check("filter larger than 1×1", spatial, "cuDNN's fused kernel needs a spatial filter",
                                "" if spatial else "use a 3×3 filter"))
            if act != "Relu":
                rf = ctx.env.get("TF_CUDNN_USE_RUNTIME_FUSION") == "1" and p["dtype"] == "float16"
                checks.append(Check("cuDNN runtime fusion", rf, f"{act} needs TF_CUDNN_USE_RUNTIME_FUSION=1, float16 "
                                    "and NHWC on GPU", "" if rf else "set TF_CUDNN_USE_RUNTIME_FUSION=1, use float16"))
    ok = None if any(ch.ok is None for ch in checks) else all(ch.ok for ch in checks)
    return ok, checks, label


def _core_checks(ctx: Context) -> list[Check]:
    """Conditions for Contraction+BiasAdd (rows 1-3 of the catalogue)."""
    c, p, dtype = ctx.chain, ctx.p, ctx.p["dtype"]
    checks: list[Check] = []
    if ctx.on_cpu:
        if ctx.onednn:
            ok = dtype in ("float32", "bfloat16", "float16") and _onednn_dtype_ok(ctx, dtype)[0]
            checks.append(Check("data type", ok, f"{dtype} {'is' if ok else 'is not'} fused by oneDNN on this CPU",
                                "" if ok else "use float32"))
        else:
            allowed = ("float32",) if c.contraction == "MatMul" else ("float32", "float64")
            ok = dtype in allowed
            checks.append(Check("data type", ok, f"the stock CPU fuses {c.contraction} in {' or '.join(allowed)}; "
                                f"this model is {dtype}", "" if ok else "use float32, or set TF_ENABLE_ONEDNN_OPTS=1"))
        if c.contraction in ("DepthwiseConv2dNative", "Conv3D"):
            checks.append(Check("oneDNN on", ctx.onednn, f"{c.contraction}+BiasAdd fuses only with oneDNN",
                                "" if ctx.onednn else "set TF_ENABLE_ONEDNN_OPTS=1"))
        if c.bias == "Add":
            ok = ctx.onednn and (c.contraction == "MatMul" or p.get("data_format") == "NHWC")
            checks.append(Check("bias written as BiasAdd", ok,
                                "oneDNN treats an Add of a per-channel bias as a bias" if ok else
                                "a plain Add is recognised as a bias only by oneDNN (channels-last)",
                                "" if ok else "use tf.nn.bias_add, or TF_ENABLE_ONEDNN_OPTS=1 with NHWC"))
        if c.squeeze and p.get("data_format") == "NCHW":
            checks.append(Check("data format", False, "Conv2D+Squeeze+BiasAdd fuses only in NHWC", "use NHWC"))
    else:
        if c.contraction == "MatMul":
            lt = ctx.env.get("TF_USE_CUBLASLT") == "1"
            checks.append(Check("TF_USE_CUBLASLT=1", lt, "on GPU, MatMul+BiasAdd fuses only through cuBLASLt",
                                "" if lt else "set TF_USE_CUBLASLT=1"))
            ok = dtype in ("float32", "float16")
            checks.append(Check("data type", ok, f"cuBLASLt fusion takes float32 or float16; this is {dtype}",
                                "" if ok else "use float32 or float16"))
        elif c.activation == "none" or c.squeeze:
            checks.append(Check("activation present", False, "on GPU a convolution fuses with its bias only "
                                "together with an activation (and never with a Squeeze)", "add a Relu"))
    return checks


def _predict_kind(ctx: Context) -> Prediction:
    """Models that are not contraction chains: one pattern each (catalogue rows 14, 17, 18, 25, 29, 30)."""
    c, p = ctx.chain, ctx.p
    checks = _common_checks(ctx)
    notes: list[str] = []
    blocked = any(ch.ok is False for ch in checks)
    certain = ctx.on_cpu
    onednn_ok = ctx.on_cpu and ctx.onednn and _onednn_dtype_ok(ctx, p.get("dtype", "float32"))[0]
    if c.kind == "hash_bucket":
        full = ("_TensorToHashBucketFast", ())
        fusions = [full]
    elif c.kind == "batchnorm_fold":
        full = None
        ok = p["dtype"] == "float32"
        checks.append(Check("float32 inference batch norm with constant statistics", ok,
                            "the remapper splits it into Mul and Add, which later passes fold" if ok else
                            f"the decomposition takes float32 only; this is {p['dtype']}", "" if ok else "use float32"))
        notes.append("This rewrite removes a fused op instead of making one: look for FusedBatchNormV3 being "
                     "replaced by Rsqrt/Mul/Add (or folded constants) after Grappler.")
        fusions = []
    elif c.kind == "batchnorm_grad":
        full = ("_FusedBatchNormGradEx", ("Relu",))
        flag = ctx.env.get("TF_USE_CUDNN_BATCHNORM_SPATIAL_PERSISTENT") == "1"
        if ctx.on_cpu:
            checks.append(Check("device", False, "the gradient fusion exists only on GPU", "choose a GPU (or gpu-sim)"))
        else:
            checks.append(Check("TF_USE_CUDNN_BATCHNORM_SPATIAL_PERSISTENT=1", flag, "needed for training-mode fusion",
                                "" if flag else "set TF_USE_CUDNN_BATCHNORM_SPATIAL_PERSISTENT=1"))
            checks.append(Check("float16", p["dtype"] == "float16", "training-mode fusion takes float16 only",
                                "" if p["dtype"] == "float16" else "use float16"))
        fwd_cpu = onednn_ok
        fusions = [("_FusedBatchNormEx", ("Relu",))] if fwd_cpu else []
        if fwd_cpu:
            notes.append("On CPU, oneDNN still fuses the forward FusedBatchNorm+Relu; the gradient stays unfused.")
    else:
        op, ops = {"batch_matmul_scale_add": ("_MklFusedBatchMatMulV2", ("Mul", "Add")),
                   "layer_norm": ("_MklLayerNorm", ()),
                   "instance_norm": ("_MklFusedInstanceNorm", (c.activation,) if c.activation != "none" else ())}[c.kind]
        full = (op, ops)
        checks.append(Check("oneDNN on this CPU", onednn_ok if ctx.on_cpu else False,
                            f"{op} is a oneDNN kernel" + ("" if onednn_ok else "; it needs oneDNN on a CPU with the dtype"),
                            "" if onednn_ok else "set TF_ENABLE_ONEDNN_OPTS=1 (CPU, float32)"))
        fusions = [full] if onednn_ok else []
        if not ctx.on_cpu:
            certain = True
    if blocked:
        fusions = []
    return Prediction(c.describe(), fusions, full, checks, certain, notes)


def predict(ctx: Context) -> Prediction:
    if ctx.chain.kind != "chain":
        return _predict_kind(ctx)
    c, p, act = ctx.chain, ctx.p, ctx.chain.activation
    checks = _common_checks(ctx)
    notes: list[str] = []
    certain = ctx.on_cpu
    if not ctx.on_cpu:
        notes.append("Simulated GPU: the graph is Grappler's own decision on a virtual GPU, the checklist is read "
                     "from the remapper's source; kernels are not run, so run-time refusals cannot show."
                     if is_simulated(ctx.device) else
                     "GPU rules are read from the remapper's source; on this machine they cannot be confirmed.")
    blocked = any(ch.ok is False for ch in checks)
    fusions: list[tuple[str, tuple[str, ...]]] = []
    full = None
    standalone = act in STANDALONE  # an activation not folded elsewhere may still become one op
    if c.pad and c.bias == "none":
        ok = ctx.on_cpu and ctx.onednn
        checks.append(Check("oneDNN on", ok, "oneDNN folds an explicit Pad into Conv3D" if ok else
                            "Pad+Conv3D fuses only with oneDNN on CPU", "" if ok else "set TF_ENABLE_ONEDNN_OPTS=1"))
        full = ("_FusedConv3D", ())
        if ok:
            fusions.append(full)
    contraction = FUSED_OP.get(c.contraction)

    if contraction and c.bias != "none":
        core = _core_checks(ctx) + _consumer_checks(ctx, "bias")
        checks += core
        core_ok = all(ch.ok is not False for ch in core)
        ops: list[str] = ["BiasAdd"] if core_ok else []
        full_ops = ["BiasAdd"]
        if c.side_add:
            full_ops.append("Add")
            ok = ctx.on_cpu and ctx.onednn and c.contraction in ("Conv2D", "MatMul")
            checks.append(Check("oneDNN Contraction+BiasAdd+Add", ok,
                                "oneDNN fuses the residual Add into the contraction" if ok else
                                "a residual Add joins the fused op only with oneDNN on CPU, for Conv2D and MatMul",
                                "" if ok else "set TF_ENABLE_ONEDNN_OPTS=1"))
            if act != "none":
                full_ops.append(act)
            if core_ok and ok:
                ops.append("Add")
                if act in ("Relu", "Relu6", "Elu") or (act == "LeakyRelu" and c.contraction == "Conv2D"):
                    ops.append(act)
                    if c.contraction == "MatMul":
                        checks.append(Check("TensorFlow can build the fused node", False,
                                            "TensorFlow 2.21 defect: for MatMul+BiasAdd+Add+activation the remapper "
                                            "writes a node with no op, Grappler gives up and the function runs with "
                                            "no Grappler optimisation at all",
                                            "use Conv2D, drop the activation, or set TF_ENABLE_ONEDNN_OPTS=0"))
                        ops = []
        elif c.squeeze:
            ok = ctx.on_cpu
            checks.append(Check("device", ok, "Conv2D+Squeeze+BiasAdd fuses on CPU only", "" if ok else "choose the CPU"))
            if not ok:
                ops = []
        elif act != "none" and c.norm == "none":
            act_ok, act_checks, label = _act_into_contraction(ctx)
            act_checks += _consumer_checks(ctx, "norm")
            checks += act_checks
            full_ops.append(label)
            if act_ok is None:
                certain = False
            if core_ok and act_ok and all(ch.ok is not False for ch in act_checks):
                ops.append(label)
                standalone = False
        if c.norm == "none":
            full = (contraction, tuple(full_ops))
        if ops:
            fusions.append((contraction, tuple(ops)))
    elif c.contraction == "BatchMatMulV2":
        notes.append("BatchMatMulV2 has no bias or activation fusion in the remapper (oneDNN fuses only "
                     "BatchMatMul×scale+addend, another pattern).")

    if c.norm != "none":
        training = bool(p.get("training"))
        dtype = p["dtype"]
        bn_ex = ctx.on_cpu and ctx.onednn and _onednn_dtype_ok(ctx, dtype)[0]
        conv_bn = False
        if c.contraction == "Conv2D" and c.bias == "none":
            acts = STOCK_ACTS + (("Tanh",) if ctx.onednn else ())
            full = ("_FusedConv2D", ("FusedBatchNorm",) + ((act,) if act in STOCK_ACTS + ("Tanh",) else ()))
            bn = [Check("device", ctx.on_cpu, "Conv2D+FusedBatchNorm fuses on CPU only", "" if ctx.on_cpu else "choose the CPU"),
                  Check("inference mode", not training,
                        "in training the batch statistics must be computed first, so the convolution cannot absorb "
                        "the batch norm" if training else "is_training=False: the batch norm is a fixed scale and shift",
                        "use inference mode (training=False)" if training else ""),
                  Check("data type", dtype == "float32", f"Conv2D+FusedBatchNorm fuses in float32 here; this is {dtype}",
                        "" if dtype == "float32" else "use float32")]
            if p.get("data_format") == "NCHW" and not ctx.onednn:
                bn.append(Check("data format", False, "the stock CPU fuses convolutions only in NHWC", "use NHWC"))
            bn += _consumer_checks(ctx, "norm")
            checks += bn
            if all(ch.ok is not False for ch in bn):
                conv_bn = True
                ops = ["FusedBatchNorm"]
                if act in acts:
                    ops.append(act)
                    if act == "Tanh":
                        notes.append("TensorFlow 2.21 with oneDNN fuses Conv2D+FusedBatchNorm+Tanh, but the kernel does "
                                     "not implement it: the model fails when run (a TF defect).")
                elif act == "Swish" and ctx.onednn:
                    ops.append("_MklSwish")
                    standalone = False
                fusions.append(("_FusedConv2D", tuple(ops)))
        if not conv_bn and act == "Relu":
            if c.side_add:
                checks.append(Check("device", not ctx.on_cpu,
                                    "FusedBatchNorm+Add+Relu fuses only on GPU (oneDNN refuses the side input)",
                                    "run on a GPU" if ctx.on_cpu else ""))
                if full is None:
                    full = ("_FusedBatchNormEx", ("Add", "Relu"))
                if not ctx.on_cpu:
                    gpu = _gpu_batchnorm_checks(ctx)
                    checks += gpu
                    certain = False
                    if all(ch.ok for ch in gpu):
                        fusions.append(("_FusedBatchNormEx", ("Add", "Relu")))
            elif not ctx.on_cpu:
                gpu = _gpu_batchnorm_checks(ctx)
                checks += gpu
                if full is None:
                    full = ("_FusedBatchNormEx", ("Relu",))
                certain = False
                if all(ch.ok for ch in gpu) and p.get("return_intermediate") != "norm":
                    fusions.append(("_FusedBatchNormEx", ("Relu",)))
            else:
                ok = bn_ex
                checks.append(Check("FusedBatchNorm+Relu supported here", ok,
                                    "oneDNN fuses FusedBatchNorm+Relu (training and inference)" if ok else
                                    "the stock CPU never fuses FusedBatchNorm+Relu",
                                    "" if ok else "set TF_ENABLE_ONEDNN_OPTS=1"))
                if full is None:
                    full = ("_FusedBatchNormEx", ("Relu",))
                second = p.get("return_intermediate") == "norm"
                if ok and not second:
                    fusions.append(("_FusedBatchNormEx", ("Relu",)))
        elif not conv_bn and act not in ("none", "Swish"):
            checks.append(Check("activation after FusedBatchNorm", False,
                                f"FusedBatchNorm fuses with Relu only, not {ACTIVATION_LABELS[act]}", "use Relu"))
    if standalone and c.contraction == "none" and c.norm == "none":
        ok = ctx.on_cpu and ctx.onednn
        checks.append(Check("oneDNN on", ok, f"{STANDALONE[act][0]} is made by the remapper's oneDNN block" if ok else
                            f"{ACTIVATION_LABELS[act]} becomes {STANDALONE[act][0]} only with oneDNN on CPU",
                            "" if ok else "set TF_ENABLE_ONEDNN_OPTS=1"))
    if standalone and ctx.on_cpu and ctx.onednn and _onednn_dtype_ok(ctx, p["dtype"])[0]:
        fusions.append(STANDALONE[act])
        if full is None:
            full = STANDALONE[act]
    if blocked:
        fusions = []
    return Prediction(c.describe(), fusions, full, _unique(checks), certain, notes)


def _gpu_batchnorm_checks(ctx: Context) -> list[Check]:
    """FindFusedBatchNormEx on a GPU: float32/float16; training adds cuDNN's persistent-BN limits."""
    p = ctx.p
    dtype = p.get("dtype", "float32")
    checks = [Check("data type", dtype in ("float32", "float16"),
                    f"a GPU fuses FusedBatchNorm in float32 or float16; this is {dtype}",
                    "" if dtype in ("float32", "float16") else "use float32 or float16")]
    if not p.get("training"):
        return checks
    flag = ctx.env.get("TF_USE_CUDNN_BATCHNORM_SPATIAL_PERSISTENT") == "1"
    channels = int(p.get("channels", 0))
    nhwc = p.get("data_format", "NHWC") == "NHWC"
    return checks + [
        Check("training: float16", dtype == "float16", "cuDNN fuses a training batch norm in float16 only",
              "" if dtype == "float16" else "use float16"),
        Check("training: NHWC", nhwc, "cuDNN's fused training batch norm needs NHWC", "" if nhwc else "use NHWC"),
        Check("training: channels a multiple of 4", channels % 4 == 0, f"{channels} channels",
              "" if channels % 4 == 0 else "use a multiple of 4"),
        Check("TF_USE_CUDNN_BATCHNORM_SPATIAL_PERSISTENT=1", flag,
              "training mode needs cuDNN's persistent batch norm", "" if flag else "set it to 1"),
    ]


def _unique(checks: list[Check]) -> list[Check]:
    """A condition reached from two parts of the chain (a consumer check) is listed once."""
    seen, out = set(), []
    for check in checks:
        if (check.name, check.detail) not in seen:
            seen.add((check.name, check.detail))
            out.append(check)
    return out


def observed_fusions(optimized: Graph, traced: Graph | None = None) -> list[tuple[str, tuple[str, ...]]]:
    """The fused nodes of a graph as (op, what it holds); _FusedBatchNormEx spells it in attributes.

    A plain LeakyRelu counts when the traced graph had none (the remapper made it from Mul+Maximum).
    """
    found = []
    made_leaky = traced is not None and "LeakyRelu" not in traced.ops
    for n in optimized.nodes:
        if n.op == "LeakyRelu" and made_leaky:
            found.append((n.op, ()))
            continue
        if n.op in ("_FusedBatchNormEx", "_FusedBatchNormGradEx"):
            attrs = n.attr
            side = attrs.get("num_side_inputs", "0") not in ("0", "")
            found.append((n.op, (("Add",) if side else ()) + ((attrs["activation_mode"],)
                                                              if attrs.get("activation_mode", "Identity") != "Identity" else ())))
        elif is_fused_node(n):
            found.append((n.op, tuple(n.fused_ops)))
    return found


def explain(result: dict) -> dict:
    """Prediction, checklist and verdict for the model of an inspect result."""
    spec = resolve(result["spec"])
    config = result.get("config") or {}
    fp = result.get("fingerprint") or {}
    ctx = Context(spec.chain, spec.p, config.get("device", "cpu"), bool(fp.get("onednn")),
                  config.get("env") or {}, config.get("grappler") or {}, set(fp.get("cpu_flags") or ()))
    pred = predict(ctx)
    if spec.chain.kind == "batchnorm_fold":
        return _explain_decomposition(result, pred)
    observed = observed_fusions(Graph.from_dict(result["stages"]["optimized"]),
                                Graph.from_dict(result["stages"]["traced"]) if "traced" in result["stages"] else None)
    if pred.full and pred.full in observed:
        verdict = "fused"
    elif observed:
        verdict = "partly fused" if pred.full else "fused"
    else:
        verdict = "not fused"
    agrees = sorted(pred.fusions) == sorted(observed)
    failing = [ch for ch in pred.checks if ch.ok is False]
    if verdict == "fused":
        why = "every condition of the pattern holds"
    elif failing:
        why = "; ".join(ch.detail for ch in failing)
    else:
        why = "no rule the explorer knows explains it" if ctx.on_cpu else "the rules cannot tell on this machine"
    if not agrees:
        why += (f" — note: the rules predicted {_fmt(pred.fusions)} but TensorFlow made {_fmt(observed)}; "
                "the graph is what happened")
    return {
        "pattern": pred.pattern,
        "verdict": verdict,
        "full": {"op": pred.full[0], "fused_ops": list(pred.full[1])} if pred.full else None,
        "observed": [{"op": op, "fused_ops": list(ops)} for op, ops in observed],
        "predicted": [{"op": op, "fused_ops": list(ops)} for op, ops in pred.fusions],
        "agrees": agrees,
        "certain": pred.certain,
        "why": why,
        "fixes": [ch.fix for ch in failing if ch.fix],
        "checks": [ch.to_dict() for ch in pred.checks],
        "notes": pred.notes,
    }


def _fmt(fusions) -> str:
    if not fusions:
        return "no fusion"
    return ", ".join(f"{op} [{', '.join(ops)}]" if ops else op for op, ops in fusions)


def _explain_decomposition(result: dict, pred: Prediction) -> dict:
    """The constant batch norm: success is the FusedBatchNorm being gone, not a fused node appearing."""
    optimized = Graph.from_dict(result["stages"]["optimized"])
    gone = not any(op.startswith("FusedBatchNorm") for op in optimized.ops)
    failing = [ch for ch in pred.checks if ch.ok is False]
    expected_gone = not failing
    return {
        "pattern": pred.pattern, "verdict": "decomposed" if gone else "not decomposed", "full": None,
        "observed": [], "predicted": [], "agrees": gone == expected_gone, "certain": pred.certain,
        "why": "the batch norm became Mul/Add primitives" if gone else ("; ".join(ch.detail for ch in failing)
                                                                        or "no rule the explorer knows explains it"),
        "fixes": [ch.fix for ch in failing if ch.fix], "checks": [ch.to_dict() for ch in pred.checks],
        "notes": pred.notes,
    }
