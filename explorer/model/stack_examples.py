"""Ready layer stacks to start from, as the same plain data a user writes (see stack.py for the format).

Four blocks of real networks written the idiomatic Keras 3 way (one of which TensorFlow's remapper fails on with
oneDNN), and the seed tool's two examples
(kaixih/tf_op_graph: examples/layout_fp32.py and examples/arithmetic_pow.py).
"""

from __future__ import annotations

import copy


def _conv_bn(filters: int, kernel: int = 3, activation: str = "relu") -> list[dict]:
    layers: list[dict] = [{"type": "Conv2D", "filters": filters, "kernel_size": kernel, "use_bias": False},
              {"type": "BatchNormalization"}]
    if activation != "none":
        layers.append({"type": "Activation", "activation": activation})
    return layers


_EXAMPLES: dict[str, dict] = {
    "resnet_basic_block": {
        "name": "resnet_basic_block",
        "description": "ResNet basic block: conv-BN-relu, conv-BN, + identity skip, relu",
        "input": {"shape": [1, 16, 16, 16], "dtype": "float32"},
        "layers": [{"type": "Block", "name": "basic", "repeat": 1, "layers":
                    _conv_bn(16) + _conv_bn(16, activation="none")
                    + [{"type": "Add", "inputs": ["block_in", "prev"]},
                       {"type": "Activation", "activation": "relu"}]}],
    },
    "mobilenet_inverted_residual": {
        "name": "mobilenet_inverted_residual",
        "description": "MobileNetV2 inverted residual: 1x1 expand-BN-relu6, 3x3 depthwise-BN-relu6, "
                       "1x1 project-BN, + skip",
        "input": {"shape": [1, 16, 16, 16], "dtype": "float32"},
        "layers": [{"type": "Block", "name": "ir", "repeat": 1, "layers":
                    _conv_bn(64, kernel=1, activation="relu6")
                    + [{"type": "DepthwiseConv2D", "kernel_size": 3, "use_bias": False},
                       {"type": "BatchNormalization"}, {"type": "Activation", "activation": "relu6"}]
                    + _conv_bn(16, kernel=1, activation="none")
                    + [{"type": "Add", "inputs": ["block_in", "prev"]}]}],
    },
    "transformer_ffn": {
        "name": "transformer_ffn",
        "description": "Transformer feed-forward: Dense(4d, gelu) -> Dense(d), + residual, LayerNorm (post-LN)",
        "input": {"shape": [1, 16, 64], "dtype": "float32"},
        "layers": [{"type": "Dense", "units": 256, "activation": "gelu_approximate"},
                   {"type": "Dense", "units": 64},
                   {"type": "Add", "inputs": ["input", "prev"]},
                   {"type": "LayerNormalization", "epsilon": 1e-6}],
    },
    "preact_residual": {
        "name": "preact_residual",
        "description": "Pre-activation residual blocks (ResNetV2's, Xception's): relu, conv + bias, + skip. With "
                       "oneDNN, TF 2.21's remapper fails on them and drops every fusion (a TensorFlow defect)",
        "input": {"shape": [2, 12, 12, 8], "dtype": "float32"},
        # each sum is read by the next block's relu and by its skip: the remapper fuses conv + bias + add + relu
        # and deletes the sum the skip still reads
        "layers": [{"type": "Conv2D", "filters": 8, "kernel_size": 3},
                   {"type": "Block", "name": "res", "repeat": 2, "layers": [
                       {"type": "Activation", "activation": "relu"},
                       {"type": "Conv2D", "filters": 8, "kernel_size": 3},
                       {"type": "Add", "inputs": ["block_in", "prev"]}]}],
    },
    "resnet_stem": {
        "name": "resnet_stem",
        "description": "ResNet's stem: zero padding, 7x7/2 conv + bias, BN, relu, zero padding, 3x3/2 max pool. "
                       "oneDNN folds each explicit pad into the op after it where it can",
        "input": {"shape": [1, 32, 32, 3], "dtype": "float32"},
        "layers": [{"type": "ZeroPadding2D", "padding": 3},
                   {"type": "Conv2D", "filters": 16, "kernel_size": 7, "strides": 2, "padding": "valid"},
                   {"type": "BatchNormalization", "epsilon": 1.001e-5},
                   {"type": "Activation", "activation": "relu"},
                   {"type": "ZeroPadding2D", "padding": 1},
                   {"type": "MaxPooling2D", "pool_size": 3, "strides": 2, "padding": "valid"}],
    },
    "layout_fp32": {
        "name": "layout_fp32",
        "description": "seed tool example: two stacked Conv2D(2x2, SAME)+bias+ReLU on a 5x3x3x4 NHWC input "
                       "(the seed shares one weight and bias between both convs; here each layer has its own)",
        "input": {"shape": [5, 3, 3, 4], "dtype": "float32"},
        "layers": [{"type": "Block", "repeat": 2, "layers": [
            {"type": "Conv2D", "filters": 4, "kernel_size": 2, "padding": "same", "activation": "relu"}]}],
    },
    "arithmetic_pow": {
        "name": "arithmetic_pow",
        "description": "seed tool example: a bare x ** 3 on a 3x4 input (the CPU's arithmetic optimiser "
                       "makes it Square and Mul)",
        "input": {"shape": [3, 4], "dtype": "float32"},
        "layers": [{"type": "Power", "exponent": 3.0}],
    },
}

NAMES = tuple(_EXAMPLES)


def example(name: str) -> dict:
    """A fresh copy of a ready stack (callers edit it)."""
    return copy.deepcopy(_EXAMPLES[name])


def describe(name: str) -> str:
    return _EXAMPLES[name]["description"]
