"""Snapshot the command line's output for the seven seed presets, to compare two versions of the code.

    .venv/bin/python devkit/cli_snapshot.py snapshot PROJECT_DIR OUT.json   # runs `python -m explorer` there
    .venv/bin/python devkit/cli_snapshot.py compare BEFORE.json AFTER.json

Besides the seven presets: `stacks` (list, one, --layers), a layer stack and an imported model (a
small Keras model as frozen GraphDef and SavedModel, made once under MODELS_DIR by
tests/imported/make_models.py; set EXPLORER_SNAPSHOT_MODELS to reuse a directory), a two-cell
`matrix` (text, JSON, CSV), XLA's inspect and three-way bench, and bad arguments (exit status and
stderr). Sizes are small. What varies from run to run (timings, pids, cache keys, log lines, dump
paths, samples and their statistics) is masked. ``compare`` prints, per command, whether its
output is the same; for JSON, the keys removed and added and every value that differs. Used for
issue 10 (the package's new layout) and issue 21 (the source and compiler tables), and worth
rerunning around any refactoring of the CLI's path.
"""

from __future__ import annotations

import difflib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

SEVEN = ("matmul_bias_gelu_approx", "matmul_bias_gelu_exact", "matmul_bias_relu", "conv2d_bias_relu",
         "conv2d_batchnorm_relu", "conv2d_squeeze_bias", "batchnorm_add_relu")
SIZES = {
    "matmul": {"m": 64, "k": 32, "n": 16},
    "conv2d_squeeze_bias": {"batch": 1, "height": 16, "in_channels": 4, "out_channels": 4},
    "conv": {"batch": 1, "height": 8, "width": 8, "in_channels": 4, "out_channels": 4},
    "batchnorm": {"batch": 1, "height": 8, "width": 8, "channels": 4},
}
VOLATILE = {"timings", "worker", "pid", "import_s", "key", "log", "log_remapper_off", "elapsed_s", "measured_at",
            "isolation", "samples_ns", "summary", "agreement", "startup_s", "wall_s",
            # measured, so they differ from run to run: the machine's profile and what the timings make of it,
            # XLA's module hashes (unique ids in the module) and pass times
            "described", "bound", "dram_over_measured", "est_over_measured", "hash_before", "hash_after", "time_us",
            "hlo_dot"}  # XLA's own DOT numbers its nodes and edges differently from run to run
NUMBER = re.compile(r"\d+\.\d+")


def size_args(preset: str) -> list[str]:
    kind = ("matmul" if preset.startswith("matmul") else preset if preset in SIZES
            else "conv" if preset.startswith("conv") else "batchnorm")
    return [a for name, value in SIZES[kind].items() for a in ("--set", f"{name}={value}")]


def mask(value, key=None):
    if key in VOLATILE:
        return "<masked>"
    if key == "pass_graphs":
        return f"<{len(value)} pass graphs>"
    if isinstance(value, dict):
        return {k: mask(v, k) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [mask(v, key) for v in value]
    if isinstance(value, str):
        return NUMBER.sub("F", re.sub(r"/tmp/\S*", "/tmp/X", value))
    return "F" if isinstance(value, float) else value


STACK = {"name": "snap", "input": {"shape": [1, 8, 8, 4], "dtype": "float32"}, "seed": 0,
         "layers": [{"type": "Conv2D", "filters": 4, "kernel_size": 3, "activation": "relu"},
                    {"type": "GlobalAveragePooling2D"}, {"type": "Dense", "units": 3, "activation": "gelu_approximate"}]}
BAD = (("inspect", "no_such_preset"), ("inspect", "matmul_bias_relu", "--env", "NOPE=1"),
       ("inspect", "matmul_bias_relu", "--set", "m=-3"), ("bench", "matmul_bias_relu", "--reps", "1"),
       ("inspect", "--model", "/nonexistent.pb"), ("inspect", "matmul_bias_relu", "--dim", "4"),
       ("inspect", "chain", "--chain", "contraction=Nope"), ("matrix", "--presets", "nope", "--vary", "x=1"),
       ("stacks", "nope"))


def models_dir(root: str) -> Path:
    directory = Path(os.environ.get("EXPLORER_SNAPSHOT_MODELS") or Path(tempfile.gettempdir()) / "cli-snapshot-models")
    if not (directory / "small.pb").exists():
        directory.mkdir(parents=True, exist_ok=True)
        script = Path(root) / "tests" / "imported" / "make_models.py"
        subprocess.run([sys.executable, str(script), "export", str(directory)], check=True, timeout=900,
                       env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    return directory


def snapshot(root: str, out: str) -> None:
    def run(*args) -> tuple[int, str]:
        proc = subprocess.run([sys.executable, "-m", "explorer", *args], cwd=root, capture_output=True, text=True,
                              timeout=900)
        return proc.returncode, proc.stdout

    def run_json(*args):
        code, text = run(*args)
        return code, mask(json.loads(text)) if code == 0 else text

    snap = {"presets": run("presets")}
    code, text = run("presets", "--json")
    snap["presets --json"] = (code, json.loads(text))
    for preset in SEVEN:
        code, text = run("inspect", preset, "--no-cache", *size_args(preset))
        snap[f"inspect {preset}"] = (code, NUMBER.sub("F", text))
        code, text = run("inspect", preset, "--no-cache", "--json", *size_args(preset))
        snap[f"inspect --json {preset}"] = (code, mask(json.loads(text)) if code == 0 else text)
        code, text = run("bench", preset, "--reps", "3", "--warmup", "0", "--json", *size_args(preset))
        snap[f"bench --json {preset}"] = (code, mask(json.loads(text)) if code == 0 else text)
    snap.update({"stacks": run("stacks"), "stacks --layers": run("stacks", "--layers"),
                 "stacks transformer_ffn": run("stacks", "transformer_ffn")})
    with tempfile.TemporaryDirectory() as tmp:
        spec = Path(tmp) / "stack.json"
        spec.write_text(json.dumps(STACK))
        code, text = run("inspect", "--spec", str(spec), "--no-cache")
        snap["inspect --spec"] = (code, NUMBER.sub("F", text))
        snap["inspect --json --spec"] = run_json("inspect", "--spec", str(spec), "--no-cache", "--json")
        snap["bench --json --spec"] = run_json("bench", "--spec", str(spec), "--reps", "3", "--warmup", "0", "--json")
    models = models_dir(root)
    for name in ("small.pb", "small_savedmodel"):
        path = str(models / name)
        code, text = run("inspect", "--model", path, "--no-cache")
        snap[f"inspect --model {name}"] = (code, NUMBER.sub("F", text.replace(path, "MODEL")))
        snap[f"inspect --json --model {name}"] = run_json("inspect", "--model", path, "--no-cache", "--json")
    snap["bench --json --model small.pb"] = run_json("bench", "--model", str(models / "small.pb"), "--reps", "3",
                                                     "--warmup", "0", "--json")
    grid = ("matrix", "--presets", "matmul_bias_relu,conv2d_bias_relu", "--vary", "TF_ENABLE_ONEDNN_OPTS=0,1",
            "--set", "m=64", "--set", "k=32", "--set", "n=16", "--set", "height=8", "--set", "width=8", "--no-cache")
    code, text = run(*grid)
    snap["matrix"] = (code, NUMBER.sub("F", text))
    snap["matrix --json"] = run_json(*grid, "--json")
    code, text = run(*grid, "--csv")
    snap["matrix --csv"] = (code, NUMBER.sub("F", text))
    xla = ("matmul_bias_gelu_approx", *size_args("matmul_bias_gelu_approx"))
    code, text = run("inspect", *xla, "--compiler", "xla", "--no-cache")
    snap["inspect --compiler xla"] = (code, NUMBER.sub("F", re.sub(r"module \S+", "module M", text)))
    snap["inspect --json --compiler both"] = run_json("inspect", *xla, "--compiler", "both", "--no-cache", "--json")
    snap["bench --json --compiler both"] = run_json("bench", *xla, "--compiler", "both", "--reps", "3", "--warmup",
                                                    "0", "--json")
    for args in BAD:
        proc = subprocess.run([sys.executable, "-m", "explorer", *args], cwd=root, capture_output=True, text=True,
                              timeout=900)
        snap["error: " + " ".join(args)] = (proc.returncode, proc.stdout + proc.stderr)
    with open(out, "w") as handle:
        json.dump(snap, handle, indent=1, sort_keys=True)
    print(f"wrote {out}: {len(snap)} outputs")


def key_paths(value, prefix: str = "") -> set[str]:
    paths: set[str] = set()
    if isinstance(value, dict):
        for k, v in value.items():
            paths |= {f"{prefix}/{k}"} | key_paths(v, f"{prefix}/{k}")
    elif isinstance(value, list):
        for v in value:
            paths |= key_paths(v, prefix + "[]")
    return paths


def differing_values(a, b, path: str = "") -> list[tuple[str, object, object]]:
    """Values that differ at paths both sides have (keys one side lacks are reported as keys)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return [d for k in sorted(set(a) & set(b)) for d in differing_values(a[k], b[k], f"{path}/{k}")]
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differing_values(x, y, f"{path}[{i}]")]
    return [] if a == b else [(path, a, b)]


def compare(before: str, after: str) -> None:
    with open(before) as a_file, open(after) as b_file:
        a, b = json.load(a_file), json.load(b_file)
    # Masked again with today's VOLATILE, so snapshots taken before a key was added compare the same way.
    a = {k: (code, mask(out) if isinstance(out, dict) else out) for k, (code, out) in a.items()}
    b = {k: (code, mask(out) if isinstance(out, dict) else out) for k, (code, out) in b.items()}
    for name in sorted(set(a) | set(b)):
        if name not in a or name not in b:
            print(f"only in {'after' if name in b else 'before'}: {name}")
            continue
        (code_a, out_a), (code_b, out_b) = a[name], b[name]
        if (code_a, out_a) == (code_b, out_b):
            print(f"same    {name}")
            continue
        if code_a != code_b:
            print(f"EXIT    {name}: {code_a} -> {code_b}")
        if isinstance(out_a, str) or isinstance(out_b, str):
            lines = [ln for ln in difflib.unified_diff(str(out_a).splitlines(), str(out_b).splitlines(), lineterm="",
                                                       n=0) if ln[:1] in "+-" and ln[:3] not in ("---", "+++")]
            print(f"TEXT    {name}: {len(lines)} lines differ")
            for line in lines[:12]:
                print(f"          {line[:160]}")
            continue
        removed, added = key_paths(out_a) - key_paths(out_b), key_paths(out_b) - key_paths(out_a)
        values = differing_values(out_a, out_b)
        print(f"JSON    {name}: {len(removed)} keys removed, {len(added)} added, {len(values)} values differ")
        for path in sorted(removed)[:10]:
            print(f"          - {path}")
        for path in sorted(added)[:10]:
            print(f"          + {path}")
        for path, x, y in values[:10]:
            print(f"          {path}: {str(x)[:70]!r} -> {str(y)[:70]!r}")


if __name__ == "__main__":
    if len(sys.argv) != 4 or sys.argv[1] not in ("snapshot", "compare"):
        sys.exit(__doc__.strip().splitlines()[2].strip() + "\n" + __doc__.strip().splitlines()[3].strip())
    {"snapshot": snapshot, "compare": compare}[sys.argv[1]](sys.argv[2], sys.argv[3])
