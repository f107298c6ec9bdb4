"""The catalogue of ready models: one preset per fusion pattern, as plain data.

Each preset fixes an op chain and picks defaults that show a visible effect on a 2-core CPU
(memory-bound shapes: the fusion removes element-wise passes over the output).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .spec import Chain


@dataclass(frozen=True)
class Preset:
    id: str
    title: str
    chain: Chain
    fused_op: str  # what the remapper makes of it where it fuses
    explanation: str  # a few sentences for a learner
    where: str  # where it fuses (device, flags) as the remapper's rules say
    defaults: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        return {
            "id": self.id, "title": self.title, "pattern": self.chain.describe(),
            "chain": self.chain.to_dict(), "fused_op": self.fused_op,
            "explanation": self.explanation, "where": self.where,
            "params": {name: self.defaults.get(name) for name in self.chain.param_names() if name in self.defaults},
        }


PRESETS: dict[str, Preset] = {
    p.id: p
    for p in (
        Preset(
            "matmul_bias_gelu_approx",
            "MatMul + BiasAdd + GELU (approximate)",
            Chain("MatMul", bias="BiasAdd", activation="GeluApproximate"),
            "_FusedMatMul [BiasAdd, GeluApproximate]",
            "A Transformer feed-forward layer. tf.nn.gelu(approximate=True) is not one op but about "
            "nine: Pow (which the CPU's arithmetic optimiser turns into Square and Mul), Mul, AddV2, "
            "Tanh ... each a full pass over the output. The remapper recognises the whole sub-graph in "
            "its second pass and folds it, with the MatMul and the BiasAdd, into one _FusedMatMul.",
            "CPU with oneDNN (on by default on recent x86); GPU with TF_USE_CUBLASLT=1. Without them "
            "only MatMul+BiasAdd fuse.",
            {"m": 16384, "k": 64, "n": 256},
        ),
        Preset(
            "matmul_bias_gelu_exact",
            "MatMul + BiasAdd + GELU (exact)",
            Chain("MatMul", bias="BiasAdd", activation="GeluExact"),
            "_FusedMatMul [BiasAdd, GeluExact]",
            "The exact GELU, 0.5·x·(1 + erf(x/√2)). Constant folding first turns x/√2 into x·0.7071, "
            "which is the spelling the remapper's pattern looks for; then MatMul, BiasAdd and the five "
            "GELU ops become one _FusedMatMul.",
            "CPU with oneDNN; GPU only with cuDNN runtime fusion (float16, compute capability 8.0+). "
            "Elsewhere only MatMul+BiasAdd fuse.",
            {"m": 16384, "k": 64, "n": 256},
        ),
        Preset(
            "matmul_bias_relu",
            "MatMul + BiasAdd + ReLU",
            Chain("MatMul", bias="BiasAdd", activation="Relu"),
            "_FusedMatMul [BiasAdd, Relu]",
            "The classic dense layer with ReLU: the bias add and the ReLU are applied while the "
            "MatMul's output is still in cache, instead of two more passes over memory.",
            "CPU always (Eigen and oneDNN); GPU with TF_USE_CUBLASLT=1.",
            {"m": 16384, "k": 64, "n": 256},
        ),
        Preset(
            "conv2d_bias_relu",
            "Conv2D + BiasAdd + ReLU",
            Chain("Conv2D", bias="BiasAdd", activation="Relu"),
            "_FusedConv2D [BiasAdd, Relu]",
            "The convolution block of most CNNs. The forward pass needs only the block's input and "
            "output, so the bias and the ReLU can run inside the convolution kernel's epilogue.",
            "CPU always (NHWC; NCHW with oneDNN); GPU for 3×3-and-larger filters in float32/float16.",
            {"batch": 8, "height": 64, "width": 64, "in_channels": 16, "out_channels": 16, "filter_size": 1},
        ),
        Preset(
            "conv2d_batchnorm_relu",
            "Conv2D + FusedBatchNorm + ReLU (inference)",
            Chain("Conv2D", bias="none", norm="FusedBatchNorm", activation="Relu"),
            "_FusedConv2D [FusedBatchNorm, Relu]",
            "In inference the batch norm is a per-channel scale and shift with known statistics, so "
            "it can be folded into the convolution's epilogue along with the ReLU. In training the "
            "batch statistics must be computed first, so it does not fuse.",
            "CPU only, inference only (is_training=False).",
            {"batch": 8, "height": 64, "width": 64, "in_channels": 16, "out_channels": 16, "filter_size": 1},
        ),
        Preset(
            "conv2d_squeeze_bias",
            "Conv2D + Squeeze + BiasAdd",
            Chain("Conv2D", squeeze=True, bias="BiasAdd"),
            "_FusedConv2D [BiasAdd] + Squeeze",
            "A 1-D convolution written as a Conv2D over a width-1 image, squeezed back to 3-D before "
            "the bias. The remapper moves the BiasAdd into the convolution and squeezes afterwards.",
            "CPU only.",
            {"batch": 8, "height": 4096, "width": 1, "in_channels": 32, "out_channels": 32, "filter_size": 1},
        ),
        Preset(
            "batchnorm_add_relu",
            "FusedBatchNorm + Add + ReLU",
            Chain("none", bias="none", norm="FusedBatchNorm", side_add=True, activation="Relu"),
            "_FusedBatchNormEx (side input, Relu)",
            "The tail of a ResNet block: batch norm, add the shortcut, ReLU. cuDNN can do all three in "
            "one kernel; the remapper fuses it only for GPUs (the oneDNN CPU path explicitly refuses "
            "a side input), so on a CPU you will see it stay unfused.",
            "GPU only (float16/float32, inference; training needs NHWC, float16 and "
            "TF_USE_CUDNN_BATCHNORM_SPATIAL_PERSISTENT=1).",
            {"batch": 8, "height": 64, "width": 64, "channels": 32},
        ),
    )
}
