"""The catalogue of ready models: one preset per fusion pattern, as plain data.

Each preset fixes an op chain and picks defaults that show a visible effect on a 2-core CPU
(memory-bound shapes: the fusion removes element-wise passes over the output).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .chain import Chain


@dataclass(frozen=True)
class Preset:
    id: str
    title: str
    chain: Chain
    fused_op: str  # what the remapper makes of it where it fuses
    explanation: str  # a few sentences for a learner
    where: str  # where it fuses (device, flags) as the remapper's rules say
    defaults: dict = field(default_factory=dict)
    rows: tuple[int, ...] = ()  # rows of the remapper catalogue (../shared/reference) it exercises

    def title_for(self, params: dict) -> str:
        """The title as it holds for these parameters: a batch norm preset titled for inference says training
        when its ``training`` parameter is on (the title is the page's verdict line)."""
        if params.get("training") and "(inference)" in self.title:
            return self.title.replace("(inference)", "(training mode)")
        return self.title

    def to_dict(self) -> dict:
        return {
            "id": self.id, "title": self.title, "pattern": self.chain.describe(),
            "chain": self.chain.to_dict(), "fused_op": self.fused_op,
            "explanation": self.explanation, "where": self.where, "rows": list(self.rows),
            "params": {name: self.defaults.get(name) for name in self.chain.param_names() if name in self.defaults},
        }


# Default sizes, memory-bound so that fusion shows on a 2-core CPU: the fused kernels save whole
# passes over the output (measured: 16384x64x256 GELU ~2x faster fused; 64x1024x1024 no faster).
MATMUL = {"m": 16384, "k": 64, "n": 256}
CONV = {"batch": 8, "height": 64, "width": 64, "in_channels": 16, "out_channels": 16, "filter_size": 1}
DEPTHWISE = {"batch": 8, "height": 64, "width": 64, "in_channels": 32}
CONV3D = {"batch": 2, "depth": 16, "height": 32, "width": 32, "in_channels": 8, "out_channels": 8, "filter_size": 1}
TENSOR4D = {"batch": 8, "height": 64, "width": 64, "channels": 32}


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
            "CPU with oneDNN (on by default on x86 with AVX-512 VNNI/BF16 or AMX): all of it; CPU without oneDNN: "
            "only MatMul+BiasAdd. GPU: all of it with TF_USE_CUBLASLT=1; without it nothing fuses.",
            MATMUL,
            rows=(16,),
        ),
        Preset(
            "matmul_bias_gelu_exact",
            "MatMul + BiasAdd + GELU (exact)",
            Chain("MatMul", bias="BiasAdd", activation="GeluExact"),
            "_FusedMatMul [BiasAdd, GeluExact]",
            "The exact GELU, 0.5·x·(1 + erf(x/√2)). Constant folding first turns x/√2 into x·0.7071, "
            "which is the spelling the remapper's pattern looks for; then MatMul, BiasAdd and the five "
            "GELU ops become one _FusedMatMul.",
            "CPU with oneDNN: all of it; CPU without oneDNN: only MatMul+BiasAdd. GPU: all of it with cuDNN "
            "runtime fusion (TF_CUDNN_USE_RUNTIME_FUSION=1, float16, compute capability 8.0+); else only "
            "MatMul+BiasAdd with TF_USE_CUBLASLT=1 (cuBLASLt has no erf form), and nothing without it.",
            MATMUL,
            rows=(15,),
        ),
        Preset(
            "matmul_bias_relu",
            "MatMul + BiasAdd + ReLU",
            Chain("MatMul", bias="BiasAdd", activation="Relu"),
            "_FusedMatMul [BiasAdd, Relu]",
            "The classic dense layer with ReLU: the bias add and the ReLU are applied while the "
            "MatMul's output is still in cache, instead of two more passes over memory.",
            "CPU always (Eigen and oneDNN); GPU with TF_USE_CUBLASLT=1.",
            MATMUL,
            rows=(6,),
        ),
        Preset(
            "conv2d_bias_relu",
            "Conv2D + BiasAdd + ReLU",
            Chain("Conv2D", bias="BiasAdd", activation="Relu"),
            "_FusedConv2D [BiasAdd, Relu]",
            "The convolution block of most CNNs. The forward pass needs only the block's input and "
            "output, so the bias and the ReLU can run inside the convolution kernel's epilogue.",
            "CPU always (NHWC; NCHW with oneDNN); GPU for 3×3-and-larger filters in float32/float16.",
            CONV,
            rows=(5,),
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
            CONV,
            rows=(11,),
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
            rows=(9,),
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
            TENSOR4D,
            rows=(13,),
        ),
        Preset(
            "conv2d_bias", "Conv2D + BiasAdd", Chain("Conv2D", bias="BiasAdd"), "_FusedConv2D [BiasAdd]",
            "The smallest fusion: the bias is added in the convolution's epilogue instead of in a second pass "
            "over the output. On a GPU the remapper leaves it alone unless an activation follows.",
            "CPU (Eigen and oneDNN); never on GPU without an activation.", CONV, rows=(1,),
        ),
        Preset(
            "matmul_bias", "MatMul + BiasAdd", Chain("MatMul", bias="BiasAdd"), "_FusedMatMul [BiasAdd]",
            "A dense layer without activation. Written as x @ w + b (an Add instead of BiasAdd) it fuses only "
            "with oneDNN, which reads a per-column Add as a bias.",
            "CPU always; GPU with TF_USE_CUBLASLT=1.", MATMUL, rows=(2,),
        ),
        Preset(
            "matmul_bias_tanh", "MatMul + BiasAdd + Tanh", Chain("MatMul", bias="BiasAdd", activation="Tanh"),
            "_FusedMatMul [BiasAdd, Tanh]",
            "Tanh and Sigmoid are not in the stock CPU kernel's list of fusable activations; oneDNN's kernel has "
            "them, so the same graph fuses fully with oneDNN and only as MatMul+BiasAdd without it.",
            "CPU with oneDNN; GPU with cuDNN runtime fusion (float16).", MATMUL, rows=(6,),
        ),
        Preset(
            "depthwise_bias", "DepthwiseConv2dNative + BiasAdd",
            Chain("DepthwiseConv2dNative", bias="BiasAdd"), "_FusedDepthwiseConv2dNative [BiasAdd]",
            "The depthwise convolution of MobileNets followed by its bias. Only oneDNN has a fused depthwise kernel.",
            "CPU with oneDNN only.", DEPTHWISE, rows=(3,),
        ),
        Preset(
            "depthwise_bias_relu6", "DepthwiseConv2dNative + BiasAdd + Relu6",
            Chain("DepthwiseConv2dNative", bias="BiasAdd", activation="Relu6"),
            "_FusedDepthwiseConv2dNative [BiasAdd, Relu6]",
            "MobileNet's block: depthwise convolution, bias, Relu6. oneDNN fuses Relu, Relu6 and Elu here "
            "(not LeakyRelu).",
            "CPU with oneDNN only.", DEPTHWISE, rows=(7,),
        ),
        Preset(
            "conv3d_bias", "Conv3D + BiasAdd", Chain("Conv3D", bias="BiasAdd"), "_FusedConv3D [BiasAdd]",
            "A volumetric (video, medical-imaging) convolution and its bias, added in the convolution's epilogue. "
            "Only oneDNN has the fused Conv3D kernel.",
            "CPU with oneDNN only.",
            CONV3D,
            rows=(4,),
        ),
        Preset(
            "conv3d_bias_relu", "Conv3D + BiasAdd + ReLU", Chain("Conv3D", bias="BiasAdd", activation="Relu"),
            "_FusedConv3D [BiasAdd, Relu]",
            "The Conv3D block with its activation: bias and ReLU applied while the output is still in cache. Like "
            "Conv3D+BiasAdd, a oneDNN-only fusion.",
            "CPU with oneDNN only.",
            CONV3D,
            rows=(8,),
        ),
        Preset(
            "pad_conv3d", "Pad + Conv3D", Chain("Conv3D", bias="none", pad=True), "_FusedConv3D (padding_list)",
            "An explicit tf.pad before a VALID Conv3D: oneDNN pads inside the convolution instead of writing a "
            "padded copy of the input first.",
            "CPU with oneDNN only.",
            dict(CONV3D, filter_size=3),
            rows=(21,),
        ),
        Preset(
            "conv2d_batchnorm", "Conv2D + FusedBatchNorm (inference)",
            Chain("Conv2D", bias="none", norm="FusedBatchNorm"), "_FusedConv2D [FusedBatchNorm]",
            "Batch norm with known statistics is a per-channel scale and shift, folded into the convolution's "
            "weights and epilogue (inference only).",
            "CPU only, inference only.", CONV, rows=(10,),
        ),
        Preset(
            "batchnorm_relu", "FusedBatchNorm + ReLU", Chain("none", bias="none", norm="FusedBatchNorm", activation="Relu"),
            "_FusedBatchNormEx (Relu)",
            "A batch norm followed by ReLU becomes one _FusedBatchNormEx with activation_mode=Relu; the Relu "
            "node turns into an Identity. oneDNN does it on CPU in training and inference; the stock CPU never.",
            "CPU with oneDNN; GPU (training needs float16, NHWC, TF_USE_CUDNN_BATCHNORM_SPATIAL_PERSISTENT=1).",
            TENSOR4D, rows=(12,),
        ),
        Preset(
            "batchnorm_grad_relu", "FusedBatchNorm + ReLU with gradients (training)",
            Chain(kind="batchnorm_grad"), "_FusedBatchNormEx + _FusedBatchNormGradEx",
            "A training step of BatchNorm+ReLU: the backward ReluGrad and FusedBatchNormGrad can fuse too, but "
            "only on a GPU with cuDNN's persistent batch norm (float16, NHWC, channels a multiple of 4).",
            "GPU only: TF_USE_CUDNN_BATCHNORM_SPATIAL_PERSISTENT=1, float16, NHWC.",
            {"batch": 8, "height": 32, "width": 32, "channels": 24}, rows=(14,),
        ),
        Preset(
            "hash_bucket", "AsString + StringToHashBucketFast", Chain(kind="hash_bucket"), "_TensorToHashBucketFast",
            "Hashing integer ids through their decimal strings: the fused op hashes the integers directly, "
            "without making the strings.",
            "Any device.", {"m": 4096, "n": 64, "buckets": 1000}, rows=(17,),
        ),
        Preset(
            "batchnorm_fold", "FusedBatchNorm with constant statistics", Chain(kind="batchnorm_fold"),
            "Mul + Add (decomposed)",
            "The one remapper rewrite that goes the other way: an inference batch norm whose scale and variance "
            "are constants is split into a multiply and an add, which constant folding then simplifies.",
            "Any device (inference, float32).", TENSOR4D, rows=(18,),
        ),
        Preset(
            "conv2d_bias_add", "Conv2D + BiasAdd + Add (residual)", Chain("Conv2D", bias="BiasAdd", side_add=True),
            "_FusedConv2D [BiasAdd, Add]",
            "A ResNet shortcut added right after the convolution's bias: oneDNN adds it in the same kernel.",
            "CPU with oneDNN only.", CONV, rows=(19,),
        ),
        Preset(
            "conv2d_bias_add_relu", "Conv2D + BiasAdd + Add + ReLU",
            Chain("Conv2D", bias="BiasAdd", side_add=True, activation="Relu"), "_FusedConv2D [BiasAdd, Add, Relu]",
            "The whole tail of a ResNet block — bias, shortcut, ReLU — in the convolution kernel.",
            "CPU with oneDNN only.", CONV, rows=(20,),
        ),
        Preset(
            "matmul_bias_add_relu", "MatMul + BiasAdd + Add + ReLU (TF defect)",
            Chain("MatMul", bias="BiasAdd", side_add=True, activation="Relu"), "(a node with no op)",
            "The MatMul form of the previous pattern shows a TensorFlow 2.21 defect with oneDNN: the remapper "
            "matches it but writes a node without an op, Grappler gives up, and the function runs with no "
            "Grappler optimisation at all. The explorer detects and reports it.",
            "Nowhere correctly: with oneDNN the whole function loses Grappler; without, only MatMul+BiasAdd fuse.",
            MATMUL, rows=(20,),
        ),
        Preset(
            "conv2d_bias_hardswish", "Conv2D + BiasAdd + HardSwish",
            Chain("Conv2D", bias="BiasAdd", activation="HardSwish"), "_FusedConv2D [BiasAdd, _FusedHardSwish]",
            "MobileNetV3's activation, y·relu6(y+3)/6, folded into the convolution by oneDNN. The pattern is "
            "spelling-sensitive: the arithmetic optimiser reorders Mul chains first.",
            "CPU with oneDNN only.", CONV, rows=(22,),
        ),
        Preset(
            "mish", "Softplus + Tanh + Mul (Mish)", Chain("none", bias="none", activation="Mish"), "_MklFusedMish",
            "Mish, x·tanh(softplus(x)) (YOLOv4's activation), written out as three ops, becomes one oneDNN kernel "
            "instead of three passes over the tensor.",
            "CPU with oneDNN only.", TENSOR4D, rows=(23,),
        ),
        Preset(
            "conv2d_bias_mish", "Conv2D + BiasAdd + Mish", Chain("Conv2D", bias="BiasAdd", activation="Mish"),
            "_FusedConv2D [BiasAdd, Mish]",
            "Two passes: the first makes _FusedConv2D [BiasAdd] and _MklFusedMish, the second folds the Mish "
            "into the convolution.",
            "CPU with oneDNN only.", CONV, rows=(23, 24),
        ),
        Preset(
            "conv2d_bias_leakyrelu_max", "Conv2D + BiasAdd + Maximum(y·0.2, y)",
            Chain("Conv2D", bias="BiasAdd", activation="LeakyReluMax"), "_FusedConv2D [BiasAdd, LeakyRelu]",
            "A LeakyRelu written by hand as a Maximum: oneDNN first recognises it as LeakyRelu, then a second "
            "pass folds it into the convolution.",
            "CPU with oneDNN only.", CONV, rows=(24, 27),
        ),
        Preset(
            "leakyrelu_max", "Mul + Maximum (LeakyRelu by hand)", Chain("none", bias="none", activation="LeakyReluMax"),
            "LeakyRelu",
            "tf.maximum(x·0.2, x) is a LeakyRelu; with oneDNN the remapper replaces the two ops by one LeakyRelu "
            "(an ordinary op, not a _Fused one).",
            "oneDNN hosts.", TENSOR4D, rows=(27,),
        ),
        Preset(
            "swish", "Sigmoid + Mul (Swish)", Chain("none", bias="none", activation="Swish"), "_MklSwish",
            "x·sigmoid(x) (tf.nn.silu, the SiLU of EfficientNets and LLM MLPs) as one oneDNN kernel instead of a "
            "Sigmoid pass and a Mul pass.",
            "CPU with oneDNN only.", TENSOR4D, rows=(28,),
        ),
        Preset(
            "conv2d_bias_swish", "Conv2D + BiasAdd + Swish", Chain("Conv2D", bias="BiasAdd", activation="Swish"),
            "_FusedConv2D [BiasAdd, _MklSwish]",
            "EfficientNet's block: convolution, bias and Swish (x·sigmoid(x)); with oneDNN the Swish joins the fused "
            "convolution instead of staying two element-wise ops.",
            "CPU with oneDNN only.", CONV, rows=(26,),
        ),
        Preset(
            "batch_matmul_scale_add", "BatchMatMulV2 + Mul + AddV2 (attention scores)",
            Chain(kind="batch_matmul_scale_add"), "_MklFusedBatchMatMulV2 [Mul, Add]",
            "Attention's Q·Kᵀ·scale + mask: the scaling and the mask add join the batched matmul in oneDNN.",
            "CPU with oneDNN only.", {"batch": 8, "channels": 8, "m": 128, "k": 64, "n": 128}, rows=(25,),
        ),
        Preset(
            "layer_norm", "Layer normalisation (moments + batch_normalization)", Chain(kind="layer_norm"),
            "_MklLayerNorm",
            "Layer norm written with tf.nn.moments over the last axis: about ten ops become one oneDNN kernel. "
            "The matcher is picky: axes=[1] works, axes=[-1] does not, and Keras 3's LayerNormalization does not "
            "match.",
            "CPU with oneDNN only.", {"m": 4096, "n": 256}, rows=(29,),
        ),
        Preset(
            "instance_norm_relu", "Instance normalisation + ReLU", Chain(kind="instance_norm", activation="Relu"),
            "_MklFusedInstanceNorm [Relu]",
            "Instance norm spelled out with reduce_mean over H and W, followed by ReLU, as one oneDNN kernel.",
            "CPU with oneDNN only (NHWC).", TENSOR4D, rows=(30,),
        ),
    )
}


# What each preset makes where it fuses as catalogued: (op, fused_ops) of the node to look for in
# the graph after Grappler; fused_ops None = any. "decomposed" presets expect the op to be gone.
EXPECT: dict[str, tuple[str, tuple[str, ...] | None]] = {
    "matmul_bias_gelu_approx": ("_FusedMatMul", ("BiasAdd", "GeluApproximate")),
    "matmul_bias_gelu_exact": ("_FusedMatMul", ("BiasAdd", "GeluExact")),
    "matmul_bias_relu": ("_FusedMatMul", ("BiasAdd", "Relu")),
    "conv2d_bias_relu": ("_FusedConv2D", ("BiasAdd", "Relu")),
    "conv2d_batchnorm_relu": ("_FusedConv2D", ("FusedBatchNorm", "Relu")),
    "conv2d_squeeze_bias": ("_FusedConv2D", ("BiasAdd",)),
    "batchnorm_add_relu": ("_FusedBatchNormEx", None),
    "conv2d_bias": ("_FusedConv2D", ("BiasAdd",)),
    "matmul_bias": ("_FusedMatMul", ("BiasAdd",)),
    "matmul_bias_tanh": ("_FusedMatMul", ("BiasAdd", "Tanh")),
    "depthwise_bias": ("_FusedDepthwiseConv2dNative", ("BiasAdd",)),
    "depthwise_bias_relu6": ("_FusedDepthwiseConv2dNative", ("BiasAdd", "Relu6")),
    "conv3d_bias": ("_FusedConv3D", ("BiasAdd",)),
    "conv3d_bias_relu": ("_FusedConv3D", ("BiasAdd", "Relu")),
    "pad_conv3d": ("_FusedConv3D", None),
    "conv2d_batchnorm": ("_FusedConv2D", ("FusedBatchNorm",)),
    "batchnorm_relu": ("_FusedBatchNormEx", None),
    "batchnorm_grad_relu": ("_FusedBatchNormGradEx", None),
    "hash_bucket": ("_TensorToHashBucketFast", None),
    "batchnorm_fold": ("-FusedBatchNormV3", None),
    "conv2d_bias_add": ("_FusedConv2D", ("BiasAdd", "Add")),
    "conv2d_bias_add_relu": ("_FusedConv2D", ("BiasAdd", "Add", "Relu")),
    "matmul_bias_add_relu": ("_FusedMatMul", ("BiasAdd", "Add", "Relu")),
    "conv2d_bias_hardswish": ("_FusedConv2D", ("BiasAdd", "_FusedHardSwish")),
    "mish": ("_MklFusedMish", None),
    "conv2d_bias_mish": ("_FusedConv2D", ("BiasAdd", "Mish")),
    "conv2d_bias_leakyrelu_max": ("_FusedConv2D", ("BiasAdd", "LeakyRelu")),
    "leakyrelu_max": ("LeakyRelu", None),
    "swish": ("_MklSwish", None),
    "conv2d_bias_swish": ("_FusedConv2D", ("BiasAdd", "_MklSwish")),
    "batch_matmul_scale_add": ("_MklFusedBatchMatMulV2", None),
    "layer_norm": ("_MklLayerNorm", None),
    "instance_norm_relu": ("_MklFusedInstanceNorm", None),
}


def fused_as_catalogued(preset_id: str, optimized_nodes: list[dict]) -> bool:
    """Does the graph after Grappler hold the node this preset is about?"""
    op, fused_ops = EXPECT[preset_id]
    if op.startswith("-"):
        return all(n["op"] != op[1:] for n in optimized_nodes)
    return any(n["op"] == op and (fused_ops is None or tuple(n.get("fused_ops", ())) == fused_ops)
               for n in optimized_nodes)
