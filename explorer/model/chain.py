"""Op chains: contraction -> [squeeze] -> bias -> normalisation -> [side add] -> activation.

A ``Chain`` is the structure of one small model, plain data checked before TensorFlow runs; the
non-chain ``kind``s are models with a builder of their own (one remapper pattern each). The
parameters a chain takes (sizes, dtype, layout) are ``spec.PARAMS``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import SpecError
from . import json_text
from .schemas import FLAG, choice, record

CONTRACTIONS = ("MatMul", "BatchMatMulV2", "Conv2D", "DepthwiseConv2dNative", "Conv3D", "none")
BIASES = ("none", "BiasAdd", "Add")
NORMS = ("none", "FusedBatchNorm")
ACTIVATIONS = (
    "none", "Relu", "Relu6", "Elu", "LeakyRelu", "Tanh", "Sigmoid",
    "GeluApproximate", "GeluExact", "Swish", "HardSwish", "Mish", "LeakyReluMax",
)
# Models that are not a contraction chain: one builder each, for the remapper patterns that match
# other op shapes (see catalog.py).
KINDS = ("chain", "hash_bucket", "batchnorm_fold", "batch_matmul_scale_add", "layer_norm", "instance_norm",
         "batchnorm_grad")
SCHEMA = record({"kind": choice(KINDS), "contraction": choice(CONTRACTIONS), "bias": choice(BIASES),
                  "norm": choice(NORMS), "activation": choice(ACTIVATIONS), "squeeze": FLAG, "side_add": FLAG,
                  "pad": FLAG}, message="unknown field(s) {extra}",
                 type_message="expected an object with contraction, bias, norm, activation")

@dataclass(frozen=True)
class Chain:
    contraction: str = "MatMul"
    squeeze: bool = False
    bias: str = "BiasAdd"
    norm: str = "none"
    side_add: bool = False
    activation: str = "none"
    pad: bool = False  # an explicit Pad before a Conv3D (the Pad+Conv3D pattern)
    kind: str = "chain"

    def __post_init__(self):
        if self.kind != "chain":  # the special models use only kind (and activation)
            for name, value in (("contraction", "none"), ("bias", "none"), ("norm", "none"), ("squeeze", False),
                                ("side_add", False), ("pad", False)):
                object.__setattr__(self, name, value)

    @staticmethod
    def from_dict(data) -> "Chain":
        json_text.validate(data, SCHEMA, "chain", in_order=True)
        chain = Chain(**data)
        chain.check()
        return chain

    def to_dict(self) -> dict:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}

    @property
    def is_4d(self) -> bool:
        return self.contraction in ("Conv2D", "DepthwiseConv2dNative", "none")

    def check(self) -> None:
        """Combinations the builder cannot make, explained before anything runs."""
        if self.kind != "chain":
            if self.kind == "instance_norm" and self.activation not in ("none", "Relu", "LeakyRelu"):
                raise SpecError("chain.activation", "instance norm fuses with Relu or LeakyRelu only; choose one or none")
            return
        if self.contraction == "none" and self.norm == "none" and self.activation == "none":
            raise SpecError("chain.contraction", "a chain needs a contraction, a FusedBatchNorm or an activation")
        if self.pad and self.contraction != "Conv3D":
            raise SpecError("chain.pad", "the explicit Pad is the Pad+Conv3D pattern; it needs Conv3D")
        if self.contraction == "Conv3D" and self.norm != "none":
            raise SpecError("chain.norm", "FusedBatchNorm after Conv3D is not supported here; choose no normalisation")
        if self.contraction == "none" and self.bias != "none":
            raise SpecError("chain.bias", "a bias follows a contraction; choose a contraction or no bias")
        if self.squeeze and self.contraction != "Conv2D":
            raise SpecError("chain.squeeze", "Squeeze between contraction and bias is the Conv2D+Squeeze+BiasAdd pattern; it needs Conv2D")
        if self.squeeze and self.norm != "none":
            raise SpecError("chain.norm", "after a Squeeze the tensor is 3-D; FusedBatchNorm needs 4-D")
        if self.norm != "none" and not self.is_4d:
            raise SpecError("chain.norm", f"FusedBatchNorm needs a 4-D tensor; {self.contraction} makes a 2-D or 3-D one")

    def param_names(self) -> list[str]:
        if self.kind != "chain":
            return list(KIND_PARAMS[self.kind])
        if self.contraction == "MatMul":
            names = ["m", "k", "n"]
        elif self.contraction == "BatchMatMulV2":
            names = ["batch", "m", "k", "n"]
        elif self.contraction == "Conv2D":
            names = ["batch", "height", "width", "in_channels", "out_channels", "filter_size", "data_format"]
        elif self.contraction == "DepthwiseConv2dNative":
            names = ["batch", "height", "width", "in_channels", "multiplier", "filter_size", "data_format"]
        elif self.contraction == "Conv3D":
            names = ["batch", "depth", "height", "width", "in_channels", "out_channels", "filter_size", "data_format"]
        else:
            names = ["batch", "height", "width", "channels", "data_format"]
        names.append("dtype")
        if self.norm != "none":
            names.append("training")
        names += ["return_intermediate", "second_consumer"]
        return names

    def describe(self) -> str:
        if self.kind != "chain":
            text = KIND_LABELS[self.kind]
            return text + (f" + {ACTIVATION_LABELS[self.activation]}" if self.activation != "none" else "")
        parts = []
        if self.pad:
            parts.append("Pad")
        if self.contraction != "none":
            parts.append(self.contraction)
        if self.squeeze:
            parts.append("Squeeze")
        if self.bias != "none":
            parts.append(self.bias)
        if self.norm != "none":
            parts.append(self.norm)
        if self.side_add:
            parts.append("Add")
        if self.activation != "none":
            parts.append(ACTIVATION_LABELS[self.activation])
        return " + ".join(parts)


ACTIVATION_LABELS = {
    "none": "none", "Relu": "Relu", "Relu6": "Relu6", "Elu": "Elu", "LeakyRelu": "LeakyRelu",
    "Tanh": "Tanh", "Sigmoid": "Sigmoid", "GeluApproximate": "GELU (approximate)",
    "GeluExact": "GELU (exact)", "Swish": "Swish", "HardSwish": "HardSwish", "Mish": "Mish",
    "LeakyReluMax": "LeakyRelu as Maximum(x*0.2, x)",
}

KIND_PARAMS = {
    "hash_bucket": ("m", "n", "buckets"),
    "batchnorm_fold": ("batch", "height", "width", "channels", "data_format", "dtype"),
    "batch_matmul_scale_add": ("batch", "channels", "m", "k", "n", "dtype"),
    "layer_norm": ("m", "n", "dtype"),
    "instance_norm": ("batch", "height", "width", "channels", "dtype"),
    "batchnorm_grad": ("batch", "height", "width", "channels", "dtype"),
}
KIND_LABELS = {
    "hash_bucket": "AsString + StringToHashBucketFast",
    "batchnorm_fold": "FusedBatchNorm (inference, constant statistics)",
    "batch_matmul_scale_add": "BatchMatMulV2 + Mul + AddV2",
    "layer_norm": "Mean + SquaredDifference + Mean + Rsqrt + Mul + AddV2 (layer norm)",
    "instance_norm": "Mean + SquaredDifference + Mean + Rsqrt + Mul + AddV2 (instance norm)",
    "batchnorm_grad": "FusedBatchNorm + Relu, and their gradients (training)",
}
