"""Inspect's agreement check with its reference run beside the fused one, in a second worker.

The check compares the fused graph's outputs with those of the same model with the remapper off (the
reference). In one worker the reference is a second instantiation after the first (its own Grappler run and
kernels: 55-90 % of an inspect of a real network). A configuration whose reference took longer than
``Limits.beside_after_s`` gets a second warm worker (``pool.REFERENCE``); from then on its inspects send the
reference there, at the same time as the fused run, under the same admission slot. Both sides write their
outputs to this request's folder; the engine judges them (``analysis.agreement``), exactly as the worker does
when it runs both itself. Where the second worker fails, the first runs the reference after all; where the fused
run fails (or its outputs are not numpy's own dtypes) the worker checks it itself and the reference beside is
not used.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
from typing import Any

import numpy as np

from ..analysis import agreement
from ..errors import WorkerError
from ..model.devices import is_simulated
from ..model.flags import Config
from . import scratch, warmup
from .pool import REFERENCE

log = logging.getLogger(__name__)


class Beside:
    """One reference request in flight in the configuration's second worker."""

    def __init__(self, engine, config: Config, payload: dict):
        self.engine, self.config = engine, config
        self.folder = scratch.folder("check")
        self.fused_path = os.path.join(self.folder, "fused.npz")
        self.reference_path = os.path.join(self.folder, "reference.npz")
        self.answer: dict[str, Any] | None = None
        self.error: Exception | None = None
        self.reference_payload = {"spec": payload["spec"], "grappler": payload.get("grappler") or {},
                                  "outputs": self.reference_path}
        self.payload = dict(payload, agreement="beside", outputs=self.fused_path)
        self._thread = threading.Thread(target=self._run, daemon=True, name="explorer-reference")
        self._thread.start()

    def _run(self) -> None:
        pool = self.engine.pool
        worker = None
        try:
            worker = pool.get(self.config, REFERENCE)  # warm: ``start`` only makes one beside a warm one
            self.answer = worker.request("reference", self.reference_payload, pool.limits.inspect_s)
        except WorkerError as exc:
            self.error = exc
            if worker is not None and exc.kind in ("crash", "timeout", "memory"):
                pool.discard(worker)
        except Exception as exc:  # noqa: BLE001 - the first worker runs the reference instead
            self.error = exc

    def finish(self, answer: dict) -> dict:
        """The fused worker's answer with its pending check settled against the reference."""
        check = answer.get("agreement") or {}
        if check.get("status") != "pending":  # the worker judged it itself (its fused run failed)
            return answer
        waited = time.perf_counter()
        self._thread.join()
        waited = time.perf_counter() - waited
        reference = self.answer
        if reference is None:  # the second worker failed: the first runs the reference after all
            log.info("the reference beside failed (%s); run in the first worker", self.error)
            reference, _ = self.engine.request(self.config, "reference", self.reference_payload, slot=None)
        return settle(answer, reference, self.fused_path, self.reference_path, waited)

    def close(self) -> None:
        self._thread.join(self.engine.pool.limits.inspect_s)
        shutil.rmtree(self.folder, ignore_errors=True)


def start(engine, config: Config, payload: dict) -> Beside | None:
    """The reference started beside the fused run, where this configuration has a second worker warm (only
    ``start_later`` starts one) and the check compares something (the remapper on, a real device); else None."""
    if (is_simulated(config.device) or config.grappler_dict.get("remapping") == "off"
            or not engine.pool.has_warm(config, REFERENCE)):
        return None
    return Beside(engine, config, payload)


def settle(answer: dict, reference: dict, fused_path: str, reference_path: str, waited: float) -> dict:
    """``answer`` whose check is "pending", judged against the ``reference`` answer: the same verdict, words and
    keys as a check made in one worker (``worker.agreement.check``), plus the reference's unfused executed graph."""
    pending = answer["agreement"]
    with np.load(fused_path, allow_pickle=False) as fused_file, \
            np.load(reference_path, allow_pickle=False) as reference_file:
        fused, ref = dict(fused_file), dict(reference_file)

    def outputs(arrays: dict, case: str, count: int) -> list:
        return [arrays[f"{case}_{i}"] for i in range(count)]

    def runs(arrays: dict, edges: list[dict]) -> list[dict]:  # as worker.agreement.edge_runs made them
        return [dict(e, outputs=None if e["error"] else outputs(arrays, e["case"], e["count"])) for e in edges]

    found = pending["basis"]
    reference_error = reference["error"]
    main = agreement.judged(outputs(fused, "main", pending["count"]), None,
                            None if reference_error else outputs(ref, "main", reference["count"]), reference_error,
                            found)
    edges = agreement.edges_judged(runs(fused, pending["edges"]), runs(ref, reference["edges"]), found) \
        if main["status"] == "agrees" else []
    base = {"reference": pending["reference"], "inputs": pending["inputs"],
            "reference_seconds": reference["seconds"], "reference_shapes": reference["shapes"]}
    checked = agreement.concluded(base, main, edges, round(pending["seconds"] + waited, 4))
    result = dict(answer, agreement=checked)
    tensors = dict(answer.get("executed_tensors") or {})
    if tensors and reference.get("executed_tensors") and not reference_error:
        result["executed_tensors"] = dict(tensors, unfused=reference["executed_tensors"])
    else:
        result.pop("executed_tensors", None)
    timings = dict(answer.get("timings") or {})
    if timings:
        result["timings"] = dict(timings, agreement_s=checked["seconds"])
    return result


def start_later(engine, config: Config, answer: dict) -> None:
    """After an inspect that checked in one worker: this configuration's second worker started in the
    background (``warmup.prestart``, which starts it where the pool has room), where the reference took longer
    than ``Limits.beside_after_s``."""
    after_s = engine.pool.limits.beside_after_s
    seconds = (answer.get("agreement") or {}).get("reference_seconds")
    if after_s is not None and seconds is not None and seconds >= after_s:
        warmup.prestart(engine, config, role=REFERENCE)
