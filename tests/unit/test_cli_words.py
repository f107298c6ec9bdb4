"""Words the command line and the page share: what B changes from A (compare, the page's A against B and its pin),
and a stage's ops (inspect, bench and compare's proof of what ran)."""

from __future__ import annotations

from explorer.model.flags import Config
from explorer.present import compare_text
from explorer.present.text import SPELLED_OUT, ops_words, report_lines


def test_a_setting_left_at_tensorflows_default_is_said_as_the_sidebar_says_it():
    a = Config.make("cpu", {}, {"remapping": "off"}).to_dict()
    b = Config.make("gpu-sim:ampere", {"TF_ENABLE_ONEDNN_OPTS": "0"}).to_dict()
    assert compare_text.config_changes(a, b) == [
        "device: cpu → gpu-sim:ampere", "TF_ENABLE_ONEDNN_OPTS: unset → 0", "remapping: off → default"]
    assert compare_text.config_changes(a, a) == []
    result = {side: {"config": config, "spec": {"preset": "matmul_bias_relu", "params": {"m": m}}}
              for side, config, m in (("a", a, 64), ("b", b, 128))}
    assert compare_text.changed(result)[-1] == "m: 64 → 128"


def test_a_networks_ops_are_counted_by_type_and_a_small_graphs_listed_in_order():
    small = ["MatMul", "BiasAdd", "Relu"]
    assert ops_words(small) == "MatMul BiasAdd Relu"
    big = ["Conv2D", "BiasAdd", "Relu"] * 20 + ["MatMul", "Softmax"]
    assert len(big) > SPELLED_OUT
    assert ops_words(big) == "62 compute ops: Conv2D ×20, BiasAdd ×20, Relu ×20, MatMul, Softmax"
    many = [f"Op{i}" for i in range(40)]
    assert ops_words(many).endswith("Op15 and 24 more types")


def _miss(layer: str, kind: str = "batchnorm-as-arithmetic", chain: str = "Conv2D + batch norm") -> dict:
    return {"kind": kind, "nodes": [f"StatefulPartitionedCall/net/{layer}/convolution"], "chain": chain,
            "form": "Conv2D → batch norm written as arithmetic", "needs": "a FusedBatchNormV3 node", "fix": "fold it"}


def _report(misses: list[dict]) -> dict:
    return {"totals": {"ops_traced": 9, "ops_optimized": 8, "ops_executed": 8, "fused_kernels": 1},
            "fusions": [{"count": 2, "fused": "_FusedConv2D [BiasAdd]",
                         "layers": ["StatefulPartitionedCall/net/conv_a", "StatefulPartitionedCall/net/conv_b"]}],
            "near_misses": misses}


def test_a_networks_repeated_near_miss_is_one_entry_with_its_count_and_layers_and_fixs_command():
    misses = [_miss(f"block{i}_conv") for i in range(6)] + [_miss("head", "bias-as-add", "MatMul + Add")]
    command = "python -m explorer fix --model net --device cpu"
    lines = report_lines(_report(misses), command)
    assert "Layers below are in StatefulPartitionedCall/net/" in lines
    assert "    2 × _FusedConv2D [BiasAdd]   layers: conv_a, conv_b" in lines
    assert "Near-misses (7): chains that look like a pattern but did not fuse" in lines
    grouped = [line for line in lines if line.startswith("  Conv2D + batch norm")]
    assert grouped == ["  Conv2D + batch norm ×6, at block0_conv, block1_conv, block2_conv, block3_conv (and 2 more):\n"
                       "    Conv2D → batch norm written as arithmetic; needs a FusedBatchNormV3 node  -> fold it"]
    assert "  MatMul + Add at head/convolution: Conv2D → batch norm written as arithmetic; needs a FusedBatchNormV3 " \
           "node  -> fold it" in lines
    assert lines[-1] == ("Rewrites for these near-misses: bias-add (1), fold-batchnorm (6). To apply them, check the "
                         f"rewritten model against this one and time both:\n  {command}")
    # a model fix cannot take (a preset, a simulated GPU): no command
    assert not any(line.startswith("Rewrites") for line in report_lines(_report(misses)))
    assert not any(line.startswith("Rewrites") for line in report_lines(_report(misses[:0]), command))


def test_the_fix_command_for_an_imported_model_parses_back_as_fix_with_its_model_and_flags():
    import shlex

    from explorer.cli import make_parser
    from explorer.present.command import fix_command_line

    spec = {"import": {"format": "savedmodel", "digest": "0" * 64, "unknown_dim": 4, "name": "net",
                       "fixed_dims": True, "signature": "serve"}}
    line = fix_command_line(spec, Config.make("cpu", {"TF_ENABLE_ONEDNN_OPTS": "1"}))
    args = make_parser().parse_args(shlex.split(line)[3:])
    assert (args.command, args.model, args.signature, args.dim, args.device, args.env) == \
        ("fix", "net", "serve", 4, "cpu", ["TF_ENABLE_ONEDNN_OPTS=1"])
    assert "--fix-dims" not in line  # fix traces the model as served
