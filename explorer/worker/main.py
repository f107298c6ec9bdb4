"""The worker process's loop: read a request, dispatch it, answer with a result or a readable error.

Started by ``explorer.engine.runner`` as ``python -m explorer.worker`` with the configuration's
environment already set (several TF flags are read once per process). The only package of the
explorer that imports TensorFlow; see ``protocol`` for the wire format.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import traceback
from contextlib import contextmanager

from ..errors import SpecError
from ..model import compilers
from ..model.devices import no_gpu_words, nvidia_gpus_present, refuse_simulated
from ..model.hooks import hook
from ..model.spec import resolve
from . import agreement, diagnose, fix, fix_bench, models, op_time, probe
from .protocol import BadRequest, NoGpu, Protocol, Refused, error_line
from .runtime import Runtime


# profile: per-op time (TensorFlow's profiler); fix: copies of an imported model rewritten by fixes, written
# to disk; bench_models: the model as imported against its fixed copies, interleaved.
MODEL_OPS = {"profile": op_time.run, "fix": fix.run, "bench_models": fix_bench.run}


def handle(rt: Runtime, request: dict) -> dict:
    op = request.get("op")
    if op == "ping":
        return {"pong": True, "pid": os.getpid()}
    if op == "fingerprint":
        return rt.fingerprint
    if op == "machine":  # the bandwidth curve and FLOP rate the traffic estimate uses
        return dict(probe.run(rt.tf, request), fingerprint=rt.fingerprint)
    if op in MODEL_OPS:  # what is done to an imported model: its per-op time, its fixed copies, them timed
        if op != "fix":
            refuse_simulated(rt.device, "bench")
        with rt.without_dumps():
            return MODEL_OPS[op](rt, request)
    if op == "reference":  # the unfused run of inspect's check, in a second worker beside the fused one
        refuse_simulated(rt.device, "reference")
        return agreement.reference(rt, request)
    if op == "diagnose":  # the fused call against the unfused one, each fused node cut out (Grappler's dumps kept)
        refuse_simulated(rt.device, "diagnose")
        return diagnose.run(rt, request)
    found = compilers.by_op(op)  # what a compiler made, or its benchmark (model.compilers)
    if found is None:
        raise BadRequest(f"unknown request {op!r}")
    compiler, what = found
    if what == "bench":
        refuse_simulated(rt.device, "bench")
        with rt.without_dumps():  # a benchmark reads no per-pass graph
            return hook(compiler.worker_bench)(rt, request)
    if not compiler.simulated:
        refuse_simulated(rt.device, compiler.id)
    return hook(compiler.worker_inspect)(rt, request)


@contextmanager
def request_folder(path) -> None:
    """The request's own folder (the parent's, removed by it when the request ends) as the temporary
    directory meanwhile: a model's unpacked copy and AutoGraph's generated files go there."""
    if not isinstance(path, str) or not os.path.isdir(path):
        yield
        return
    saved = tempfile.tempdir, os.environ.get("TMPDIR")
    tempfile.tempdir, os.environ["TMPDIR"] = path, path
    try:
        yield
    finally:
        tempfile.tempdir = saved[0]
        if saved[1] is None:
            os.environ.pop("TMPDIR", None)
        else:
            os.environ["TMPDIR"] = saved[1]


def _sized_hint(rt: Runtime, request: dict, exc: Exception) -> str:
    """What to try when a model whose inputs leave a dimension unknown refused the values fed: those dimensions
    were given a size of the explorer's choosing (1 unless asked), which a model may not take (a sequence shorter
    than its convolution's kernel). Empty for any other failure."""
    if type(exc).__name__ != "InvalidArgumentError":
        return ""
    try:
        spec = resolve(request.get("spec"))
        if not models.unknown_dims(spec, rt.tf):
            return ""
    except Exception:  # noqa: BLE001 - only a hint: the error stands without it
        return ""
    return (f". The model's unknown dimensions were fed as {spec.unknown_dim}: it may need them larger (give "
            "another size: --dim N on the command line, Unknown dimensions on the page)")


def _error(kind: str, message: str, detail: str = "") -> dict:
    return {"kind": kind, "message": message, "detail": detail[-4000:]}


def main() -> None:
    protocol = Protocol()
    try:
        rt = Runtime(protocol)
    except Exception as exc:  # noqa: BLE001 - TensorFlow failed to import: say so and stop
        protocol.send({"ready": False, "error": _error("tensorflow", f"TensorFlow failed to start: {exc}",
                                                       traceback.format_exc())})
        return
    protocol.send({"ready": True, "fingerprint": rt.fingerprint})
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        try:
            request = json.loads(line)
        except json.JSONDecodeError:
            protocol.send({"id": None, "ok": False, "error": _error("protocol", "request is not JSON")})
            continue
        req_id = request.get("id")
        rt.log.start()
        try:
            with request_folder(request.get("tmp")):
                result = handle(rt, request)
            protocol.send({"id": req_id, "ok": True, "result": result})
        except SpecError as exc:
            protocol.send({"id": req_id, "ok": False, "error": dict(_error("spec", exc.message), field=exc.field)})
        except NoGpu:
            protocol.send({"id": req_id, "ok": False, "error": _error(
                "no_gpu", "No GPU is visible to TensorFlow on this machine, so nothing was run. "
                f"{no_gpu_words(nvidia_gpus_present())} Choose the CPU (or a simulated GPU profile).")})
        except BadRequest as exc:
            protocol.send({"id": req_id, "ok": False, "error": _error("protocol", str(exc))})
        except Refused as exc:  # its message already says what failed (the op XLA refused, the fused variant)
            rt.recover()
            protocol.send({"id": req_id, "ok": False, "error": _error("tensorflow", exc.message, exc.detail)})
        except Exception as exc:  # noqa: BLE001 - TensorFlow refused or failed: report its words, keep serving
            rt.recover()
            first = error_line(getattr(exc, "message", None) or str(exc)) or type(exc).__name__
            log = rt.log.read()
            protocol.send({"id": req_id, "ok": False, "error": _error(
                "tensorflow", f"TensorFlow failed: {type(exc).__name__}: {first[:400]}{_sized_hint(rt, request, exc)}",
                traceback.format_exc() + "\n".join(log[-60:]))})
