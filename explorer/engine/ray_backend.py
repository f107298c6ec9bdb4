"""The what-if matrix on a Ray cluster: one Ray task per configuration (device + environment flags).

Ray reuses a worker process for tasks with the same runtime_env and keeps its module state, and
TensorFlow reads several flags once per process, so the Ray worker never imports TensorFlow: each
task starts the explorer's own worker subprocess (``runner.WorkerProcess``) with the configuration's
environment built from the task's, minus what Ray adds (``RAY_*``; ``OMP_NUM_THREADS=1``, which would
throttle TensorFlow's thread pools), with PYTHONPATH at the project. The task runs all of its
configuration's cells in that one warm worker and returns plain data; the parent annotates and
caches it like a local result. A worker subprocess that dies is restarted once in the task (the cell
says so); a lost Ray task is retried once by Ray (the task reports its attempt number, so the cell
says that too); after that, or past its deadline, its cells are
marked failed with the reason. GPU cells ask Ray for a GPU, and are refused at once when the
cluster has none (a GPU request Ray cannot place would wait forever).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, NamedTuple, TypeAlias, cast

from ..analysis.annotate import annotate
from ..errors import ExplorerError, SpecError, WorkerError
from ..model.devices import NOTHING_TO_TIME, is_simulated
from ..model.flags import Config
from ..model.results import InspectResult, MatrixRow
from ..model.spec import resolve
from . import matrix
from .engine import Engine
from .interface import Progress
from .runner import PROJECT_ROOT, Limits, WorkerProcess

if TYPE_CHECKING:
    from ray import ObjectRef

RAY_ADDED_ENV = ("OMP_NUM_THREADS", "PYTHONBREAKPOINT", "SPT_NOENV")
# What a job on a remote cluster needs of the project: the package, not the venv, caches or tests.
UPLOAD_EXCLUDES = [".venv", ".cache", ".git", "tests", "assets", "docs", "benchmarks", "*.png"]
LOCAL_CPUS = 2


def clean_environment(env: Mapping[str, str]) -> dict[str, str]:
    """A Ray worker's environment without what Ray added, for the TensorFlow worker it starts."""
    return {k: v for k, v in env.items() if not k.startswith("RAY_") and k not in RAY_ADDED_ENV}


def node_identity() -> dict:
    import ray

    ctx = ray.get_runtime_context()
    return {"hostname": socket.gethostname(), "node_id": ctx.get_node_id(),
            "ip": ray.util.get_node_ip_address(), "task_pid": os.getpid()}


def task_attempt() -> int | None:
    """Which attempt of the running Ray task this is (0 = the first): Ray retries a task whose worker
    process was lost without telling the caller, so the task reports it. Ray has no public call for
    it (2.60); None when this Ray lacks the core worker's."""
    import ray

    try:
        # Ray's typed Worker declares no core_worker (it is set when the worker connects): the one ignore here.
        worker = ray._private.worker.global_worker  # noqa: SLF001 - no public call
        return int(worker.core_worker.get_current_task_attempt_number())  # type: ignore[attr-defined]
    except (AttributeError, TypeError, ValueError):
        return None


def run_configuration(device: str, env: dict[str, str], requests: list[dict], limits: dict) -> dict:
    """The body of a Ray task: every request of one configuration in one worker subprocess."""
    config, lim = Config.make(device, env), Limits(**limits)
    base = clean_environment(dict(os.environ))
    worker: list[WorkerProcess | None] = [None]

    def warm() -> WorkerProcess:
        warm_one = worker[0]
        if warm_one is None or not warm_one.alive():
            warm_one = worker[0] = WorkerProcess(config, lim, base_env=base)
        return warm_one

    def fresh_runs(payload: dict, timeout: float, processes: int) -> list[dict]:
        runs = []
        for i in range(processes):
            one = WorkerProcess(config, lim, base_env=base)
            try:
                result = one.request("bench", dict(payload, rotate=i), timeout)  # first variant alternates
            finally:
                one.close()
            runs.append(dict(result, worker={"pid": one.pid, "startup_s": round(one.startup_s, 3)}))
        return runs

    answers = []
    for req in requests:
        retried: list[str] = []
        answer: dict | None = None
        for attempt in (1, 2):
            try:
                out: list[dict] | dict
                if req["op"] == "bench" and req.get("processes", 1) > 1:
                    out = fresh_runs(req["payload"], req["timeout"], req["processes"])
                else:
                    w = warm()
                    out = w.request(req["op"], req["payload"], req["timeout"])
                    out = [dict(out, worker={"pid": w.pid})] if req["op"] == "bench" else dict(out, worker={"pid": w.pid})
                answer = {"ok": True, "result": out}
            except SpecError as exc:
                answer = {"ok": False, "reason": str(exc)}
            except WorkerError as exc:
                if worker[0] is not None and not worker[0].alive():
                    worker[0].close()
                    worker[0] = None
                if exc.kind == "crash" and attempt == 1:
                    retried.append(str(exc))
                    continue
                answer = {"ok": False, "reason": str(exc)}
            break
        assert answer is not None  # only a first attempt's crash goes round again
        answers.append(dict(answer, attempts=len(retried) + 1, retried_because=retried))
    if worker[0] is not None:
        worker[0].close()
    return {"node": node_identity(), "answers": answers, "ray_attempt": task_attempt()}


def _requests(cell: matrix.Cell, bench: matrix.BenchOptions | None, limits: Limits, need_inspect: bool) -> list[dict]:
    spec, config = resolve(cell.spec).to_dict(), cell.runs_on
    out: list[dict] = []
    if need_inspect:
        out.append({"op": "inspect", "payload": {"spec": spec, "grappler": config.grappler_dict},
                    "timeout": limits.inspect_s})
    if bench is not None and not is_simulated(config.device):
        out.append({"op": "bench", "processes": bench.processes, "timeout": bench.max_seconds + limits.bench_extra_s,
                    "payload": {"spec": spec, "grappler": config.grappler_dict, "reps": bench.reps,
                                "warmup": bench.warmup, "max_seconds": bench.max_seconds}})
    return out


def check_reachable(address: str, timeout: float = 5.0) -> None:
    """Refuse a HOST:PORT nobody answers on at once: ray.init would retry it for minutes."""
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit() or address.startswith("ray://"):
        return  # 'auto', or a form Ray resolves itself
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as exc:
        raise ExplorerError(f"--ray: cannot reach a Ray cluster at {address} ({exc.strerror or exc}); "
                            "give the head node's HOST:6379, 'auto' on a cluster machine, or 'local'") from None


def connect(address: str) -> bool:
    """Connect to (or, with 'local', start) a Ray cluster; True when this call started it."""
    try:
        import ray
    except ImportError:
        raise ExplorerError("--ray needs the ray package: .venv/bin/pip install -r requirements.txt") from None
    if ray.is_initialized():
        return False
    if address == "local":
        try:
            ray.init(num_cpus=LOCAL_CPUS, include_dashboard=False, logging_level=logging.ERROR,
                     runtime_env={"env_vars": {"PYTHONPATH": str(PROJECT_ROOT)}})
        except (OSError, RuntimeError, ValueError) as exc:  # e.g. a TMPDIR too long for Ray's socket paths
            raise ExplorerError(f"--ray local: could not start Ray: {str(exc).splitlines()[0]}") from None
        return True
    check_reachable(address)
    try:
        ray.init(address=address, logging_level=logging.ERROR,
                 runtime_env={"working_dir": str(PROJECT_ROOT), "excludes": UPLOAD_EXCLUDES})
    except (ConnectionError, ValueError, RuntimeError) as exc:
        raise ExplorerError(f"--ray: could not connect to {address}: {str(exc).splitlines()[0]}") from None
    return True


def node_cpus() -> int:
    """The CPUs of the smallest live node: what a timed cell asks for, so it has a node to itself."""
    import ray

    cpus = [n["Resources"].get("CPU", 0) for n in ray.nodes() if n.get("Alive") and n["Resources"].get("CPU", 0) > 0]
    return int(min(cpus)) if cpus else 1


def run(engine: Engine, cells: list[matrix.Cell], address: str, *, bench: matrix.BenchOptions | None = None,
        use_cache: bool = True, on_progress: Progress | None = None, stop: threading.Event | None = None,
        deadline_s: float | None = None, keep_connected: bool = False) -> list[MatrixRow]:
    """Every runnable cell of the matrix on Ray; each comes back with a result or a reason.

    ``keep_connected``: leave a Ray this call started running (the page's server reuses it)."""
    import ray

    started_here = connect(address)
    try:
        return _run(engine, cells, bench, use_cache, on_progress, stop, deadline_s)
    finally:
        if started_here and not keep_connected:
            ray.shutdown()


class _Work(NamedTuple):
    """A cell a Ray task answers, with what the cache already held and the requests the task makes for it."""

    cell: matrix.Cell
    key: str  # its inspect result's key
    cached: dict | None
    cached_bench: dict | None
    requests: list[dict]


_Pending: TypeAlias = "dict[ObjectRef[dict], tuple[list[_Work], float]]"  # a Ray task -> its cells, its deadline


def _run(engine: Engine, cells: list[matrix.Cell], bench: matrix.BenchOptions | None, use_cache: bool,
         on_progress: Progress | None, stop: threading.Event | None, deadline_s: float | None) -> list[MatrixRow]:
    import ray

    limits = engine.pool.limits
    todo = matrix.groups(cells)
    total = sum(len(g) for g in todo) or 1
    done = 0
    gpus = ray.cluster_resources().get("GPU", 0)
    remote = ray.remote(run_configuration)
    pending: _Pending = {}
    for group in todo:
        work: list[_Work] = []
        for cell in group:
            cell.status, cell.reason, cell.row = "planned", "", MatrixRow()
            config = cell.runs_on
            key = engine.result_key("inspect", cell.spec, config)
            cached = engine.stored("inspect", cell.spec, config) if use_cache else None
            cached_bench = None
            if bench is not None and use_cache and not is_simulated(config.device):
                cached_bench = engine.stored("bench", cell.spec, config, bench.extra())
            need_bench = bench is not None and not is_simulated(config.device) and cached_bench is None
            if cached is not None and not need_bench:
                cell.status = "ok"
                matrix.fill(cell, dict(cached, cached=True),
                            dict(cached_bench, cached=True) if cached_bench else None,
                            bench_error=_no_timing(cell, bench))
                done += 1
                continue
            work.append(_Work(cell, key, cached, cached_bench,
                              _requests(cell, bench if need_bench else None, limits, cached is None)))
        if not work:
            continue
        config = work[0].cell.runs_on
        if config.device == "gpu" and gpus < 1:
            for cell, *_ in work:
                cell.status = "unrunnable"
                cell.reason = "the Ray cluster has no GPU, so this GPU cell cannot run (its request would wait forever)"
            done += len(work)
            continue
        options: dict[str, object] = {"num_cpus": node_cpus() if bench is not None else 1, "max_retries": 1,
                                      "retry_exceptions": False}
        if config.device == "gpu":
            options["num_gpus"] = 1
        requests = [r for *_, reqs in work for r in reqs]
        ref = remote.options(**options).remote(config.device, config.env_dict, requests, limits.__dict__)
        budget = deadline_s or (limits.startup_s * 2 + sum(r["timeout"] * 2 for r in requests))
        pending[ref] = (work, time.monotonic() + budget)
    try:
        _wait(engine, pending, bench, stop, on_progress, done, total)
    except BaseException:
        # The caller went away (a page rerun, Ctrl-C): nobody will read these cells, so free the cluster.
        for ref in pending:
            ray.cancel(ref, force=True)
        raise
    return matrix.rows(cells)


def _wait(engine: Engine, pending: _Pending, bench: matrix.BenchOptions | None, stop: threading.Event | None,
          on_progress: Progress | None, done: int, total: int) -> None:
    import ray

    while pending:
        if stop is not None and stop.is_set():
            for ref, (work, _) in pending.items():
                ray.cancel(ref, force=True)
                for cell, *_ in work:
                    cell.status, cell.reason = "stopped", "the matrix was stopped before this cell ran"
            break
        ready, _ = ray.wait(list(pending), num_returns=1, timeout=1.0)
        now = time.monotonic()
        for ref in list(pending):
            work, deadline = pending[ref]
            if ref in ready:
                pending.pop(ref)
                _collect(engine, ref, work, bench)
            elif now > deadline:
                pending.pop(ref)
                ray.cancel(ref, force=True)
                for cell, *_ in work:
                    cell.status, cell.reason = "failed", "timed out on Ray (node lost or resources unavailable)"
            else:
                continue
            done += len(work)
            if on_progress:
                on_progress({"fraction": done / total, "message": f"{done}/{total} cells"})


def _no_timing(cell: matrix.Cell, bench: matrix.BenchOptions | None) -> str:
    if bench is not None and is_simulated(cell.runs_on.device):
        return NOTHING_TO_TIME
    return ""


def _collect(engine: Engine, ref: ObjectRef[dict], work: list[_Work], bench: matrix.BenchOptions | None) -> None:
    """A finished task's answers into its cells; a lost task's cells failed with Ray's reason."""
    import ray

    out: dict | None
    try:
        out = ray.get(ref)
    except ray.exceptions.RayTaskError as exc:
        reason = f"the Ray task failed: {exc.cause}"
        out = None
    except ray.exceptions.RayError as exc:
        first = (str(exc).strip().splitlines() or [""])[0]
        reason = f"the Ray task was lost ({type(exc).__name__}: {first}), after a retry"
        out = None
    if out is None:
        for cell, *_ in work:
            cell.status, cell.reason = "failed", reason
        return
    answers = iter(out["answers"])
    for cell, key, cached, cached_bench, requests in work:
        inspect_result: Mapping | None = cached and dict(cached, cached=True)
        bench_result: Mapping | None = cached_bench and dict(cached_bench, cached=True)
        bench_error, attempts, failure = _no_timing(cell, bench), 1, ""
        retried: list[str] = []
        for req in requests:
            answer = next(answers)
            retried += answer["retried_because"]
            attempts = max(attempts, answer["attempts"])
            if not answer["ok"]:
                if req["op"] == "inspect":
                    failure = answer["reason"]
                else:
                    bench_error = answer["reason"]
                continue
            if req["op"] == "inspect":  # the task's answer: JSON of an InspectResult's worker part
                inspect_result = annotate({**cast(InspectResult, answer["result"]),
                                           "config": cell.runs_on.to_dict(), "cached": False, "key": key})
                engine.store("inspect", cell.spec, cell.runs_on, inspect_result)
            else:
                assert bench is not None  # a bench request is made only with the bench options (_requests)
                try:
                    bench_result = matrix.store_bench(engine, cell, bench, answer["result"])
                except ExplorerError as exc:
                    bench_error = str(exc)
        if failure:
            cell.status, cell.reason = "failed", failure + (f" (after a retry: {retried[0]})" if retried else "")
            matrix.fill(cell, None, node=out["node"])
        else:
            cell.status = "ok"
            matrix.fill(cell, inspect_result, bench_result, node=out["node"], bench_error=bench_error)
        cell.row.update({"attempts": attempts, "retried_because": retried, "ray_retries": out.get("ray_attempt")})
