"""The engine's interface: every call the page and the command line make, written down once.

``Engine`` (live worker processes) and ``ReplayEngine`` (recorded answers, no TensorFlow) both implement
all of it; the page is given the one it uses (``page.render(engine)``) and hands it to its panels.
tests/unit/test_engine_interface.py checks that both match these signatures.

Results are plain data (``model.results``). ``spec`` is anything ``model.spec.resolve`` takes (a dict as
the page and the CLI build it, or a resolved spec); ``config`` a ``Config``, its dict, or None (the
CPU with TensorFlow's defaults). ``on_progress`` is called with {"fraction", "message"} while a
request waits or runs. Errors are ``ExplorerError``s (``SpecError`` for a request that is wrong).

A result is known by ``result_key(kind, spec, config, extra)``: the engine's cache key of a request of
that kind ("inspect", "xla", "bench", "sweep", ...; ``extra`` what else tells two requests apart,
such as {"pass_graphs": True} for an inspect result with the graph after every pass). The page keys
what it keeps per session by it, and asks ``is_ready`` before a call, to say whether it will wait.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Protocol, runtime_checkable

from ..model import compilers
from ..model.experiment_parts import Bench
from ..model.flags import ConfigLike
from ..model.results import BenchResult, Fingerprint, InspectResult, SweepResult
from .admission import AdmissionQueue

# What ``on_progress`` is: called with {"fraction", "message"} (and what else a step adds); its return is not read.
Progress = Callable[[dict], object]


@runtime_checkable
class EngineInterface(Protocol):
    name: str  # what the page keys its per-engine caches by ("live", "replay:DIR")

    def inspect(self, spec, config: ConfigLike = None, *, on_progress: Progress | None = None,
                use_cache: bool = True, pass_graphs: bool = False) -> InspectResult:
        """The model's graphs at every stage, the fusions found and Grappler's own account."""

    def check_fixes(self, spec, config: ConfigLike, result: InspectResult) -> InspectResult:
        """An inspect result with its near-misses' setting-fixes run and kept only where they fused the chain
        (what the fusion report shows; up to a few more inspect requests, once per result)."""

    def xla(self, spec, config: ConfigLike = None, *, on_progress: Progress | None = None,
            use_cache: bool = True) -> dict:
        """The model compiled by XLA: HLO stages, XLA's fusions mapped to the model's TF ops."""

    def profile(self, spec, config: ConfigLike = None, *, calls: int = 10, on_progress: Progress | None = None,
                use_cache: bool = True) -> dict:
        """Per-op time of the model's run: each executed node's median time over ``calls`` profiled calls."""

    def fix(self, spec, config: ConfigLike = None, *, apply: list[str] | None = None, out: str | None = None,
            processes: int = 3, reps: int = 30, warmup: int = 3, max_seconds: float = 30.0, measure: bool = True,
            on_progress: Progress | None = None) -> dict:
        """An imported model's near-misses rewritten into the form the remapper fuses: which fixes applied to
        which chains, the fusions before and after, the outputs against the original's, the speedup of all
        the fixes together and of each alone (``measure``), the near-misses ranked by time, and the fixed
        model written at ``out``."""

    def compare(self, a_spec, a_config: ConfigLike, b_spec, b_config: ConfigLike, *, processes: int = 3,
                reps: int = 30, warmup: int = 3, max_seconds: float = 30.0,
                on_progress: Progress | None = None) -> dict:
        """A against B: each model as served under its own configuration, timed in fresh worker processes, round
        after round; the speedup of B over A with an interval over rounds, and what each side executed."""

    def diagnose(self, spec, config: ConfigLike = None, *, repro: str | None = None, ways: bool = True,
                 reps: int = 20, out: str | None = None, on_progress: Progress | None = None) -> dict:
        """Whether the fusion breaks the model (fails, aborts, other numbers than the remapper-off graph), the
        fused node responsible (each fused node's ops run alone in a fresh process), the ways around it (each
        run: remapper off, oneDNN flipped, for an imported model the fusion prevented by a rewrite kept at
        ``out``) and that node's standalone repro script (written at ``repro``)."""

    def bench(self, spec, config: ConfigLike = None, *, reps: int = Bench.reps, warmup: int = Bench.warmup,
              max_seconds: float = float(Bench.seconds), processes: int = 1, on_progress: Progress | None = None,
              compiler: str = compilers.FIRST.id) -> BenchResult:
        """Fused against unfused (and another compiler's variant, for its id or "both"), with proof of what ran."""

    def sweep(self, spec, config: ConfigLike = None, *, param: str, values: list, reps: int = 30, warmup: int = 3,
              max_seconds: float = 30.0, on_progress: Progress | None = None,
              compiler: str = compilers.FIRST.id) -> SweepResult:
        """``bench`` at each value of one size parameter, and where fusion starts to pay."""

    def traffic(self, result: dict, config: ConfigLike = None, *, measure: bool = True,
                on_progress: Progress | None = None) -> dict:
        """A benchmark result with its memory-traffic report as ``result["traffic"]``."""

    def machine(self, config: ConfigLike = None, *, fingerprint: dict | None = None, use_cache: bool = True,
                measure: bool = True, request: dict | None = None,
                on_progress: Progress | None = None) -> dict | None:
        """This machine's bandwidth curve and matmul rate (measured once, then kept)."""

    def fingerprint(self, config: ConfigLike = None) -> Fingerprint:
        """What TensorFlow sees where a configuration runs: version, devices, CPU, flags."""

    def is_warm(self, config: ConfigLike) -> bool:
        """Whether a request of this configuration starts at once (no TensorFlow to import first)."""

    def prestart(self, config: ConfigLike, *, after_s: float = 0.0) -> None:
        """Start this configuration's worker in the background after ``after_s`` s (the likely next question)."""

    def prepare(self, name: str, experiments: list, configs: Sequence[ConfigLike] = (),
                then: Callable[[InspectResult], object] | None = None) -> bool:
        """Make these experiments' results in the background, then start the workers of ``configs`` (a lesson
        prepared ahead; the server's first result); ``then`` gets each inspect result. Once per ``name``."""

    def result_key(self, kind: str, spec, config: ConfigLike = None, extra: dict | None = None) -> str:
        """The key a result of this request is known by (the same for the same request)."""

    def is_ready(self, kind: str, spec, config: ConfigLike = None, extra: dict | None = None) -> bool:
        """True when the result of this request is answered at once, with nothing to run."""

    def stored(self, kind: str, spec, config: ConfigLike = None, extra: dict | None = None) -> dict | None:
        """The stored result of this request, or None; never runs anything."""

    def store(self, kind: str, spec, config: ConfigLike, result: Mapping[str, object],
              extra: dict | None = None) -> None:
        """Keep a result made elsewhere (a matrix cell's benchmark, a Ray task's answer) under its key."""

    def queue(self, device: str) -> AdmissionQueue:
        """The admission queue requests of this device wait in (one for the host's cores)."""

    @staticmethod
    def check_bench_options(reps: object, warmup: object, max_seconds: object, processes: object = 1) -> int:
        """The bounds of a benchmark request, checked before anything runs; the process count as an int."""

    def close(self) -> None:
        """Stop every worker process this engine started."""
