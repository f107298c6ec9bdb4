"""This machine's measured speeds (bandwidth curve, matmul rate), measured once and kept beside the results.

The probe runs in a worker (numpy and TensorFlow are there) and takes a benchmark slot: it is a
timing, and sharing the cores would halve it. It is keyed by the machine as the worker's fingerprint
describes it (CPU model, cores, features, devices), not by TensorFlow flags or the explorer's code,
so every configuration on one machine shares one profile; ``PROBE_VERSION`` changes when the probe
measures differently.
"""

from __future__ import annotations

import hashlib
import json
import time

from ..analysis import traffic
from ..model.devices import is_simulated
from .cache import DEFAULT_CACHE_DIR, ResultCache

PROBE_VERSION = 1
PROBE_TIMEOUT_S = 120.0


def machine_key(fp: dict) -> str:
    """What identifies the machine in a fingerprint: the CPU, its features and core count, the GPUs."""
    identity = {"cpu": fp.get("cpu_model"), "cores": fp.get("cpu_count"), "flags": fp.get("cpu_flags"),
                "gpus": [g.get("model") for g in fp.get("gpus") or []], "probe": PROBE_VERSION}
    return "machine-" + hashlib.sha256(json.dumps(identity, sort_keys=True).encode()).hexdigest()[:16]


def describe(profile: dict) -> str:
    """One line: the curve's ends and the matmul rate, with when and on what they were measured."""
    points = sorted(profile["bandwidth"], key=lambda p: p["bytes"])
    peak = max(p[f"{traffic.BANDWIDTH_CURVE}_gbs"] for p in points)
    fp = profile.get("fingerprint") or {}
    return (f"{fp.get('cpu_model') or 'CPU'}, {fp.get('cpu_count', '?')} cores: {traffic.BANDWIDTH_CURVE} "
            f"{peak:.1f} GB/s in cache, {traffic.dram_bandwidth(profile):.1f} GB/s beyond it; float32 matmul "
            f"{profile['matmul']['gflops']:.1f} GFLOP/s (measured {profile.get('measured_at', '?')})")


def profile(engine, config, results: ResultCache, *, fingerprint: dict | None = None, use_cache: bool = True,
            measure: bool = True, request: dict | None = None, on_progress=None) -> dict | None:
    """The machine's profile: from the cache when this machine has one, else measured (``measure``) or None.

    ``request`` passes sizes to the probe (tests keep it tiny); a profile measured with one is kept
    under a key of its own, so it never stands in for the full curve. ``results``: the engine's result cache.
    """
    if is_simulated(config.device):
        return None
    fp = fingerprint or engine.fingerprint(config)
    key = machine_key(fp)
    if request:
        key += "-" + hashlib.sha256(json.dumps(request, sort_keys=True).encode()).hexdigest()[:8]
    store = _store(results)
    cached = store.get(key) if use_cache else None
    if cached is not None:
        return dict(cached, cached=True)
    if not measure:
        return None
    if on_progress:
        on_progress({"fraction": 0.0, "message": "measuring this machine's memory bandwidth and matmul rate "
                                                 "(once per machine, a few seconds)"})
    result, _info = engine.request(config, "machine", dict(request or {}), slot="bench", timeout=PROBE_TIMEOUT_S,
                                   on_progress=on_progress)
    result = dict(result, key=key, measured_at=time.strftime("%Y-%m-%d %H:%M:%S"), cached=False,
                  partial=bool(request))
    result["described"] = describe(result)
    store.put(key, result)
    return result


_shared: list[ResultCache] = []


def _store(results: ResultCache) -> ResultCache:
    """The engine's result cache; an engine without a disk cache (``--no-cache``, tests) still keeps
    the machine's profile on disk where the results live: it describes the machine, not a request,
    and measuring it again costs seconds on every command."""
    if results.directory is not None:
        return results
    if not _shared:
        _shared.append(ResultCache(DEFAULT_CACHE_DIR))
    return _shared[0]


def attach(engine, result: dict, config, *, measure: bool = True, on_progress=None) -> dict:
    """The benchmark result with its traffic report (``result["traffic"]``), the machine measured if asked."""
    machine = None
    fp = result.get("fingerprint") or {}
    if fp.get("device", "cpu") == "cpu":
        machine = engine.machine(config, fingerprint=fp, measure=measure, on_progress=on_progress)
    return dict(result, traffic=traffic.report(result, machine))
