"""The engine with its worker processes replaced by recordings: the page and the CLI on results made elsewhere.

``ReplayEngine(directory)`` is an ``Engine`` whose worker requests are answered from recordings, so
everything the engine adds to a worker's answer (the analysis, the cache, sweeps, the matrix, the
memory-traffic report) runs as it does live, with no TensorFlow and no process. It answers from two
kinds of file in ``directory``:

- a live engine's result cache (``Engine(cache_dir=directory)``): results by the cache's key, which
  names the code and TensorFlow version that made them;
- recordings of worker answers (``<request key>.worker.json``, written by ``RecordingEngine``): one per
  request, keyed by what was asked (the process's device and flags, the op, the payload; an imported
  model by its content), not by the code, so they stay valid while the parent's analysis changes.

A request nothing was recorded for is an ``ExplorerError`` naming it. ``RecordingEngine(directory)``
is the live engine writing a recording of every worker answer it gets (tests/replay records its
pages with it: ``EXPLORER_RECORD=1 pytest tests/replay``).
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import ExplorerError
from ..model import compilers
from ..model.flags import Config, ConfigLike
from ..model.results import Fingerprint, WorkerInfo
from ..model.spec import resolve
from .cache import ResultCache, spec_identity
from .engine import Engine
from .interface import EngineInterface, Progress
from .payloads import compiler_payload, inspect_payload, profile_payload
from .pool import MAIN
from .runner import Limits

SUFFIX = ".worker.json"


def request_key(config: Config, op: str, payload: dict) -> str:
    """What identifies a worker request apart from the code that sends it: the process (device and
    environment flags), the op and its payload, the model by its identity."""
    payload = dict(payload)
    if "spec" in payload:
        payload["spec"] = spec_identity(resolve(payload["spec"]))
    data = {"device": config.device, "env": config.env_dict, "op": op, "payload": payload}
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:32]


class ReplayEngine(Engine):
    def __init__(self, directory: Path | str):
        super().__init__(Limits(beside_after_s=None), cache_dir=None)  # no worker to start, for the check or any
        self.directory = Path(directory)
        self.cache = ResultCache(self.directory, read_only=True)
        self.name = f"replay:{self.directory}"

    def _recording(self, config: Config, op: str, payload: dict) -> dict | None:
        path = self.directory / f"{request_key(config, op, payload)}{SUFFIX}"
        try:
            return json.loads(path.read_text())
        except (OSError, ValueError):
            return None

    def _run(self, config: Config, op: str, payload: dict, timeout: float,
             on_progress: Progress | None = None) -> tuple[dict, WorkerInfo]:
        recording = self._recording(config, op, payload)
        if recording is None:
            what = f"{op} result for {resolve(payload['spec']).label()}" if "spec" in payload else f"{op} answer"
            raise ExplorerError(f"no recorded {what} on {config.device} with {config.shell_env() or 'default flags'} "
                                f"(replaying {self.directory})")
        pid = (recording.get("fingerprint") or {}).get("pid")
        return recording["answer"], {"pid": pid, "new_process": False, "startup_s": 0.0, "wall_s": 0.0,
                                     "replayed": True}

    def _run_fresh(self, config: Config, op: str, payload: dict, timeout: float,
                   on_progress: Progress | None) -> tuple[dict, WorkerInfo]:
        result, info = self._run(config, op, payload, timeout, on_progress)
        return result, {**info, "new_process": True}

    def is_ready(self, kind: str, spec, config: ConfigLike = None, extra: dict | None = None) -> bool:
        """Stored, or recorded: a replay answers either at once."""
        if super().is_ready(kind, spec, config, extra):
            return True
        spec, config = resolve(spec), Config.coerce(config)
        if kind == compilers.FIRST.inspect_op:
            payload = inspect_payload(spec, config, bool((extra or {}).get("pass_graphs")))
        elif kind in {c.inspect_op for c in compilers.COMPILERS}:
            payload = compiler_payload(spec)
        elif kind == "profile":
            payload = profile_payload(spec, config, int((extra or {}).get("calls", 10)))
        else:
            return False
        return self._recording(config, kind, payload) is not None

    def fingerprint(self, config: ConfigLike = None) -> Fingerprint:
        """The fingerprint recorded with this device and these flags, else with this device (the machine's
        devices and CPU are the same whatever the flags)."""
        config = Config.coerce(config)
        same_device = None
        for path in sorted(self.directory.glob("*.json")):
            try:
                data = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            recorded = data.get("request") or data.get("config") or {}
            fingerprint = data.get("fingerprint")
            if fingerprint is None or recorded.get("device") != config.device:
                continue
            if (recorded.get("env") or {}) == config.env_dict:
                return fingerprint
            same_device = same_device or fingerprint
        if same_device is not None:
            return same_device
        raise ExplorerError(f"no recorded result on {config.device} (replaying {self.directory})")

    def is_warm(self, config: ConfigLike) -> bool:
        return True  # nothing to start

    def prestart(self, config: ConfigLike, *, after_s: float = 0.0) -> None:
        pass

    def start_worker(self, config: ConfigLike, role: str = MAIN) -> None:
        pass  # nothing to start


class RecordingEngine(Engine):
    """The live engine, writing every worker answer it gets into ``directory`` as a recording."""

    def __init__(self, directory: Path | str, **options):
        # one request per inspect, as a replay asks it: never a second worker for the check's reference
        options["limits"] = replace(options.get("limits") or Limits(), beside_after_s=None)
        super().__init__(**options)
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)

    def _record(self, config: Config, op: str, payload: dict, answer: dict) -> None:
        request = {"device": config.device, "env": config.env_dict, "op": op, "payload": payload}
        fingerprint = answer.get("fingerprint") or self.pool.get(config).fingerprint  # the process that answered
        key = request_key(config, op, payload)
        tmp = self.directory / f".{key}.{os.getpid()}.tmp"
        # In the answer's own key order: some answers are ordered dicts (the per-pass graphs, in dump order).
        tmp.write_text(json.dumps({"request": request, "fingerprint": fingerprint, "answer": answer}))
        os.replace(tmp, self.directory / f"{key}{SUFFIX}")

    def _run(self, config: Config, op: str, payload: dict, timeout: float,
             on_progress: Progress | None = None) -> tuple[dict, WorkerInfo]:
        answer, info = super()._run(config, op, payload, timeout, on_progress)
        self._record(config, op, payload, answer)
        return answer, info

    def _run_fresh(self, config: Config, op: str, payload: dict, timeout: float,
                   on_progress: Progress | None) -> tuple[dict, WorkerInfo]:
        answer, info = super()._run_fresh(config, op, payload, timeout, on_progress)
        self._record(config, op, payload, answer)
        return answer, info


if TYPE_CHECKING:  # the type checker holds both engines to the interface's types (its test: to its names)
    _LIVE: type[EngineInterface] = Engine
    _REPLAY: type[EngineInterface] = ReplayEngine
