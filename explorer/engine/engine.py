"""The engine: validated requests in, plain result data out.

It checks a spec and a configuration before any TensorFlow runs, routes the request to the warm worker of that
configuration, keeps benchmarks from running beside anything else (two timings sharing two cores measure each
other), caches graph results on disk, and adds the analysis that needs no TensorFlow to what the worker returns.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import cast

from ..analysis.agreement import broken
from ..analysis.annotate import annotate, annotate_bench, annotate_replicated, annotate_sweep
from ..analysis.replicated import QUICK_MODE, quick
from ..errors import SpecError, WorkerError
from ..model import compilers
from ..model.experiment_parts import Bench
from ..model.devices import refuse_simulated
from ..model.hooks import hook
from ..model.flags import Config, ConfigLike
from ..model.limits import MAX_SWEEP_POINTS
from ..model.results import BenchResult, Fingerprint, InspectResult, SweepResult, WorkerInfo
from ..model.spec import resolve
from . import compare, diagnose, fix_check, fixes, machine_profile, model_failure, reference, warmup
from .admission import HOST, AdmissionQueue
from .cache import DEFAULT_CACHE_DIR, ResultCache, inspect_key
from .inflight import InFlight
from .interface import Progress
from .payloads import (KERNEL_SIGNALS, bench_payload, check_bench_options, check_import_device, check_range,
                       compiler_payload, inspect_payload, profile_payload)
from .pool import MAIN, Pool
from .runner import Limits, WorkerProcess

MAX_PROFILE_CALLS = 200  # profiled calls of one per-op time request (the other bounds: model.limits)


class Engine:
    """The live engine: worker processes per configuration, one admission queue, a disk cache of results.

    It implements ``interface.EngineInterface``; ``replay.ReplayEngine`` is the same engine answered by
    recordings instead of worker processes (it replaces ``_run``, ``_run_fresh`` and the pool's queries).
    Every worker request takes one path, ``_request``: its admission slot, then the configuration's warm
    worker (``_run``) or a fresh one (``_run_fresh``). Helpers (``fixes``, ``machine_profile``, ``warmup``)
    use the public calls only.
    """

    name = "live"  # what the page keys its per-engine caches by (a ReplayEngine names its directory)

    def __init__(self, limits: Limits | None = None, cache_dir: Path | str | None = DEFAULT_CACHE_DIR):
        self.pool = Pool(limits)
        self.cache = ResultCache(Path(cache_dir) if cache_dir else None)
        self.queues: dict[str, AdmissionQueue] = {}
        self._lock = threading.Lock()
        self._inflight = InFlight()  # inspect keys being computed now

    def queue(self, device: str) -> AdmissionQueue:
        """The admission queue of a device's requests: the host's, whatever the device. Every request works on
        the host's cores (TF's import, Grappler, a GPU's kernel launches and timing loop): all take turns."""
        with self._lock:
            return self.queues.setdefault(HOST, AdmissionQueue())

    def is_warm(self, config: ConfigLike) -> bool:
        return self.pool.has_warm(Config.coerce(config))

    # ---- results by request: what the page keys its session by and asks before it waits ----------

    def result_key(self, kind: str, spec, config: ConfigLike = None, extra: dict | None = None) -> str:
        return ResultCache.key(kind, resolve(spec), Config.coerce(config), extra)

    def stored(self, kind: str, spec, config: ConfigLike = None, extra: dict | None = None) -> dict | None:
        return self.cache.get(self.result_key(kind, spec, config, extra))

    def is_ready(self, kind: str, spec, config: ConfigLike = None, extra: dict | None = None) -> bool:
        return self.stored(kind, spec, config, extra) is not None

    def store(self, kind: str, spec, config: ConfigLike, result: Mapping[str, object],
              extra: dict | None = None) -> None:
        self.cache.put(self.result_key(kind, spec, config, extra), result)

    def prestart(self, config: ConfigLike, *, after_s: float = 0.0) -> None:
        """Start a configuration's worker in ``after_s`` seconds, in the background (``warmup``): the page asks for
        the likely next one (oneDNN flipped) while the person reads the current one."""
        warmup.prestart(self, Config.coerce(config), after_s)

    def start_worker(self, config: ConfigLike, role: str = MAIN) -> None:
        """Start a configuration's worker of ``role`` (``pool.MAIN``, or the agreement check's ``REFERENCE``) now,
        unless it is warm or the pool has no room to keep one more; a TensorFlow import is seconds of CPU, so it
        takes a graph slot (never beside a benchmark timing)."""
        config = Config.coerce(config)
        if self.pool.has_warm(config, role) or not self.pool.has_room():
            return
        with self.queue(config.device).slot("graph"):
            self.pool.get(config, role)

    def prepare(self, name: str, experiments: list, configs: Sequence[ConfigLike] = (),
                then: Callable[[InspectResult], object] | None = None) -> bool:
        """The results of ``experiments`` made in the background, then the workers of ``configs`` started
        (``warmup``); ``then`` gets each inspect result. Once per ``name``: False when asked for already."""
        return warmup.prepare(self, name, experiments, list(configs), then)

    def request(self, config: ConfigLike, op: str, payload: dict, *, slot: str | None = "graph",
                timeout: float | None = None, fresh: bool = False,
                on_progress: Progress | None = None) -> tuple[dict, WorkerInfo]:
        """A worker request of the engine's helpers (``fixes``, ``machine_profile``): the answer and how it ran.
        ``slot``: the admission slot it takes ("graph", "bench"; None: the caller holds one)."""
        return self._request(Config.coerce(config), op, payload, slot=slot, timeout=timeout, fresh=fresh,
                             on_progress=on_progress)

    def _request(self, config: Config, op: str, payload: dict, *, slot: str | None = "graph",
                 timeout: float | None = None, fresh: bool = False,
                 on_progress: Progress | None = None) -> tuple[dict, WorkerInfo]:
        """The one path of every worker request: its admission slot, then the configuration's warm worker (or a
        fresh one, closed afterwards)."""
        timeout = self.pool.limits.inspect_s if timeout is None else timeout
        run = self._run_fresh if fresh else self._run
        if slot is None:
            return run(config, op, payload, timeout, on_progress)
        with self.queue(config.device).slot(slot, on_progress):
            return run(config, op, payload, timeout, on_progress)

    def _run(self, config: Config, op: str, payload: dict, timeout: float,
             on_progress: Progress | None = None) -> tuple[dict, WorkerInfo]:
        started = time.perf_counter()
        fresh = not self.pool.has_warm(config)
        if fresh and on_progress:
            on_progress({"fraction": 0.0, "message": "starting TensorFlow in a new worker process (a few seconds)"})
        worker: WorkerProcess = self.pool.get(config)
        try:
            result = worker.request(op, payload, timeout, on_progress)
        except WorkerError as exc:
            if exc.kind in ("crash", "timeout", "memory"):
                self.pool.discard(worker)
            raise
        info: WorkerInfo = {"pid": worker.pid, "new_process": fresh,
                            "startup_s": round(worker.startup_s, 3) if fresh else 0.0,
                            "wall_s": round(time.perf_counter() - started, 3)}
        return result, info

    def fingerprint(self, config: ConfigLike = None) -> Fingerprint:
        config = Config.coerce(config)
        with self.queue(config.device).slot("graph"):
            worker = self.pool.get(config)
        return worker.fingerprint

    def inspect(self, spec, config: ConfigLike = None, *, on_progress: Progress | None = None, use_cache: bool = True,
                pass_graphs: bool = False) -> InspectResult:
        """The model's graphs at every stage, the fusions found, Grappler's own account and the agreement check
        (its reference beside the fused run where a second worker is warm: ``reference``); the near-misses'
        setting-fixes unchecked (``check_fixes``). The graph after every Grappler pass comes with it for a model of
        up to ``model.limits.PASS_GRAPHS_AUTO_NODES`` nodes; a bigger one's only with ``pass_graphs`` (a request of its own)."""
        spec, config = resolve(spec), Config.coerce(config)
        check_import_device(spec, config)
        key = inspect_key(spec, config, pass_graphs)
        if not use_cache:
            return self._inspect(spec, config, key, on_progress, pass_graphs)
        cached = cast("InspectResult | None", self.cache.get(key))  # JSON of what _inspect kept under its key
        if cached is not None:
            return {**cached, "cached": True}
        def waiting() -> None:
            if on_progress:
                on_progress({"fraction": 0.0, "message": "another session is computing this same configuration; "
                             "waiting for its result"})

        computed = self._inflight.run(key, lambda: self._inspect(spec, config, key, on_progress, pass_graphs),
                                      self.pool.limits.startup_s + self.pool.limits.inspect_s, waiting)
        if computed is not None:
            return computed
        cached = cast("InspectResult | None", self.cache.get(key))  # what the other session's computation kept
        return {**cached, "cached": True, "shared": True} if cached is not None else \
            self.inspect(spec, config, on_progress=on_progress, pass_graphs=pass_graphs)

    def check_fixes(self, spec, config: ConfigLike, result: InspectResult) -> InspectResult:
        """An inspect result whose near-misses' setting-fixes are settled by running them (``fix_check``: a
        setting is offered only where its run fused the chain); what the fusion report asks for. The checked
        result is kept under the inspect result's key, so a check runs once per result."""
        spec, config = resolve(spec), Config.coerce(config)
        checked = fix_check.check(self, spec, config, result)
        stored = self.cache.get(result["key"]) if checked is not result and result.get("key") else None
        if stored is not None:
            self.cache.put(result["key"], dict(stored, report=checked["report"]))
        return checked

    def _inspect(self, spec, config: Config, key: str, on_progress: Progress | None,
                 pass_graphs: bool = False) -> InspectResult:
        try:
            answer, info = self._inspected(config, inspect_payload(spec, config, pass_graphs), on_progress)
        except WorkerError as exc:
            if exc.kind != "tensorflow":
                raise
            raise model_failure.explained(self, spec, config, exc) from None  # where oneDNN is what fails it
        result = annotate({**cast(InspectResult, answer), "config": config.to_dict(), "worker": info, "cached": False,
                           "key": key, "spec": spec.public_dict()})
        if not broken(result.get("agreement")):  # a failed call is asked again, never answered from the cache
            self.cache.put(key, result)
        return result

    def _inspected(self, config: Config, payload: dict, on_progress: Progress | None) -> tuple[dict, WorkerInfo]:
        op = compilers.FIRST.inspect_op
        with self.queue(config.device).slot("graph", on_progress):
            beside = reference.start(self, config, payload)  # the check's unfused run, in a second worker
            try:
                answer, info = self._request(config, op, beside.payload if beside else payload, slot=None,
                                             on_progress=on_progress)
                answer = beside.finish(answer) if beside else answer
            except WorkerError as exc:
                how = next((f"killed by {s}" for s in KERNEL_SIGNALS if f"killed by {s}" in str(exc)), None)
                if exc.kind != "crash" or how is None or config.device != "cpu":
                    raise
                # A fused kernel's abort killed the worker: a new one shows Grappler's graphs made without running
                # them, and whether the unfused graph runs. If that dies too, the first error stands.
                try:
                    answer, info = self._request(config, op, dict(payload, aborted=how), slot=None,
                                                 on_progress=on_progress)
                except WorkerError:
                    raise exc from None
            finally:
                if beside:
                    beside.close()
        if not beside:
            reference.start_later(self, config, answer)
        return answer, info
    def xla(self, spec, config: ConfigLike = None, *, on_progress: Progress | None = None, use_cache: bool = True) -> dict:
        """The model compiled by XLA (jit_compile=True): HLO stages, fusions mapped to TF ops, compile time."""
        return self._compiled(compilers.BY_ID["xla"], spec, config, on_progress, use_cache)

    def _compiled(self, compiler: compilers.Compiler, spec, config: ConfigLike, on_progress: Progress | None,
                  use_cache: bool) -> dict:
        """What a compiler other than Grappler made of the model (its ``inspect_op``), with its analysis."""
        spec, config = resolve(spec), Config.coerce(config)
        check_import_device(spec, config)
        if not compiler.simulated:
            refuse_simulated(config.device, compiler.id)
        key = ResultCache.key(compiler.inspect_op, spec, config)
        cached = self.cache.get(key) if use_cache else None
        if cached is not None:
            return dict(cached, cached=True)
        result, info = self._request(config, compiler.inspect_op, compiler_payload(spec), on_progress=on_progress)
        result = hook(compiler.annotate)(dict(result, config=config.to_dict(), worker=info, cached=False, key=key))
        self.cache.put(key, result)
        return result

    def profile(self, spec, config: ConfigLike = None, *, calls: int = 10, on_progress: Progress | None = None,
                use_cache: bool = True) -> dict:
        """Per-op time of the model's run: each executed node's median over ``calls`` profiled calls
        (``worker.op_time``). It times, so it waits for the bench slot: no other timing shares the cores."""
        spec, config = resolve(spec), Config.coerce(config)
        refuse_simulated(config.device, "bench")
        check_range("calls", calls, 1, MAX_PROFILE_CALLS)
        key = ResultCache.key("profile", spec, config, {"calls": int(calls)})
        cached = self.cache.get(key) if use_cache else None
        if cached is not None:
            return dict(cached, cached=True)
        result, info = self._request(config, "profile", profile_payload(spec, config, calls), slot="bench",
                                     on_progress=on_progress)
        result = dict(result, config=config.to_dict(), worker=info, cached=False, key=key,
                      measured_at=time.strftime("%Y-%m-%d %H:%M:%S"))
        self.cache.put(key, result)
        return result

    def fix(self, spec, config: ConfigLike = None, *, apply: list[str] | None = None, out: str | None = None,
            processes: int = 3, reps: int = 30, warmup: int = 3, max_seconds: float = 30.0, measure: bool = True,
            on_progress: Progress | None = None) -> dict:
        """An imported model's near-misses rewritten into fusable form, checked and timed (``engine.fixes``)."""
        return fixes.run(self, spec, config, apply=apply, out=out, processes=processes, reps=reps, warmup=warmup,
                         max_seconds=max_seconds, measure=measure, on_progress=on_progress)

    def compare(self, a_spec, a_config: ConfigLike, b_spec, b_config: ConfigLike, *, processes: int = 3,
                reps: int = 30, warmup: int = 3, max_seconds: float = 30.0,
                on_progress: Progress | None = None) -> dict:
        """A against B (``engine.compare``): each model as served under its configuration, a fresh worker per
        side and round, the speedup of B over A replicated over rounds with its interval."""
        return compare.run(self, a_spec, a_config, b_spec, b_config, processes=processes, reps=reps, warmup=warmup,
                           max_seconds=max_seconds, on_progress=on_progress)

    def diagnose(self, spec, config: ConfigLike = None, *, repro: str | None = None, ways: bool = True, reps: int = 20,
                 out: str | None = None, on_progress: Progress | None = None) -> dict:
        return diagnose.run(self, spec, config, repro=repro, ways=ways, reps=reps, out=out, on_progress=on_progress)

    def bench(self, spec, config: ConfigLike = None, *, reps: int = Bench.reps, warmup: int = Bench.warmup,
              max_seconds: float = float(Bench.seconds), processes: int = 1, on_progress: Progress | None = None,
              compiler: str = compilers.FIRST.id) -> BenchResult:
        """Fused against unfused, interleaved, with proof of which graph each variant ran.

        ``compiler`` (model.compilers) another than Grappler, or "both": that compiler's benchmark, which times
        three variants (unfused, Grappler-fused, its own; XLA's: ``bench_xla``).
        ``processes`` > 1 repeats the (two-way) benchmark in that many fresh worker processes, one after
        another, each with its own warm-up (``max_seconds`` is per process): the speedup's interval
        then includes the process-to-process variation. 1 is the quick single-process run.
        """
        spec, config = resolve(spec), Config.coerce(config)
        timed = compilers.timed(compiler)  # SpecError for a name that is no compiler
        refuse_simulated(config.device, "bench")
        processes = self.check_bench_options(reps, warmup, max_seconds, processes)
        if processes > 1 and timed is not compilers.FIRST:
            raise SpecError("processes", "the three-way benchmark with XLA runs in one process: use 1 process "
                            "with compiler xla or both")
        payload = bench_payload(spec, config, reps, warmup, max_seconds)
        timeout = float(max_seconds) + self.pool.limits.bench_extra_s
        admission = self.queue(config.device)
        load_before = os.getloadavg()[0]
        with admission.slot("bench", on_progress) as slot:
            if processes == 1:
                answer, info = self._request(config, timed.bench_op, payload, slot=None, timeout=timeout,
                                             on_progress=on_progress)
            else:
                runs = self._replicates(config, payload, timeout, processes, on_progress)
            overlaps = admission.overlaps
        extra: BenchResult = {"config": config.to_dict(), "spec": spec.public_dict(), "isolation": {
            "others_running_at_start": slot["others_running_at_start"], "overlaps_seen": overlaps,
            "load_before": round(load_before, 2), "load_after": round(os.getloadavg()[0], 2)},
            "measured_at": time.strftime("%Y-%m-%d %H:%M:%S")}
        if processes > 1:
            runs = [dict(run, config=config.to_dict()) for run in runs]  # what the annotation labels by
            return {**annotate_replicated(runs), **extra, "worker": runs[0]["worker"]}
        if timed is not compilers.FIRST:
            return hook(timed.annotate_bench)({**answer, "worker": info, **extra})
        result = annotate_bench({**cast(BenchResult, answer), "worker": info, **extra})  # answer: worker.bench's
        result["summary"]["speedup"] = quick(result["summary"]["speedup"])
        return {**result, "mode": QUICK_MODE, "processes": 1}

    @staticmethod
    def check_bench_options(reps: object, warmup: object, max_seconds: object, processes: object = 1) -> int:
        return check_bench_options(reps, warmup, max_seconds, processes)  # payloads': the bounds, checked

    def _replicates(self, config: Config, payload: dict, timeout: float, processes: int,
                    on_progress: Progress | None) -> list[dict]:
        """The benchmark in ``processes`` fresh workers in turn (never the pool's warm one, whose
        state one run would share with the next); the caller holds the bench slot throughout."""
        runs: list[dict] = []
        for i in range(processes):
            def progress(p: dict, i: int = i) -> None:
                if on_progress:
                    on_progress({"fraction": (i + float(p.get("fraction") or 0)) / processes,
                                 "message": f"process {i + 1}/{processes}: {p.get('message', '')}"})

            progress({"fraction": 0.0, "message": "starting TensorFlow in a new worker process"})
            # Which variant goes first alternates by process: no variant always leads.
            result, info = self._request(config, "bench", dict(payload, rotate=i), slot=None, timeout=timeout,
                                         fresh=True, on_progress=progress)
            runs.append(dict(result, worker=info))
        return runs

    def _run_fresh(self, config: Config, op: str, payload: dict, timeout: float,
                   on_progress: Progress | None) -> tuple[dict, WorkerInfo]:
        """One request in a worker process of its own, closed afterwards."""
        started = time.perf_counter()
        worker = self.pool.start(config)  # its memory counts against the engine's budget too
        try:
            result = worker.request(op, payload, timeout, on_progress)
        finally:
            worker.close()
        return result, {"pid": worker.pid, "new_process": True, "startup_s": round(worker.startup_s, 3),
                        "wall_s": round(time.perf_counter() - started, 3)}

    def sweep(self, spec, config: ConfigLike = None, *, param: str, values: list, reps: int = 30, warmup: int = 3,
              max_seconds: float = 30.0, on_progress: Progress | None = None,
              compiler: str = compilers.FIRST.id) -> SweepResult:
        """bench() at each value of one size parameter: the points, their table, and where fusion starts to pay."""
        spec = resolve(spec)
        if param not in spec.p or not isinstance(spec.p[param], int) or isinstance(spec.p[param], bool):
            sizes = [k for k, v in spec.p.items() if isinstance(v, int) and not isinstance(v, bool)]
            raise SpecError("sweep.param", f"{param!r} is not a size of this model; choose one of {sizes}")
        if not values or len(values) > MAX_SWEEP_POINTS:
            raise SpecError("sweep.values", f"give 1..{MAX_SWEEP_POINTS} values")
        specs = [spec.with_params(**{param: v}) for v in values]  # all checked before anything runs
        points = []
        for i, point_spec in enumerate(specs):
            def progress(p: dict, i: int = i) -> None:
                if on_progress:
                    on_progress({"fraction": (i + p.get("fraction", 0)) / len(specs),
                                 "message": f"{param}={values[i]}: {p.get('message', '')}"})

            result = self.bench(point_spec, config, reps=reps, warmup=warmup, max_seconds=max_seconds,
                                on_progress=progress, compiler=compiler)
            points.append({"value": point_spec.p[param], "result": result})
        return annotate_sweep(param, points)

    def machine(self, config: ConfigLike = None, *, fingerprint: dict | None = None, use_cache: bool = True,
                measure: bool = True, request: dict | None = None, on_progress: Progress | None = None) -> dict | None:
        """This machine's bandwidth curve and matmul rate, measured once per machine (engine.machine_profile)."""
        return machine_profile.profile(self, Config.coerce(config), self.cache, fingerprint=fingerprint,
                                       use_cache=use_cache, measure=measure, request=request, on_progress=on_progress)

    def traffic(self, result: dict, config: ConfigLike = None, *, measure: bool = True,
                on_progress: Progress | None = None) -> dict:
        """A benchmark result with its memory-traffic report (analysis.traffic) as ``result["traffic"]``."""
        return machine_profile.attach(self, result, Config.coerce(config or result.get("config")), measure=measure,
                                      on_progress=on_progress)

    def close(self) -> None:
        self.pool.close()
