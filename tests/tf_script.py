"""Run a test's own TensorFlow script (the oracle: TensorFlow alone, no explorer code) in a process of its own."""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path


def run_tf_script(script: Path, *args, env: dict | None = None, timeout: float = 600) -> str:
    """``python script args...`` with TensorFlow's logs quiet and ``env`` on top of this process's; its stdout.
    A failure is a test failure that shows the script's last error lines."""
    proc = subprocess.run([sys.executable, str(script), *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", **(env or {})})
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def run_tf_scripts(script: Path, calls, timeout: float = 600) -> list[str]:
    """``run_tf_script`` for each ``(args, env)`` of ``calls``, all at once (each call is a process of its own,
    mostly one core's work: importing TensorFlow, tracing): their stdouts, in the order of ``calls``."""
    with ThreadPoolExecutor(len(calls)) as pool:
        runs = [pool.submit(run_tf_script, script, *args, env=env, timeout=timeout) for args, env in calls]
        return [run.result() for run in runs]
