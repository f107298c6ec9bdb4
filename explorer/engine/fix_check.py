"""Fixes verified by running them: a setting is offered only once its configuration has fused the chain.

The near-miss finder (``analysis.near_miss``) names, for each near-miss, the settings the remapper's
rules say might fuse it (a flag, a Grappler switch, the device). Here the engine runs the model under
each of them (the most asked first, at most ``MAX_CONFIGURATIONS`` per model: each may cost a worker
and a TensorFlow import) and hands what fused to ``analysis.near_miss.apply_checks``, which keeps a
setting only where its run fused that very chain. The runs are ordinary inspect requests, so they
share the engine's result cache (memory and disk) with everything else.
"""

from __future__ import annotations

from ..errors import ExplorerError, SpecError
from ..analysis.near_miss import apply_checks, candidate_settings
from ..model.flags import Config
from ..model.results import InspectResult

MAX_CONFIGURATIONS = 3


def configured(config: Config, settings: list[dict]) -> Config | None:
    """``config`` with ``settings`` applied; None when one cannot be applied here."""
    try:
        for setting in settings:
            if setting["kind"] == "env":
                config = config.with_env(setting["name"], setting["value"])
            elif setting["kind"] == "grappler":
                config = config.with_switch(setting["name"], setting["value"])
            elif setting["kind"] == "device":
                config = Config.make(setting["value"], config.env_dict, config.grappler_dict)
            else:
                return None
    except SpecError:
        return None
    return config


def check(engine, spec, config: Config, result: InspectResult) -> InspectResult:
    """The result with its near-misses' fixes settled by running the candidate settings."""
    report = result.get("report")
    if not report or report.get("fixes_checked") is not None:
        return result
    misses = report.get("near_misses") or []
    outcomes: list[tuple[list[dict], list[dict] | None]] = []
    runs: list[dict] = []
    for settings in candidate_settings(misses):
        target = configured(config, settings)
        if target is None or target == config:
            outcomes.append((settings, []))  # nothing to change here: it leaves the chain as it is
            continue
        if len(runs) >= MAX_CONFIGURATIONS:
            continue
        try:
            other = engine.inspect(spec, target)
            fusions = other.get("fusions") or []
            runs.append({"config": target.to_dict(), "fused_kernels": len(fusions)})
        except ExplorerError as exc:  # a GPU that is not here, a worker that died, no recording: fused nothing
            fusions = []
            runs.append({"config": target.to_dict(), "error": str(exc)[:300]})
        outcomes.append((settings, fusions))
    settled = apply_checks(misses, outcomes)
    report = dict(report, near_misses=settled, fixes_checked={
        "configurations": runs, "limit": MAX_CONFIGURATIONS,
        "verified": sum(1 for m in settled if m.get("verified")),
        "offered": sum(1 for m in settled if m.get("changes"))})
    return {**result, "report": report}
