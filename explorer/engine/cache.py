"""Results on disk, keyed by request, TensorFlow's version and the explorer's own code.

A repeat of a configuration (the class's default model, a page reload) is answered in
milliseconds, and survives a server restart; a result made by other code is another result.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import threading
from collections.abc import Mapping
from importlib import metadata
from pathlib import Path

from ..model.flags import Config

PACKAGE = Path(__file__).resolve().parent.parent
DEFAULT_CACHE_DIR = Path(os.environ.get("EXPLORER_CACHE_DIR", PACKAGE.parent / ".cache" / "results"))


@functools.cache  # every cache key asks; the installed wheel does not change under a running process
def tensorflow_version() -> str:
    try:
        return metadata.version("tensorflow")
    except metadata.PackageNotFoundError:
        return "unknown"


class ResultCache:
    """Graph results on disk, keyed by request, so repeat visits survive a server restart."""

    def __init__(self, directory: Path | None, read_only: bool = False):
        """``read_only``: results put are kept in memory only (a replay must not write into its recordings)."""
        self.directory = Path(directory) if directory else None
        self.read_only = read_only
        self._memory: dict[str, dict] = {}
        self._lock = threading.Lock()

    _code_version: str | None = None

    @classmethod
    def code_version(cls) -> str:
        """Digest of the explorer package's modules (the page's ui/ excepted): what builds, runs and
        annotates a result. A result made by other code is another result, so upgrading the
        explorer never serves graphs or fusions found by the code it replaced."""
        if cls._code_version is None:
            digest = hashlib.sha256()
            for path in sorted(PACKAGE.rglob("*.py")):
                relative = path.relative_to(PACKAGE)
                if relative.parts[0] != "ui":
                    digest.update(str(relative).encode() + b"\0" + path.read_bytes() + b"\0")
            cls._code_version = digest.hexdigest()[:16]
        return cls._code_version

    @staticmethod
    def key(kind: str, spec, config: Config, extra: dict | None = None) -> str:
        payload = {"kind": kind, "spec": spec_identity(spec), "config": config.to_dict(), "tf": tensorflow_version(),
                   "code": ResultCache.code_version(), "extra": extra or {}}
        return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:32]

    def get(self, key: str) -> dict | None:
        with self._lock:
            if key in self._memory:
                return self._memory[key]
        if self.directory is None:
            return None
        path = self.directory / f"{key}.json"
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            return None
        with self._lock:
            self._memory[key] = data
        return data

    def put(self, key: str, value: Mapping[str, object]) -> None:
        """Keep a result (a dict, or one of ``model.results``' TypedDicts: a dict at run time, kept as it is)."""
        value = value if isinstance(value, dict) else dict(value)
        with self._lock:
            self._memory[key] = value
            if len(self._memory) > 256:
                self._memory.pop(next(iter(self._memory)))
        if self.directory is None or self.read_only:
            return
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            tmp = self.directory / f".{key}.{os.getpid()}.{threading.get_ident()}.tmp"
            tmp.write_text(json.dumps(value))
            os.replace(tmp, self.directory / f"{key}.json")
            self._prune()
        except OSError:
            pass  # a read-only or full disk only costs the cache

    MAX_FILES = 2000  # a long-running class server must not fill its disk

    def _prune(self) -> None:
        assert self.directory is not None  # only a cache on disk is pruned
        files = list(self.directory.glob("*.json"))
        if len(files) <= self.MAX_FILES:
            return
        files.sort(key=lambda p: p.stat().st_mtime_ns)
        for path in files[: len(files) - self.MAX_FILES * 9 // 10]:  # oldest first, with some headroom
            try:
                path.unlink()
            except OSError:
                pass


def spec_identity(spec) -> dict:
    """What makes a model's results: its spec as data, an imported model by its content (digest), never
    the temporary path it was saved under."""
    return spec.identity()


def inspect_key(spec, config, pass_graphs: bool = False) -> str:
    """The cache key of an inspect result; with every pass's graph (Engine.inspect(pass_graphs=True)),
    a key of its own."""
    return ResultCache.key("inspect", spec, config, inspect_extra(pass_graphs))


def inspect_extra(pass_graphs: bool) -> dict | None:
    return {"pass_graphs": True} if pass_graphs else None
