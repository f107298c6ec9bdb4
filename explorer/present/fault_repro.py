"""The report to file upstream: a standalone script holding one fused node's ops, that shows its fault.

``script(isolated, context)`` writes, from the worker's plain description of the node's ops
(``worker.isolate``), a Python script that needs TensorFlow and numpy alone: the flags set before
TensorFlow is imported, seeded inputs of the recorded shapes and dtypes, the ops as ``tf.raw_ops``
calls with their attributes, run once with Grappler's remapper off and once with it on. It exits 1
and prints ``FAULT: ...`` when the fused graph fails or its numbers differ beyond the dtype's
tolerance, 0 and ``OK: ...`` otherwise (an abort inside a kernel ends it with the signal). Its
last line is ``# repro-json: {...}`` with what it found, for tools (``analysis.diagnosis.read_findings``).
The worker writes it (it knows the TensorFlow, flags and CPU the header names); the engine runs it.

Pure text generation: nothing here imports TensorFlow.
"""

from __future__ import annotations

from ..analysis.agreement import BENCH_TOLERANCE
from ..analysis.diagnosis import JSON_MARK


def _array(entry: dict, rng: str = "rng") -> str:
    dtype, shape = entry["dtype"], entry["shape"]
    if "value" in entry:
        return f"tf.constant({entry['value']!r}, tf.{dtype}, shape={shape!r})"
    return f"tf.constant({_draw(entry, rng)}, tf.{dtype})"


def _draw(entry: dict, rng: str = "rng") -> str:
    """numpy's draw of a seeded array of ``entry``'s shape and kind."""
    dtype, shape = entry["dtype"], entry["shape"]
    if entry.get("positive"):
        draw = f"{rng}.uniform(0.5, 1.5, {shape!r})"
    elif "mean" in entry:
        draw = f"{rng}.normal({entry['mean']:.6g}, {entry['std']:.6g}, {shape!r})"
    elif dtype.startswith(("int", "uint")):
        draw = f"{rng}.integers(0, 8, {shape!r})"
    elif dtype == "bool":
        draw = f"{rng}.random({shape!r}) < 0.5"
    else:
        draw = f"{rng}.standard_normal({shape!r})"
    return draw


def _call(op: dict) -> str:
    parts = [f"{k}={v}" for k, v in op["inputs"].items()] + [f"{k}={v}" for k, v in op["attrs"].items()]
    return f"    {op['var']} = tf.raw_ops.{op['op']}({', '.join(parts)})"


def header(isolated: dict, context: dict) -> list[str]:
    flags = context.get("env") or {}
    onednn = context.get("onednn")
    words = {True: "on", False: "off"}.get(onednn, "as TensorFlow decides")
    lines = [
        f"# {isolated['target']}: Grappler's remapper fuses {' + '.join(isolated['absorbed_ops'])} and the fused",
        f"# graph {context.get('fault_words', 'fails or disagrees with the unfused one')}.",
        f"# TensorFlow {context.get('tf_version', '?')}, oneDNN {words}"
        + (f" ({', '.join(f'{k}={v}' for k, v in sorted(flags.items()))})" if flags else "") + ",",
        f"# CPU: {context.get('cpu', '?')}.",
        f"# Made by TF Fusion Explorer from node {isolated['node']!r} of {context.get('model', 'a model')}.",
        "# Run: python this_file.py   (exit status 1 and a FAULT line when the fault shows)",
    ]
    return lines


def script(isolated: dict, context: dict) -> str:
    """The standalone script (see the module's doc)."""
    env = {k: v for k, v in (context.get("env") or {}).items() if v is not None}
    dtype = isolated["args"][0]["dtype"] if isolated["args"] else "float32"
    tol = BENCH_TOLERANCE.get(context.get("dtype") or dtype, 1e-3)
    args = [a["var"] for a in isolated["args"]]
    lines = header(isolated, context) + ["import os", "import sys"]
    lines += [f"os.environ[{k!r}] = {str(v)!r}" for k, v in sorted(env.items())]
    lines += ["import json", "", "import numpy as np", "import tensorflow as tf", "", "rng = np.random.default_rng(0)"]
    lines += [f"{a['var']} = {_array(a)}  # {a['name']}" for a in isolated["args"]]
    # the weights drawn once, here: model() is traced once per run, and each trace would draw other numbers
    drawn = [c for c in isolated["consts"] if "value" not in c]
    lines += [f"{c['var']}_value = {_draw(c)}" for c in drawn]
    lines += ["", "", f"def model({', '.join(args)}):"]
    lines += [f"    {c['var']} = " + (f"tf.constant({c['var']}_value, tf.{c['dtype']})" if c in drawn else _array(c))
              + f"  # {c['name']}" for c in isolated["consts"]]
    lines += [_call(op) for op in isolated["ops"]]
    lines += [f"    return {isolated['output']}", "", ""]
    lines += [
        "def run(remapping):",
        "    tf.config.optimizer.set_experimental_options({'remapping': remapping})",
        f"    return tf.function(model)({', '.join(args)})",
        "",
        "",
        "expected = run(False).numpy().astype(np.float64)",
        "found = {'target': " + repr(isolated["target"]) + ", 'tf': tf.__version__}",
        "try:",
        "    got = run(True).numpy().astype(np.float64)",
        "except tf.errors.OpError as exc:",
        "    lines = [s.strip() for s in (exc.message or '').splitlines() if s.strip()]",
        "    line = next((s for s in lines if not s.startswith(('Graph execution', 'Detected at', '[[', 'File ')) "
        "and not s.endswith(':')), lines[-1] if lines else '')[:300]",
        "    found.update(fault='fails', error=f'{type(exc).__name__}: {line}')",
        "    print(f\"FAULT: the fused graph fails: {found['error']}\")",
        f"    print({JSON_MARK!r} + json.dumps(found))",
        "    sys.exit(1)",
        "diff = np.abs(got - expected)",
        "max_abs = float(np.nanmax(diff)) if diff.size and not np.isnan(diff).all() else 0.0",
        "nan = [int(np.isnan(got).sum()), int(np.isnan(expected).sum())]",
        f"agree = bool(np.allclose(got, expected, rtol={tol!r}, atol={tol!r}, equal_nan=True))",
        "found.update(fault=None if agree else 'disagrees', max_abs=max_abs, nan=nan, "
        f"tolerance={tol!r})",
        "if agree:",
        "    print(f'OK: fused and unfused agree (max abs diff {max_abs:.3g})')",
        "else:",
        f"    print(f'FAULT: the fused graph disagrees: max abs diff {{max_abs:.4g}} (tolerance {tol!r}), '",
        "          f'NaN fused/unfused {nan[0]}/{nan[1]}')",
        f"print({JSON_MARK!r} + json.dumps(found))",
        "sys.exit(0 if agree else 1)",
    ]
    return "\n".join(lines) + "\n"
