"""The command line that reproduces a run: one writer, used by the CLI's help, the page and repro.py."""

from __future__ import annotations

import shlex

from ..model.chain import Chain
from ..model.flags import Config
from ..model.spec import DEFAULT_PARAMS, resolve
from ..model.imported import ImportSpec
from ..model.stack import StackSpec


def command_line(spec, config: Config, command: str = "inspect") -> str:
    """The exact command that reproduces a run, with its environment as options."""
    resolved = resolve(spec)
    if isinstance(resolved, StackSpec):  # the stack travels as a file: `stacks NAME` or the page writes it
        return " ".join(["python", "-m", "explorer", command, "--spec", shlex.quote(f"{resolved.name}.json"),
                         *config.cli_args()])
    if isinstance(resolved, ImportSpec):  # an imported model: the user's own path to the file they uploaded
        return " ".join(["python", "-m", "explorer", command] + resolved.cli_args() + config.cli_args())
    if resolved.preset:
        head = [resolved.preset]
        defaults = resolve({"preset": resolved.preset}).p
        params = {k: v for k, v in resolved.params if defaults.get(k) != v}  # only what differs
    else:
        plain = Chain().to_dict()
        fields = {k: v for k, v in resolved.chain.to_dict().items() if k == "contraction" or plain[k] != v}
        head = ["chain"] + [a for k, v in fields.items() for a in ("--chain", f"{k}={v}")]
        params = {k: v for k, v in resolved.params if DEFAULT_PARAMS.get(k) != v}
    parts = ["python", "-m", "explorer", command] + head
    for key, value in params.items():
        parts += ["--set", f"{key}={value}"]
    parts += config.cli_args()
    return " ".join(parts)


def bench_command_line(spec, config: Config, reps: int, warmup: int, max_seconds: float, processes: int = 1) -> str:
    """The command that repeats a benchmark: the run's command line with its timing options."""
    return (command_line(spec, config, "bench") + f" --reps {reps} --warmup {warmup} --max-seconds {max_seconds:g}"
            + (f" --processes {processes}" if processes > 1 else ""))
