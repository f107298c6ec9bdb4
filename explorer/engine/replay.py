"""An engine that answers from recorded results instead of running TensorFlow.

It serves what a live ``Engine`` recorded in its result cache (``ResultCache``, one JSON file per
request key), through the same calls the page makes. The page is given the engine it uses, so a
test can draw it from results captured elsewhere (another machine, a GPU) with no worker process.
A request nothing was recorded for is answered with an ``ExplorerError`` naming it.
"""

from __future__ import annotations

from pathlib import Path

from ..errors import ExplorerError
from ..model.flags import Config
from ..model.results import BenchResult, InspectResult, SweepResult
from ..model.spec import resolve
from .cache import ResultCache, inspect_extra


class ReplayEngine:
    def __init__(self, directory: Path | str):
        self.directory = Path(directory)
        self.cache = ResultCache(self.directory)
        self.name = f"replay:{self.directory}"

    def _recorded(self, kind: str, spec, config, extra: dict | None = None) -> dict:
        spec, config = resolve(spec), Config.coerce(config)
        result = self.cache.get(ResultCache.key(kind, spec, config, extra))
        if result is None:
            raise ExplorerError(f"no recorded {kind} result for {spec.label()} on {config.device} "
                                f"with {config.shell_env() or 'default flags'} (replaying {self.directory})")
        return result

    def inspect(self, spec, config=None, *, on_progress=None, use_cache: bool = True,
                pass_graphs: bool = False) -> InspectResult:
        return dict(self._recorded("inspect", spec, config, inspect_extra(pass_graphs)), cached=True)

    def bench(self, spec, config=None, *, on_progress=None, **_options) -> BenchResult:
        return self._recorded("bench", spec, config)

    def sweep(self, spec, config=None, *, param: str, values: list, on_progress=None, **_options) -> SweepResult:
        return self._recorded("sweep", spec, config, {"param": param, "values": list(values)})

    def fingerprint(self, config=None) -> dict:
        """The fingerprint of a result recorded with this device and these flags, else with this device
        (the machine's devices and CPU are the same whatever the flags)."""
        config = Config.coerce(config)
        same_device = None
        for path in sorted(self.directory.glob("*.json")):
            result = self.cache.get(path.stem) or {}
            recorded, fingerprint = result.get("config") or {}, result.get("fingerprint")
            if fingerprint is None or recorded.get("device") != config.device:
                continue
            if recorded.get("env") == config.env_dict:
                return fingerprint
            same_device = same_device or fingerprint
        if same_device is not None:
            return same_device
        raise ExplorerError(f"no recorded result on {config.device} (replaying {self.directory})")

    def is_warm(self, config) -> bool:
        return True  # nothing to start

    def prestart(self, config) -> None:
        pass

    def close(self) -> None:
        pass


def record(engine, kind: str, spec, config, result: dict, extra: dict | None = None) -> None:
    """Keep ``result`` in ``engine``'s result cache under the key a ReplayEngine looks it up by."""
    engine.cache.put(ResultCache.key(kind, resolve(spec), Config.coerce(config), extra), result)
