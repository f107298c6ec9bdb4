"""The command line that reproduces a run: one writer, used by the CLI's help, the page and repro.py."""

from __future__ import annotations

import shlex

from ..model.flags import Config
from ..model.spec import resolve


def command_line(spec, config: Config, command: str = "inspect") -> str:
    """The exact command that reproduces a run: the model as its source writes it (``cli_args``), then
    the configuration as options."""
    return _shell(["python", "-m", "explorer", command, *resolve(spec).cli_args(), *config.cli_args()])


def fix_command_line(spec, config: Config, model_path: str | None = None) -> str:
    """The ``fix`` command for an imported model run under ``config`` (``fix`` traces as served: no --fix-dims);
    ``model_path``: the file as the user named it (the command line's --model), where the spec keeps its name only."""
    words = [a for a in resolve(spec).cli_args() if a != "--fix-dims"]
    if model_path:
        words[words.index("--model") + 1] = model_path
    return _shell(["python", "-m", "explorer", "fix", *words, *config.cli_args()])


def bench_command_line(spec, config: Config, reps: int, warmup: int, max_seconds: float, processes: int = 1) -> str:
    """The command that repeats a benchmark: the run's command line with its timing options."""
    return (command_line(spec, config, "bench") + f" --reps {reps} --warmup {warmup} --max-seconds {max_seconds:g}"
            + (f" --processes {processes}" if processes > 1 else ""))


def _shell(words: list[str]) -> str:
    """A line a shell reads back as ``words``: a file named ``a b;c.pb`` stays one argument, never a second command."""
    return " ".join(shlex.quote(word) for word in words)
