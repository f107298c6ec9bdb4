"""The command line the page shows reproduces the run: parsed back, it gives the same spec and config."""

import shlex

import pytest

from explorer.cli import config_from_args, make_parser, spec_from_args
from explorer.model.flags import Config
from explorer.model.spec import resolve
from explorer.present.command import command_line

CASES = [
    ({"preset": "matmul_bias_gelu_approx", "params": {"m": 1024, "dtype": "bfloat16"}},
     Config.make("cpu", {"TF_ENABLE_ONEDNN_OPTS": "0"}, {"remapping": "off"})),
    ({"preset": "conv2d_bias_relu"}, Config()),
    ({"chain": {"contraction": "Conv2D", "bias": "none", "norm": "FusedBatchNorm", "activation": "Relu"},
      "params": {"training": True, "batch": 2}}, Config()),
    ({"chain": {"kind": "instance_norm", "activation": "Relu"}, "params": {"channels": 8}},
     Config.make("gpu-sim:volta", {"TF_USE_CUBLASLT": "1"})),
]


@pytest.mark.parametrize("spec,config", CASES)
def test_the_shown_command_parses_back_to_the_same_run(spec, config):
    line = command_line(spec, config)
    assert line.startswith("python -m explorer inspect ")
    args = make_parser().parse_args(shlex.split(line)[3:])
    assert resolve(spec_from_args(args)) == resolve(spec)
    assert config_from_args(args) == config


def test_defaults_are_left_out():
    line = command_line({"preset": "conv2d_bias_relu", "params": {"filter_size": 1}}, Config())
    assert "--set" not in line  # 1 is the preset's own default


def test_a_file_name_a_shell_would_split_stays_one_argument():
    name = "net; rm -rf ~ $(x).pb"
    line = command_line({"import": {"format": "graphdef", "digest": "0" * 64, "name": name}}, Config())
    assert shlex.split(line)[3:6] == ["inspect", "--model", name]
    assert make_parser().parse_args(shlex.split(line)[3:]).model == name
