"""The remapper's preconditions, as checks on one model and configuration.

A ``Check`` is one condition of a pattern: whether it holds here, the finding in plain words, and
the ``Fix`` that would make it pass, both as words and as settings (a flag, a switch, the device,
a model parameter or a chain field), so the page can offer the change without reading the words.

The rules follow Grappler's remapper (TensorFlow 2.21) as checked on this kind of machine; see
../shared/reference/remapper-patterns.md for the catalogue they come from.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ..model.chain import ACTIVATION_LABELS, Chain
from ..model.results import CheckDict, SettingDict

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


@dataclass(frozen=True)
class Setting:
    """One setting a fix changes, as the page and the command line take it."""

    kind: str  # "env" (a flag), "grappler" (a switch), "device", "param" (a model parameter), "chain" (a chain field)
    name: str  # the flag, switch, parameter or field; "device" for a device
    value: object = None  # the value to set; None: back to TensorFlow's default (unset the flag or switch)

    def to_dict(self) -> SettingDict:
        return {"kind": self.kind, "name": self.name, "value": self.value}


@dataclass(frozen=True)
class Fix:
    """What would make a check pass: the words a person reads, and the same as settings.

    Each alternative is one way to make it pass (its settings applied together); a fix that is a
    change to how the model is written and has no setting here has none.
    """

    text: str
    alternatives: tuple[tuple[Setting, ...], ...] = ()

    def __bool__(self) -> bool:
        return bool(self.text)

    def changes(self) -> list[list[SettingDict]]:
        return [[s.to_dict() for s in alternative] for alternative in self.alternatives]


def fix(text: str, *alternatives) -> Fix:
    return Fix(text, tuple(tuple(a) for a in alternatives))


def env(name: str, value: str | None = None) -> Setting:
    return Setting("env", name, value)


def switch(name: str, value: str | None = None) -> Setting:
    return Setting("grappler", name, value)


def device(value: str) -> Setting:
    return Setting("device", "device", value)


def param(name: str, value) -> Setting:
    return Setting("param", name, value)


def chain(name: str, value) -> Setting:
    return Setting("chain", name, value)


NO_FIX = Fix("")
ONEDNN_ON = fix("set TF_ENABLE_ONEDNN_OPTS=1", [env("TF_ENABLE_ONEDNN_OPTS", "1")])
PERSISTENT_BN_ON = fix("set TF_USE_CUDNN_BATCHNORM_SPATIAL_PERSISTENT=1",
                       [env("TF_USE_CUDNN_BATCHNORM_SPATIAL_PERSISTENT", "1")])
USE_NHWC = fix("use NHWC", [param("data_format", "NHWC")])
USE_FLOAT32 = fix("use float32", [param("dtype", "float32")])


@dataclass
class Check:
    name: str  # what is checked, e.g. "data type"
    ok: bool | None  # None: the rules cannot tell here
    detail: str  # the finding in plain words
    fix: Fix = NO_FIX  # the change that would make it pass (NO_FIX when it holds)

    def to_dict(self) -> CheckDict:
        return {"name": self.name, "ok": self.ok, "detail": self.detail, "fix": self.fix.text,
                "changes": self.fix.changes()}


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


def onednn_dtype_ok(ctx: Context, dtype: str) -> tuple[bool, str]:
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


def stock_dtypes(contraction: str) -> tuple[str, ...]:
    """The dtypes the stock CPU (no oneDNN) fuses a contraction in ("none": no contraction, no limit of this kind)."""
    if contraction == "none":
        return ("float32", "float64", "float16", "bfloat16")
    return ("float32",) if contraction == "MatMul" else ("float32", "float64")


def common_checks(ctx: Context) -> list[Check]:
    checks = []
    remap = ctx.switches.get("remapping", "on") != "off" and ctx.switches.get("disable_meta_optimizer") != "on"
    checks.append(Check("remapper enabled", remap,
                        "the remapping pass runs" if remap else "the remapping pass (or all of Grappler) is switched off",
                        NO_FIX if remap else fix("switch the 'remapping' Grappler switch on", [switch("remapping"), switch("disable_meta_optimizer")])))
    xla = ctx.env.get("TF_XLA_FLAGS", "")
    if ctx.on_cpu:
        jit_ok = "--tf_xla_cpu_global_jit" not in xla
        checks.append(Check("XLA CPU global JIT off", jit_ok,
                            "XLA does not take over CPU fusion" if jit_ok else
                            "TF_XLA_FLAGS has --tf_xla_cpu_global_jit, which disables the remapper's CPU fusions",
                            NO_FIX if jit_ok else fix("unset TF_XLA_FLAGS", [env("TF_XLA_FLAGS")])))
    elif "--tf_xla_auto_jit" in xla:
        checks.append(Check("XLA auto-clustering off", False,
                            "with XLA auto-clustering on, the remapper leaves GPU fusions to XLA", fix("unset TF_XLA_FLAGS", [env("TF_XLA_FLAGS")])))
    if ctx.onednn and ctx.on_cpu and "dtype" in ctx.p:
        ok, why = onednn_dtype_ok(ctx, ctx.p["dtype"])
        if ctx.p["dtype"] in ("float16", "bfloat16"):
            stock = ctx.chain.kind != "chain" or ctx.p["dtype"] in stock_dtypes(ctx.chain.contraction)
            checks.append(Check("oneDNN supports the dtype on this CPU", ok,
                                f"{ctx.p['dtype']} is supported by oneDNN here" if ok else why,
                                NO_FIX if ok else fix("use float32, or TF_ENABLE_ONEDNN_OPTS=0", [param("dtype", "float32")], [env("TF_ENABLE_ONEDNN_OPTS", "0")])
                                if stock else USE_FLOAT32))
    return checks


def consumer_checks(ctx: Context, upto: str) -> list[Check]:
    """Intermediates of the chain must have one consumer and must not be returned."""
    checks = []
    if ctx.p.get("second_consumer") and ctx.chain.contraction != "none":
        checks.append(Check("contraction output has one consumer", False,
                            f"the {ctx.chain.contraction} output also feeds another op, so it has two consumers and "
                            "must stay a separate tensor", fix("remove the second consumer", [param("second_consumer", False)])))
    ret = ctx.p.get("return_intermediate", "none")
    order = ["contraction", "bias", "norm"]
    if ret != "none" and order.index(ret) < order.index(upto):  # an intermediate before ``upto``
        name = {"contraction": ctx.chain.contraction, "bias": ctx.chain.bias, "norm": ctx.chain.norm}[ret]
        checks.append(Check(f"{name} output not returned", False,
                            f"the {name} output is also returned from the function, so it has two consumers",
                            fix("do not return the intermediate", [param("return_intermediate", "none")])))
    return checks


def act_into_contraction(ctx: Context) -> tuple[bool | None, list[Check], str]:
    """Can the chain's activation join the contraction+bias fusion? (ok, checks, fused_ops label)"""
    c, p, act = ctx.chain, ctx.p, ctx.chain.activation
    checks: list[Check] = []
    label = "_MklSwish" if act == "Swish" else ONEDNN_ACTS.get(act, (act,))[0]
    if act in ONEDNN_ACTS:
        _, contractions = ONEDNN_ACTS[act]
        ok: bool | None = ctx.on_cpu and ctx.onednn and c.contraction in contractions
        checks.append(Check(f"{ACTIVATION_LABELS[act]} joins the contraction", ok,
                            f"oneDNN folds it into {' or '.join(contractions)}+BiasAdd" if ok else
                            f"it joins a fused {' or '.join(contractions)} only with oneDNN on CPU",
                            NO_FIX if ok else (ONEDNN_ON if not ctx.onednn else fix(f"use {contractions[0]}", [chain("contraction", contractions[0])]))))
    elif act in GELU:
        if ctx.on_cpu:
            checks.append(Check("oneDNN on", ctx.onednn, "the CPU fuses GELU into MatMul+BiasAdd only with oneDNN",
                                NO_FIX if ctx.onednn else ONEDNN_ON))
            checks.append(Check("contraction is MatMul", c.contraction == "MatMul",
                                "MatMul+BiasAdd+GELU is a pattern; a convolution followed by GELU is not",
                                NO_FIX if c.contraction == "MatMul" else fix("use MatMul", [chain("contraction", "MatMul")])))
            if c.bias == "Add":
                checks.append(Check("bias written as BiasAdd", False,
                                    "oneDNN turns the bias-like Add into a fused BiasAdd, but the GELU pattern needs "
                                    "a real BiasAdd node, so only MatMul+bias fuse", fix("use tf.nn.bias_add", [chain("bias", "BiasAdd")])))
        elif act == "GeluApproximate":
            lt = ctx.env.get("TF_USE_CUBLASLT") == "1"
            checks.append(Check("TF_USE_CUBLASLT=1", lt, "GPU fuses the approximate GELU through cuBLASLt",
                                NO_FIX if lt else fix("set TF_USE_CUBLASLT=1", [env("TF_USE_CUBLASLT", "1")])))
        else:
            rf = ctx.env.get("TF_CUDNN_USE_RUNTIME_FUSION") == "1" and p["dtype"] == "float16"
            checks.append(Check("cuDNN runtime fusion", rf, "GPU fuses the exact GELU only with "
                                "TF_CUDNN_USE_RUNTIME_FUSION=1, float16, compute capability 8.0+",
                                NO_FIX if rf else fix("set TF_CUDNN_USE_RUNTIME_FUSION=1 and use float16", [env("TF_CUDNN_USE_RUNTIME_FUSION", "1"), param("dtype", "float16")])))
    elif act == "Swish":
        ok = ctx.on_cpu and ctx.onednn and c.contraction == "Conv2D"
        checks.append(Check("Swish joins the contraction", ok,
                            "oneDNN folds Swish into Conv2D+BiasAdd" if ok else
                            "Swish joins a fused contraction only for Conv2D with oneDNN on CPU",
                            NO_FIX if ok else (fix("use Conv2D", [chain("contraction", "Conv2D")]) if ctx.onednn else ONEDNN_ON)))
    elif act in ("Tanh", "Sigmoid"):
        ok = c.contraction == "MatMul" and (ctx.onednn if ctx.on_cpu else None)
        checks.append(Check(f"MatMul + {act}" + (" with oneDNN" if ctx.on_cpu else ""), ok,
                            f"{act} fuses only into MatMul, and on CPU only with oneDNN" if ctx.on_cpu else
                            f"{act} fuses into MatMul on GPU only with cuDNN runtime fusion (float16)",
                            NO_FIX if ok else (ONEDNN_ON if c.contraction == "MatMul" else fix("use MatMul or Relu", [chain("contraction", "MatMul")], [chain("activation", "Relu")]))))
    else:
        if c.contraction == "DepthwiseConv2dNative" and act == "LeakyRelu":
            checks.append(Check("activation", False, "DepthwiseConv2dNative fuses Relu, Relu6 and Elu, not LeakyRelu",
                                fix("use Relu, Relu6 or Elu", [chain("activation", "Relu")], [chain("activation", "Relu6")], [chain("activation", "Elu")])))
        if not ctx.on_cpu and c.contraction == "MatMul" and act != "Relu":
            checks.append(Check("activation", False, f"on GPU MatMul fuses Relu (cuBLASLt), not {act}", fix("use Relu", [chain("activation", "Relu")])))
        if not ctx.on_cpu and c.contraction == "Conv2D":
            spatial = p.get("filter_size", 1) != 1
            checks.append(Check("filter larger than 1×1", spatial, "cuDNN's fused kernel needs a spatial filter",
                                NO_FIX if spatial else fix("use a 3×3 filter", [param("filter_size", 3)])))
            if act != "Relu":
                rf = ctx.env.get("TF_CUDNN_USE_RUNTIME_FUSION") == "1" and p["dtype"] == "float16"
                checks.append(Check("cuDNN runtime fusion", rf, f"{act} needs TF_CUDNN_USE_RUNTIME_FUSION=1, float16 "
                                    "and NHWC on GPU", NO_FIX if rf else fix("set TF_CUDNN_USE_RUNTIME_FUSION=1, use float16", [env("TF_CUDNN_USE_RUNTIME_FUSION", "1"), param("dtype", "float16")])))
    ok = None if any(ch.ok is None for ch in checks) else all(ch.ok for ch in checks)
    return ok, checks, label


def core_checks(ctx: Context) -> list[Check]:
    """Conditions for Contraction+BiasAdd (rows 1-3 of the catalogue)."""
    c, p, dtype = ctx.chain, ctx.p, ctx.p["dtype"]
    checks: list[Check] = []
    if ctx.on_cpu:
        if ctx.onednn:
            ok = dtype in ("float32", "bfloat16", "float16") and onednn_dtype_ok(ctx, dtype)[0]
            checks.append(Check("data type", ok, f"{dtype} {'is' if ok else 'is not'} fused by oneDNN on this CPU",
                                NO_FIX if ok else USE_FLOAT32))
        else:
            allowed = stock_dtypes(c.contraction)
            ok = dtype in allowed
            # oneDNN is a way round only where it runs the dtype on this CPU (bfloat16 and float16 need AVX-512 kinds)
            onednn = dtype in ("bfloat16", "float16") and onednn_dtype_ok(ctx, dtype)[0]
            checks.append(Check("data type", ok, f"the stock CPU fuses {c.contraction} in {' or '.join(allowed)}; "
                                f"this model is {dtype}", NO_FIX if ok else fix("use float32, or set TF_ENABLE_ONEDNN_OPTS=1", [param("dtype", "float32")], [env("TF_ENABLE_ONEDNN_OPTS", "1")])
                                if onednn else USE_FLOAT32))
        if c.contraction in ("DepthwiseConv2dNative", "Conv3D"):
            checks.append(Check("oneDNN on", ctx.onednn, f"{c.contraction}+BiasAdd fuses only with oneDNN",
                                NO_FIX if ctx.onednn else ONEDNN_ON))
        if c.bias == "Add":
            ok = ctx.onednn and (c.contraction == "MatMul" or p.get("data_format") == "NHWC")
            checks.append(Check("bias written as BiasAdd", ok,
                                "oneDNN treats an Add of a per-channel bias as a bias" if ok else
                                "a plain Add is recognised as a bias only by oneDNN (channels-last)",
                                NO_FIX if ok else fix("use tf.nn.bias_add, or TF_ENABLE_ONEDNN_OPTS=1 with NHWC", [chain("bias", "BiasAdd")], [env("TF_ENABLE_ONEDNN_OPTS", "1"), param("data_format", "NHWC")])))
        if c.squeeze and p.get("data_format") == "NCHW":
            checks.append(Check("data format", False, "Conv2D+Squeeze+BiasAdd fuses only in NHWC", USE_NHWC))
    else:
        if c.contraction == "MatMul":
            lt = ctx.env.get("TF_USE_CUBLASLT") == "1"
            checks.append(Check("TF_USE_CUBLASLT=1", lt, "on GPU, MatMul+BiasAdd fuses only through cuBLASLt",
                                NO_FIX if lt else fix("set TF_USE_CUBLASLT=1", [env("TF_USE_CUBLASLT", "1")])))
            ok = dtype in ("float32", "float16")
            checks.append(Check("data type", ok, f"cuBLASLt fusion takes float32 or float16; this is {dtype}",
                                NO_FIX if ok else fix("use float32 or float16", [param("dtype", "float32")], [param("dtype", "float16")])))
        elif c.activation == "none" or c.squeeze:
            checks.append(Check("activation present", False, "on GPU a convolution fuses with its bias only "
                                "together with an activation (and never with a Squeeze)", fix("add a Relu", [chain("activation", "Relu")])))
    return checks


def gpu_batchnorm_checks(ctx: Context) -> list[Check]:
    """FindFusedBatchNormEx on a GPU: float32/float16; training adds cuDNN's persistent-BN limits."""
    p = ctx.p
    dtype = p.get("dtype", "float32")
    checks = [Check("data type", dtype in ("float32", "float16"),
                    f"a GPU fuses FusedBatchNorm in float32 or float16; this is {dtype}",
                    NO_FIX if dtype in ("float32", "float16") else fix("use float32 or float16", [param("dtype", "float32")], [param("dtype", "float16")]))]
    if not p.get("training"):
        return checks
    flag = ctx.env.get("TF_USE_CUDNN_BATCHNORM_SPATIAL_PERSISTENT") == "1"
    channels = int(p.get("channels", 0))
    nhwc = p.get("data_format", "NHWC") == "NHWC"
    return checks + [
        Check("training: float16", dtype == "float16", "cuDNN fuses a training batch norm in float16 only",
              NO_FIX if dtype == "float16" else fix("use float16", [param("dtype", "float16")])),
        Check("training: NHWC", nhwc, "cuDNN's fused training batch norm needs NHWC", NO_FIX if nhwc else USE_NHWC),
        Check("training: channels a multiple of 4", channels % 4 == 0, f"{channels} channels",
              NO_FIX if channels % 4 == 0 else fix("use a multiple of 4", [param("channels", -(-channels // 4) * 4)])),
        Check("TF_USE_CUDNN_BATCHNORM_SPATIAL_PERSISTENT=1", flag,
              "training mode needs cuDNN's persistent batch norm", NO_FIX if flag else fix("set it to 1", [env("TF_USE_CUDNN_BATCHNORM_SPATIAL_PERSISTENT", "1")])),
    ]
