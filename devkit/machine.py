"""What a figure names its machine by: the CPU's model name as ``lscpu`` prints it (benchmarks print it with the date
and the load average)."""

from __future__ import annotations

import platform
import subprocess


def cpu_model() -> str:
    try:
        out = subprocess.run(["lscpu"], capture_output=True, text=True, check=False, timeout=10).stdout
        return next(line.split(":", 1)[1].strip() for line in out.splitlines() if line.startswith("Model name"))
    except (OSError, StopIteration, subprocess.SubprocessError):
        return platform.processor() or "unknown CPU"
