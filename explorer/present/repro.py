"""Export what the explorer found: a standalone script that reproduces a run, and a zip for a bug report.

``script(spec, config)`` writes a Python script that needs only TensorFlow and numpy (no explorer):
it sets the configuration's environment flags before TensorFlow is imported, builds the model with
the explorer's own builders (the source of ``explorer/worker/models/chain.py``, embedded as it is,
fed the resolved spec as data: the same graph and the same seeded inputs as the worker's), sets the
Grappler switches, calls the ``tf.function`` once with run metadata on, and prints the fused ops of
the graph after Grappler and of the executed partition graphs. With ``--pbtxt-dir`` it also writes
the three stage graphs as pbtxt.

``bundle(result)`` zips that script with the three graphs of an inspect result and a JSON summary
(fingerprint, configuration, spec, fusions, explanation).

Pure text generation: nothing here imports TensorFlow (the builders' module is read as text).
tests/worker/test_repro.py runs the scripts and compares their fused ops with the engine's.
"""

from __future__ import annotations

import io
import json
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..analysis.diagnosis import JSON_MARK  # the script's last line: its findings as JSON, for tools
from ..analysis.fusion import FUSED_OP_PREFIXES, STOCK_FUSED_NAMES
from ..model.devices import Device, is_simulated
from ..model.flags import ENV_FLAGS, Config
from ..model.hooks import hook
from ..model.sources import source_for_data, source_of
from ..model.spec import resolve
from ..model.stack import to_text
from .command import command_line

VMODULE = "remapper=2"
STAGE_FILES = ("traced", "optimized", "executed")
# The builders the worker runs: numpy-only code that takes the tf module as an argument.
BUILDERS = Path(__file__).resolve().parents[1] / "worker" / "models" / "chain.py"

# explorer.analysis.fusion's tables, written into the script so that it needs no explorer.
FUSED_PREFIXES = tuple(prefix for prefix, _ in FUSED_OP_PREFIXES)
STOCK_FUSED = tuple(sorted(STOCK_FUSED_NAMES))


# ---- the model: the worker's builders, fed the resolved spec ----------------------------------

def builders_source() -> str:
    """The builders' module as it is, without its ``from __future__`` line (only legal at the top)."""
    lines = BUILDERS.read_text().splitlines()
    return "\n".join(line for line in lines if not line.startswith("from __future__ import")).strip()


def model_code(spec) -> str:
    """The resolved spec as data, and the stand-in for the ModelSpec the builders read."""
    spec = resolve(spec)
    shapes = {name: list(shape) for name, shape in spec.tensor_shapes().items()}
    return "\n".join([
        f"CHAIN = {spec.chain.to_dict()!r}  # {spec.chain.describe()}",
        f"PARAMS = {dict(spec.params)!r}",
        f"SHAPES = {shapes!r}",
        "",
        "",
        "class Spec:",
        '    """What the builders read of the explorer\'s ModelSpec: the chain, the parameters, the shapes."""',
        "",
        "    chain = types.SimpleNamespace(**CHAIN)",
        "    p = PARAMS",
        "",
        "    @staticmethod",
        "    def tensor_shapes():",
        "        return {name: tuple(shape) for name, shape in SHAPES.items()}",
        "",
        "",
        "def model_and_inputs():",
        '    """The model\'s body and its seeded arguments, as the explorer\'s worker builds them."""',
        "    body, names = build(Spec, tf)",
        "    inputs = make_inputs(Spec, tf)",
        "    return body, [inputs[name] for name in names]",
    ])


# ---- the script ------------------------------------------------------------------------------

_RUN = '''
def is_fused(node):
    """A fused kernel: a fused_ops attribute, or a fused op type (_FusedMatMul, _MklNativeFusedConv2D ...)."""
    if "fused_ops" in node.attr and node.attr["fused_ops"].list.s:
        return True
    op = node.op
    for prefix in ("_MklNative", "_Mkl", "_"):
        if op.startswith(prefix) and len(op) > len(prefix):
            if op[len(prefix):] in STOCK_FUSED:
                return False
            break
    return op.startswith(FUSED_PREFIXES)


def fused_nodes(graph_def):
    found = []
    for node in graph_def.node:
        if is_fused(node):
            ops = [s.decode() for s in node.attr["fused_ops"].list.s] if "fused_ops" in node.attr else []
            extra = {}
            for key in ("activation_mode", "num_side_inputs"):  # _FusedBatchNormEx says it in attributes
                if key in node.attr:
                    value = node.attr[key]
                    extra[key] = value.s.decode() if value.WhichOneof("value") == "s" else str(value.i)
            found.append({"name": node.name, "op": node.op, "fused_ops": ops, "attrs": extra})
    return found


def show(title, graph_def):
    nodes = fused_nodes(graph_def)
    print(f"{title}: {len(graph_def.node)} nodes, {len(nodes)} fused")
    for n in nodes:
        ops = f" [{', '.join(n['fused_ops'])}]" if n["fused_ops"] else ""
        attrs = "".join(f" {k}={v}" for k, v in n["attrs"].items())
        print(f"  {n['op']}{ops}{attrs}   ({n['name']})")
    if not nodes:
        print("  (no fused op)")
    return nodes


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    parser.add_argument("--pbtxt-dir", nargs="?", const=os.path.dirname(os.path.abspath(__file__)),
                        help="write traced.pbtxt, optimized.pbtxt and executed.pbtxt to this directory "
                             "(without a value: beside this script)")
    args = parser.parse_args(argv)

    if GRAPPLER:
        tf.config.optimizer.set_experimental_options(GRAPPLER)
    with tf.device(DEVICE):
        model, inputs = model_and_inputs()
    fn = tf.function(model)
    context.enable_run_metadata()
    try:
        with tf.device(DEVICE):
            fn(*inputs)
        metadata = context.export_run_metadata()
    finally:
        context.disable_run_metadata()
    entry = metadata.function_graphs[-1]
    stages = {"traced": entry.pre_optimization_graph, "optimized": entry.post_optimization_graph}
    executed = tf.compat.v1.GraphDef()
    for part in entry.partition_graphs:
        executed.node.extend(part.node)
    stages["executed"] = executed

    print(f"TensorFlow {tf.__version__}, oneDNN flag {os.environ.get('TF_ENABLE_ONEDNN_OPTS', 'unset')}, "
          f"device {DEVICE}, Grappler options {GRAPPLER or 'defaults'}")
    found = {
        "optimized": show("After Grappler (post-optimization graph)", stages["optimized"]),
        "executed": show("As executed (partition graphs)", stages["executed"]),
    }
    same = [(n.name, n.op) for n in stages["traced"].node] == [(n.name, n.op) for n in stages["optimized"].node]
    if same:
        print("note: the graph after Grappler has the same nodes as the traced graph: Grappler changed nothing, "
              "or gave up on this function (look for 'Ignoring multi-device function optimization failure' above)")
    if args.pbtxt_dir:
        os.makedirs(args.pbtxt_dir, exist_ok=True)
        for name, graph_def in stages.items():
            path = os.path.join(args.pbtxt_dir, f"{name}.pbtxt")
            with open(path, "w") as handle:
                handle.write(text_format.MessageToString(graph_def))
            print(f"wrote {path}")
    print(JSON_MARK + json.dumps({name: [{"op": n["op"], "fused_ops": n["fused_ops"]} for n in nodes]
                                  for name, nodes in found.items()}, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''


def _device(config: Config) -> tuple[str, list[str]]:
    """The tf.device of the script, and what the header says about it."""
    if config.device == "cpu":
        return "/CPU:0", []
    if config.device == "gpu":
        return "/GPU:0", []
    profile = Device.of(config.device).profile
    return "/GPU:0", [
        f"The explorer SIMULATED a GPU ({profile}): Grappler's GPU decisions on a virtual device, nothing run.",
        "This script needs a real GPU to show the same; without one TensorFlow places everything on the CPU.",
    ]


def _env_lines(config: Config) -> list[str]:
    env = config.env_dict
    lines = ["# The environment of the explorer's worker: set before TensorFlow is imported (read once per process)."]
    for name in ENV_FLAGS:
        if name in env:
            lines.append(f"os.environ[{name!r}] = {env[name]!r}")
        else:
            lines.append(f"os.environ.pop({name!r}, None)  # unset: TensorFlow's default")
    lines.append(f'os.environ["TF_CPP_VMODULE"] = "{VMODULE}"  # the remapper logs each fusion it makes (stderr)')
    lines.append('os.environ["TF_CPP_MIN_LOG_LEVEL"] = "0"')
    if config.device == "cpu":
        lines.append('os.environ["CUDA_VISIBLE_DEVICES"] = "-1"  # as the explorer runs it: no GPU in a CPU run')
    elif is_simulated(config.device) and "TF_ENABLE_ONEDNN_OPTS" not in env:
        lines.append('os.environ["TF_ENABLE_ONEDNN_OPTS"] = "0"  # the explorer simulates GPUs with oneDNN off')
    return lines


def _grappler(config: Config) -> dict[str, bool]:
    return {name: value == "on" for name, value in config.grappler}


def script(spec, config=None) -> str:
    """A standalone Python script (TensorFlow and numpy only) that reproduces the explorer's run."""
    spec, config = resolve(spec), Config.coerce(config)
    device, device_notes = _device(config)
    label = spec.preset or "custom op chain"
    params = ", ".join(f"{k}={v}" for k, v in spec.params)
    command = command_line(spec.to_dict(), config, "inspect")
    env_text = config.shell_env() or "no flags (TensorFlow's defaults)"
    doc = [
        f"Reproduce a TF Fusion Explorer run: {spec.chain.describe()} ({label}).",
        "",
        f"Model parameters: {params}.",
        f"Device: {config.device}. Environment: {env_text}. "
        f"Grappler switches: {', '.join(f'{k}={v}' for k, v in config.grappler) or 'defaults'}.",
        *device_notes,
        "",
        "Needs only TensorFlow and numpy. Run:  python repro.py [--pbtxt-dir [DIR]]",
        "It calls the model's tf.function once with run metadata on and prints the fused ops of the graph",
        "after Grappler and of the executed partition graphs; the remapper's own log lines (TF_CPP_VMODULE)",
        "go to stderr. The last line repeats the findings as JSON.",
    ]
    if command:
        doc += ["", f"Made by the explorer for:  {command}"]
    out = ["#!/usr/bin/env python3", '"""' + "\n".join(doc).replace('"""', "'''") + '\n"""', "", "import os", ""]
    out += _env_lines(config)
    out += ["", "import argparse  # noqa: E402", "import json  # noqa: E402", "import sys  # noqa: E402",
            "import types  # noqa: E402", "",
            "import numpy as np  # noqa: E402", "import tensorflow as tf  # noqa: E402",
            "from google.protobuf import text_format  # noqa: E402",
            "from tensorflow.python.eager import context  # noqa: E402", ""]
    out += [f"DEVICE = {device!r}",
            f"GRAPPLER = {_grappler(config)!r}  # tf.config.optimizer.set_experimental_options",
            f"JSON_MARK = {JSON_MARK!r}",
            f"FUSED_PREFIXES = {FUSED_PREFIXES!r}",
            f"STOCK_FUSED = {STOCK_FUSED!r}", "", ""]
    out += ["# ---- the explorer's model builders (explorer/worker/models/chain.py), as the worker runs them ----", ""]
    out += builders_source().splitlines()
    out += ["", "", "# ---- this model ----", ""]
    out += model_code(spec).splitlines()
    out += ["", "", ""]
    return "\n".join(out) + _RUN.lstrip("\n")


# ---- the files that rebuild a model: each source's ``repro`` (model.sources) ----------------------

@dataclass(frozen=True)
class ReproFile:
    """A file that rebuilds the model elsewhere: in the bug-report bundle as ``name``, downloaded from the
    page as ``download`` (with ``label``, ``mime`` and ``help`` for its button); ``text`` may be a function,
    made only when asked."""

    name: str
    text: str | Callable[[], str]
    download: str
    label: str
    mime: str
    help: str

    def content(self) -> str:
        return self.text() if callable(self.text) else self.text


def chain_files(spec, config) -> list[ReproFile]:
    """A preset or an op chain: repro.py, the standalone script."""
    return [ReproFile("repro.py", lambda: script(spec, config), "repro.py", "Reproduce: repro.py", "text/x-python",
                      "A standalone script (TensorFlow and numpy only) that sets these flags, builds this model, runs "
                      "it once and prints the fused ops. Run: python repro.py --pbtxt-dir out/")]


def stack_files(spec, config) -> list[ReproFile]:
    """A layer stack: its JSON, which `python -m explorer inspect --spec FILE.json` runs again."""
    spec = resolve(spec)
    return [ReproFile("stack.json", to_text(spec.source) + "\n", f"{spec.name}.json", f"Layer stack: {spec.name}.json",
                      "application/json", "The stack as JSON: python -m explorer inspect --spec FILE.json runs it again.")]


def repro_files(spec, config=None) -> list[ReproFile]:
    """The files that rebuild ``spec`` (its source's ``repro``); none for a source that has no writer."""
    spec = resolve(spec)
    writer = source_of(spec).repro
    return hook(writer)(spec, Config.coerce(config)) if writer else []


# ---- the bundle --------------------------------------------------------------------------------

def summary(result: dict) -> dict:
    """What the bundle's summary.json holds: enough to read the run without the explorer."""
    return {
        "spec": result.get("spec"),
        "config": result.get("config"),
        "fingerprint": result.get("fingerprint"),
        "fusions": result.get("fusions"),
        "fusions_by_pair": result.get("fusions_by_pair"),
        "explanation": result.get("explanation"),
        "warnings": result.get("warnings"),
        "remapper_log": (result.get("grappler") or {}).get("remapper_log"),
        "simulated": bool(result.get("simulated")),
    }


README = """TF Fusion Explorer export
=========================

repro.py         a standalone script (TensorFlow and numpy only) that rebuilds the model with the same
                 environment flags and Grappler options, calls it once and prints the fused ops.
                 Run: python repro.py --pbtxt-dir out/
                 (for a layer stack: stack.json instead; python -m explorer inspect --spec stack.json)
traced.pbtxt     the graph tf.function built (before Grappler)
optimized.pbtxt  the graph after Grappler (the remapper's fusions are here)
executed.pbtxt   the partition graphs that ran (oneDNN renames fused ops to _MklNative*)
summary.json     TensorFlow build and machine, configuration, model spec, fusions and the explorer's verdict
"""


def bundle(result: dict) -> bytes:
    """A zip of repro.py, the stage graphs (pbtxt), summary.json and a README, for a bug report."""
    buffer = io.BytesIO()
    stamp = (2026, 1, 1, 0, 0, 0)  # fixed: the same result gives the same bytes

    def add(name: str, text: str) -> None:
        info = zipfile.ZipInfo(name, date_time=stamp)
        info.compress_type = zipfile.ZIP_DEFLATED
        info.external_attr = (0o755 if name.endswith(".py") else 0o644) << 16
        archive.writestr(info, text)

    with zipfile.ZipFile(buffer, "w") as archive:
        for file in repro_files(result["spec"], result.get("config")):
            add(file.name, file.content())
        for stage in STAGE_FILES:
            text = (result.get("pbtxt") or {}).get(stage)
            if text:
                add(f"{stage}.pbtxt", text)
        add("summary.json", json.dumps(summary(result), indent=2, sort_keys=True, default=str) + "\n")
        add("README.txt", README)
    return buffer.getvalue()


def bundle_name(result: dict) -> str:
    spec = result.get("spec") or {}
    config = result.get("config") or {}
    flags = "-".join(f"{k.lower()}{v}" for k, v in sorted((config.get("env") or {}).items()) if len(v) <= 3)
    source = source_for_data(spec)
    base = source.stem(spec) if source else "model"
    device = str(config.get("device", "cpu")).replace(":", "-")
    return f"fusion-{base}-{device}" + (f"-{flags}" if flags else "")
