"""Runs a script against the real worker code in a fresh process (TensorFlow imported there only)."""

from __future__ import annotations

import json
import subprocess
import sys

from explorer.engine.runner import PROJECT_ROOT

PRELUDE = """
from explorer.worker.protocol import Protocol
from explorer.worker.runtime import Runtime

protocol = Protocol()
worker = Runtime(protocol)
tf = worker.tf
"""


def run_in_worker(script: str) -> dict:
    """The JSON the script sends last with ``protocol.send``; the script sees ``worker`` and ``tf``."""
    proc = subprocess.run([sys.executable, "-c", PRELUDE + script], cwd=PROJECT_ROOT, capture_output=True,
                          text=True, timeout=300, env={"PATH": "/usr/bin:/bin", "CUDA_VISIBLE_DEVICES": "-1"})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])
