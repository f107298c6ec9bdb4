"""The command line that reproduces a run: one writer, used by the CLI's help, the page and repro.py."""

from __future__ import annotations

from ..model.flags import Config
from ..model.spec import resolve


def command_line(spec, config: Config, command: str = "inspect") -> str:
    """The exact command that reproduces a run: the model as its source writes it (``cli_args``), then
    the configuration as options."""
    return " ".join(["python", "-m", "explorer", command, *resolve(spec).cli_args(), *config.cli_args()])


def bench_command_line(spec, config: Config, reps: int, warmup: int, max_seconds: float, processes: int = 1) -> str:
    """The command that repeats a benchmark: the run's command line with its timing options."""
    return (command_line(spec, config, "bench") + f" --reps {reps} --warmup {warmup} --max-seconds {max_seconds:g}"
            + (f" --processes {processes}" if processes > 1 else ""))
