"""The faulty-fusion corpus (tests/fixtures/faulty/corpus.json) as specs the engine takes and the CLI's arguments.

Imported models are made by tests/fixtures/faulty/make_faulty.py (TensorFlow alone, a process of its own) into
a folder the caller gives. ``ONEDNN_ON``: the configuration every corpus model breaks in (oneDNN forced on, so
that the corpus holds on CPUs where it is off by default too).
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.tf_script import run_tf_script

FOLDER = Path(__file__).resolve().parents[1] / "fixtures" / "faulty"
ONEDNN_ON = {"device": "cpu", "env": {"TF_ENABLE_ONEDNN_OPTS": "1"}, "grappler": {}}
ONEDNN_OFF = {"device": "cpu", "env": {"TF_ENABLE_ONEDNN_OPTS": "0"}, "grappler": {}}


def entries() -> list[dict]:
    return json.loads((FOLDER / "corpus.json").read_text())["models"]


def make_imports(directory: Path) -> Path:
    run_tf_script(FOLDER / "make_faulty.py", str(directory))
    return directory


def spec(entry: dict, models: Path | None = None) -> dict:
    """The engine's spec of a corpus model (``models``: where make_imports wrote the imported ones)."""
    from explorer.engine.uploads import spec_for_path

    if entry["source"] == "chain":
        return entry["spec"]
    if entry["source"] == "stack":
        return {"stack": json.loads((FOLDER / entry["stack_file"]).read_text())}
    return spec_for_path(str(models / entry["model_file"]))


def cli_args(entry: dict, models: Path | None = None) -> list[str]:
    """The model's arguments to ``python -m explorer diagnose``."""
    if entry["source"] == "stack":
        return ["--spec", str(FOLDER / entry["stack_file"])]
    if entry["source"] == "import":
        return ["--model", str(models / entry["model_file"])]
    chain = entry["spec"]["chain"]
    args = ["chain"] + [a for k, v in chain.items() for a in ("--chain", f"{k}={str(v).lower() if isinstance(v, bool) else v}")]
    return args + [a for k, v in entry["spec"]["params"].items() for a in ("--set", f"{k}={v}")]
