"""The parent side of the worker processes: start, talk to, watch and replace them.

One worker process per (device, environment flags): TensorFlow reads several flags once, at
import or first use, so a process cannot change configuration. Workers stay warm between
requests, each serves one request at a time, and the pool (``pool``) evicts the least recently used idle
worker when it is full. A worker that dies, hangs past its deadline or grows past its memory
cap is killed and reported as a ``WorkerError``; the next request starts a fresh one.

Every file a worker writes lies in its own directory, which the parent owns: TMPDIR points there,
and each request gets a folder of its own in it (the model's unpacked copy, AutoGraph's generated
files), removed by the parent as soon as the request ends, whether the worker answered, crashed,
overran its deadline or its memory cap, or was killed.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from ..errors import SpecError, WorkerError
from . import scratch
from .admission import MEMORY_BUDGET, MemoryBudget
from .interface import Progress
from ..model.devices import is_simulated
from ..model.flags import ENV_FLAGS, Config
from ..model.results import Fingerprint

log = logging.getLogger(__name__)

PROJECT_ROOT = Path(__file__).resolve().parents[2]
# What the worker logs: each remapper fusion and every Grappler pass (with a graph dump per pass),
# and every pass of an XLA compile (with the module dumped after each pass that changed it).
VMODULE = "remapper=2,meta_optimizer=4,hlo_pass_pipeline=2"
MEMORY_POLL_S = 0.25  # how often the parent reads a busy worker's resident memory


MAX_WORKERS = 4
MAX_WORKER_BYTES = 6 << 30


@dataclass(frozen=True)
class Limits:
    startup_s: float = 120.0  # TensorFlow's import takes ~3 s here; CI machines can be slower
    inspect_s: float = 120.0
    bench_extra_s: float = 120.0  # on top of the benchmark's own time budget
    # Resident memory of one worker, and of all of them together: max_workers caps fit the budget
    # (6 GiB each on a 32 GiB machine; 4.4 GiB on a 24 GiB one), and a worker starts only while its cap fits.
    memory_bytes: int = min(MAX_WORKER_BYTES, MEMORY_BUDGET // MAX_WORKERS)
    max_workers: int = MAX_WORKERS
    idle_s: float = 900.0  # a worker unused this long is stopped
    # A reference of inspect's check longer than this gets its configuration a second worker that runs it beside
    # the fused run (engine.reference); None: never.
    beside_after_s: float | None = 0.25
    memory_budget: int = MEMORY_BUDGET


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(-code).name
    except ValueError:
        return f"signal {-code}"


class WorkerProcess:
    """One live ``python -m explorer.worker`` and the pipe protocol to it."""

    def __init__(self, config: Config, limits: Limits, base_env: Mapping[str, str] | None = None,
                 budget: MemoryBudget | None = None, make_room: Callable[[], bool] = lambda: False,
                 role: str = "main", owner: str = ""):
        """``base_env``: the environment to start from (default: this process's); a Ray task passes
        its own with Ray's additions removed. ``budget``: the engine's memory budget, which this worker's
        cap is held from while it lives (``make_room`` stops an idle worker to free some). ``role``: what the
        pool keeps it for (``pool.MAIN``, ``pool.REFERENCE``), in its environment as EXPLORER_WORKER_ROLE; ``owner``:
        the pool that started it, as EXPLORER_WORKER_OWNER (which engine a worker process belongs to)."""
        self.role, self.owner = role, owner
        self._budget: MemoryBudget | None = None
        self._held = 0
        if budget is not None:
            budget.acquire(limits.memory_bytes, make_room, limits.startup_s)
            self._budget, self._held = budget, limits.memory_bytes
        try:
            self._start(config, limits, base_env)
        except BaseException:  # nothing of a worker that did not start stays: process, directory, memory share
            if hasattr(self, "proc"):
                self.kill()
            if hasattr(self, "workdir"):
                shutil.rmtree(self.workdir, ignore_errors=True)
            self._release()
            raise

    def _start(self, config: Config, limits: Limits, base_env: Mapping[str, str] | None) -> None:
        self.config = config
        self._base_env: Mapping[str, str] = os.environ if base_env is None else base_env
        self.limits = limits
        self.lock = threading.Lock()
        self.last_used = time.monotonic()
        self.requests = 0
        self._ids = itertools.count(1)
        self.workdir = scratch.folder("worker")
        self.dump_dir = os.path.join(self.workdir, "dumps")
        os.makedirs(self.dump_dir)
        self.tmp_dir = os.path.join(self.workdir, "tmp")  # the worker's TMPDIR between requests
        os.makedirs(self.tmp_dir)
        self.stderr_path = os.path.join(self.workdir, "stderr.log")
        self._stderr = open(self.stderr_path, "w+b")
        env = self._environment()
        self.started_at = time.monotonic()  # when the process was spawned (for age and ordering)
        started = time.perf_counter()
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "explorer.worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr,
            env=env, cwd=str(PROJECT_ROOT), text=True, bufsize=1, start_new_session=True,
        )
        # Both pipes were asked for (PIPE), so Popen made them.
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._to_worker: IO[str] = self.proc.stdin
        self._from_worker: IO[str] = self.proc.stdout
        self._lines: queue.Queue[str | None] = queue.Queue()  # None: the worker closed its stdout
        self._rss_at = 0.0
        threading.Thread(target=self._read, daemon=True).start()
        ready = self._next(time.monotonic() + limits.startup_s, "start", limits.startup_s)
        if not ready.get("ready"):
            error = ready.get("error") or {}
            self.kill()
            raise WorkerError("tensorflow", error.get("message", "the worker failed to start"), error.get("detail", ""))
        self.fingerprint: Fingerprint = ready["fingerprint"]
        self.startup_s = time.perf_counter() - started

    def _environment(self) -> dict[str, str]:
        env = {k: v for k, v in self._base_env.items() if k not in _OWNED_ENV}
        env.update(self.config.env_dict)
        env["TF_CPP_VMODULE"] = VMODULE
        env["TF_CPP_MIN_LOG_LEVEL"] = "0"
        env["TF_DUMP_GRAPH_PREFIX"] = self.dump_dir
        env["TMPDIR"] = self.tmp_dir
        env["EXPLORER_DEVICE"] = self.config.device
        env["EXPLORER_WORKER_ROLE"] = self.role
        env["EXPLORER_WORKER_OWNER"] = self.owner
        # XLA reads its flags once per process: its per-pass dumps go to the worker's own directory.
        env["EXPLORER_XLA_DUMP"] = os.path.join(self.workdir, "xla")
        env["XLA_FLAGS"] = " ".join(filter(None, [env.get("XLA_FLAGS", ""), f"--xla_dump_to={env['EXPLORER_XLA_DUMP']}",
                                                  "--xla_dump_hlo_pass_re=.*"]))
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PROJECT_ROOT), env.get("PYTHONPATH", "")]))
        if is_simulated(self.config.device) and "TF_ENABLE_ONEDNN_OPTS" not in env:
            # A host CPU without oneDNN float16 makes the remapper skip every float16 node, GPU ones
            # included; a GPU machine's CPU need not share that, so simulate with oneDNN off
            # unless the user chose otherwise.
            env["TF_ENABLE_ONEDNN_OPTS"] = "0"
        if self.config.device == "gpu":
            # Several workers (one per flag set) share one GPU: TF's default of reserving nearly all
            # GPU memory at first use would leave the second worker none.
            env.setdefault("TF_FORCE_GPU_ALLOW_GROWTH", "true")
        else:
            # Hide GPUs from CPU and simulated runs: placement cannot drift and CUDA is never initialised.
            env["CUDA_VISIBLE_DEVICES"] = "-1"
        return env

    @property
    def pid(self) -> int:
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc.poll() is None

    def _read(self) -> None:
        for line in self._from_worker:
            self._lines.put(line)
        self._lines.put(None)

    def _rss(self) -> int:
        try:
            with open(f"/proc/{self.proc.pid}/statm") as handle:
                return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except (OSError, ValueError, IndexError):
            return 0

    def stderr_tail(self, lines: int = 40) -> str:
        try:
            with open(self.stderr_path, "rb") as handle:
                handle.seek(0, os.SEEK_END)
                size = handle.tell()
                handle.seek(max(0, size - 64_000))
                text = handle.read().decode("utf-8", "replace")
        except OSError:
            return ""
        keep = [ln for ln in text.splitlines() if "dump_graph.cc" not in ln and "meta_optimizer.cc" not in ln]
        return "\n".join(keep[-lines:])

    def _next(self, deadline: float, what: str, limit_s: float) -> dict:
        """The next protocol message, watching the deadline (limit_s after the request), the memory
        cap and the process."""
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.kill()
                raise WorkerError(
                    "timeout",
                    f"The worker did not finish the {what} request in time "
                    f"({limit_s:.0f} s); it was stopped and the next request starts a new one.",
                    self.stderr_tail(),
                )
            line: str | None
            try:
                line = self._lines.get(timeout=min(MEMORY_POLL_S, remaining))
            except queue.Empty:
                line = ""
            if time.monotonic() - self._rss_at >= MEMORY_POLL_S:  # lines arriving all the time included
                self._rss_at = time.monotonic()
                rss = self._rss()
                if rss > self.limits.memory_bytes:
                    self.kill()
                    raise WorkerError(
                        "memory",
                        f"The worker used {rss / 2**30:.1f} GiB during the {what} request, over its cap of "
                        f"{self.limits.memory_bytes / 2**30:.1f} GiB; it was stopped. The model or its sizes need "
                        "more memory than one worker may have on this server: try smaller sizes.",
                        self.stderr_tail(),
                    ) from None
            if line == "":
                continue
            if line is None:
                code = self.proc.wait(timeout=10)
                how = f"killed by {_signal_name(code)}" if code < 0 else f"exit code {code}"
                raise WorkerError(
                    "crash",
                    f"The worker process died during the {what} request ({how}); "
                    "the next request starts a new one.",
                    self.stderr_tail(),
                )
            try:
                return json.loads(line)
            except json.JSONDecodeError:
                log.warning("worker wrote a non-protocol line: %r", line[:200])

    def request(self, op: str, payload: dict, timeout: float, on_progress: Progress | None = None) -> dict:
        """Send one request and wait for its answer; raises WorkerError on any failure."""
        with self.lock:
            self.last_used = time.monotonic()
            self.requests += 1
            req_id = next(self._ids)
            folder = tempfile.mkdtemp(prefix=f"request-{req_id}-", dir=self.workdir)
            try:
                return self._serve(op, dict(payload, id=req_id, op=op, tmp=folder), timeout, on_progress)
            finally:
                # The worker is done with the request or dead: whatever it left is removed with the folder.
                shutil.rmtree(folder, ignore_errors=True)

    def _serve(self, op: str, message: dict, timeout: float, on_progress: Progress | None) -> dict:
        req_id = message["id"]
        try:
            self._to_worker.write(json.dumps(message) + "\n")
            self._to_worker.flush()
        except (BrokenPipeError, OSError):
            self.kill()
            raise WorkerError("crash", "The worker process had died; the next request starts a new one.",
                              self.stderr_tail()) from None
        deadline = time.monotonic() + timeout
        abandoned: BaseException | None = None
        while True:
            reply = self._next(deadline, op, timeout)
            if reply.get("id") != req_id:
                continue
            if "progress" in reply:
                if on_progress is not None:
                    try:
                        on_progress(reply["progress"])
                    except BaseException as exc:  # the caller went away, e.g. a page rerun
                        if op == "bench":
                            # Nobody will see this timing: stop it now rather than hold the device.
                            self.kill()
                            raise
                        # Graph work is short: finish it, so the worker (and the caller's queue
                        # slot) is only given back once the worker is idle again.
                        abandoned, on_progress = exc, None
                continue
            self.last_used = time.monotonic()
            if abandoned is not None:
                raise abandoned
            if reply.get("ok"):
                return reply["result"]
            error = reply.get("error") or {}
            kind = error.get("kind", "tensorflow")
            if kind == "spec":
                raise SpecError(error.get("field", "spec"), error.get("message", ""))
            if kind not in WorkerError.KINDS:  # a worker of other code: say what it sent, as a protocol error
                kind, error = "protocol", dict(error, message=f"{error.get('message', '')} (kind {kind!r})")
            raise WorkerError(kind, error.get("message", "the worker failed"), error.get("detail", ""))

    def kill(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                self.proc.kill()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self._to_worker.close()
                self.proc.wait(timeout=5)
            except (OSError, subprocess.TimeoutExpired):
                pass
        self.kill()
        self._stderr.close()
        shutil.rmtree(self.workdir, ignore_errors=True)
        self._release()

    def _release(self) -> None:
        budget, self._budget = self._budget, None
        if budget is not None:
            budget.release(self._held)


# Variables the parent sets for each worker; the caller's own values never leak in.
# CUDA_VISIBLE_DEVICES is not ours: a GPU worker keeps the user's choice of GPU.
_OWNED_ENV = {"TF_CPP_VMODULE", "TF_CPP_MIN_LOG_LEVEL", "TF_DUMP_GRAPH_PREFIX", "EXPLORER_DEVICE", "EXPLORER_XLA_DUMP",
              "EXPLORER_WORKER_ROLE", "TMPDIR"} | set(ENV_FLAGS)
