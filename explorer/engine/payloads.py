"""What each worker request carries and the checks made before one is sent: the engine's and the replay's."""

from __future__ import annotations

from ..errors import SpecError
from ..model.devices import refuse_simulated
from ..model.flags import Config
from ..model.limits import MAX_BENCH_SECONDS, MAX_PROCESSES, MAX_REPS, MAX_WARMUP
from ..model.sources import source_of


def inspect_payload(spec, config: Config, pass_graphs: bool = False) -> dict:
    """What an inspect request sends the worker."""
    return {"spec": spec.to_dict(), "grappler": config.grappler_dict, "pass_graphs": "all" if pass_graphs else "auto"}


def compiler_payload(spec) -> dict:
    """What a request of a compiler other than Grappler sends the worker (model.compilers: ``inspect_op``)."""
    return {"spec": spec.to_dict()}


def profile_payload(spec, config: Config, calls: int = 10) -> dict:
    """What a per-op time request sends the worker: the model run ``calls`` times under the profiler."""
    return {"spec": spec.to_dict(), "grappler": config.grappler_dict, "calls": int(calls), "warmup": 3,
            "max_seconds": 60.0}


def bench_payload(spec, config: Config, reps: int, warmup: int, max_seconds: float) -> dict:
    """What a benchmark request sends the worker (each of its processes, with its ``rotate``)."""
    return {"spec": spec.to_dict(), "grappler": config.grappler_dict, "reps": int(reps), "warmup": int(warmup),
            "max_seconds": float(max_seconds)}


def check_bench_options(reps: object, warmup: object, max_seconds: object, processes: object = 1) -> int:
    """The bounds of a benchmark request, checked before anything runs; the process count as an int."""
    check_range("reps", reps, 3, MAX_REPS)
    check_range("warmup", warmup, 0, MAX_WARMUP)
    check_range("max_seconds", max_seconds, 1, MAX_BENCH_SECONDS)
    if isinstance(processes, float) and processes.is_integer():
        processes = int(processes)
    check_range("processes", processes, 1, MAX_PROCESSES)
    if not isinstance(processes, int):  # a fraction: check_range refused every type but int and float
        raise SpecError("processes", f"{processes!r} is not a whole number of processes")
    return processes


def check_range(name: str, value: object, low: float, high: float) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
        raise SpecError(name, f"{value!r} is out of range; allowed {low}..{high}")


def check_import_device(spec, config: Config) -> None:
    """A source the simulated GPU cannot build (model.sources: ``simulated``) is refused on it."""
    if not source_of(spec).simulated:
        refuse_simulated(config.device, "import")


# How a kernel kills its own process (an assertion, a bad address); SIGKILL comes from outside (the kernel's
# OOM killer, an operator, a CPU-time limit) and is reported as it is.
KERNEL_SIGNALS = ("SIGABRT", "SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE")
