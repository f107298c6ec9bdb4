"""The engine's background work: answers and workers made before anyone asks for them.

A new configuration costs a TensorFlow import (~3 s of both cores here) and a new result a worker request, so
the page asks the engine for what comes next while a person reads what is on screen: the likely next
configuration's worker (``prestart``), a lesson's results and workers, the server's first result
(``prepare``). The page starts no thread of its own; these threads are the engine's, and use its public
calls only. A failure here costs only the head start: the request itself reports it when it is made.
"""

from __future__ import annotations

import logging
import threading

from ..errors import ExplorerError
from ..model import compilers
from ..model.devices import is_simulated
from ..model.flags import Config
from .pool import MAIN

log = logging.getLogger(__name__)

_prepared: set[tuple[str, str]] = set()  # (engine name, what was prepared): each once per server
_lock = threading.Lock()


def prestart(engine, config: Config, after_s: float = 0.0, role: str = MAIN) -> None:
    """``engine.start_worker(config, role)`` in a background thread, ``after_s`` seconds from now (started at once, a
    TensorFlow import would slow the browser drawing the page that asked for it). Nothing when it is warm."""
    if engine.pool.has_warm(config, role):
        return

    def start() -> None:
        try:
            engine.start_worker(config, role)
        except Exception:  # a failed warm-up only costs the head start
            log.info("prestarting the %s worker of %s failed", role, config, exc_info=True)

    timer = threading.Timer(after_s, start)
    timer.daemon = True
    timer.name = "explorer-prestart"
    timer.start()


def prepare(engine, name: str, experiments: list, configs: list, then=None) -> bool:
    """Each experiment's inspect result (and its other compiler's, where it has one), in order, then the workers
    of ``configs``; ``then(result)`` after each inspect result. Once per engine and ``name``."""
    with _lock:
        if (engine.name, name) in _prepared:
            return False
        _prepared.add((engine.name, name))
    threading.Thread(target=_prepare, args=(engine, name, experiments, configs, then), daemon=True,
                     name=f"explorer-prepare-{name}").start()
    return True


def _prepare(engine, name: str, experiments: list, configs: list, then) -> None:
    for experiment in experiments:
        try:
            result = engine.inspect(experiment.model, experiment.config)
            if then is not None:
                then(result)
            if experiment.compiler != compilers.FIRST.id and not is_simulated(experiment.config.device):
                engine.xla(experiment.model, experiment.config)
        except ExplorerError:  # the page shows the error itself when the experiment is opened
            log.info("%s: %s could not be prepared", name, experiment, exc_info=True)
        except Exception:  # a background head start must never take the server down
            log.warning("%s: %s could not be prepared", name, experiment, exc_info=True)
    for config in dict.fromkeys(configs):
        try:
            engine.start_worker(config)
        except Exception:  # a failed warm-up only costs the head start
            log.info("%s: the worker of %s could not be started", name, config, exc_info=True)
