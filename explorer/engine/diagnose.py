"""When the fusion breaks the model: the verdict, the fused node responsible, the ways around it, the repro.

The steps, each in a process of its own (a fused kernel may abort the process that runs it):

1. the worker's "diagnose" request in a fresh worker: the model called with the remapper off, then as
   configured, outputs compared (``worker.diagnose``); a worker killed by a signal meanwhile means the
   fused call aborted, and the request is made again with the remapper off to read the graphs;
2. for each fused node, its ops cut out and written as a standalone script by the worker
   (``present.fault_repro``), run here in a fresh Python process with the configuration's flags: the node whose script fails,
   disagrees or aborts as the model did is the one responsible (``analysis.diagnosis.pin``);
   and, on a CPU, the XLA-compiled function's outputs against the same reference (``diagnosis.xla_verdict``);
3. the ways around it, each run: the remapper off for the model, oneDNN off (a worker of its own), and for an
   import a rewrite that prevents only the responsible fusion (``REWRITE_WAYS``);
4. the responsible node's script kept at ``repro`` (what the user files upstream).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time

from ..analysis import diagnosis
from ..analysis.annotate import remapper_failure, tf_failures
from ..errors import ExplorerError, WorkerError
from ..model.devices import refuse_simulated
from ..model.flags import Config
from ..model.spec import resolve

SCRIPT_TIMEOUT_S = 120.0
# Scripts run at most this many fused nodes (the model's first ones, in graph order): a real network's
# fifty fusions would take minutes, one fresh TensorFlow each.
MAX_NODES = 12


def run(engine, spec, config=None, *, repro: str | None = None, ways: bool = True, reps: int = 20,
        out: str | None = None, on_progress=None) -> dict:
    spec, config = resolve(spec), Config.coerce(config)
    refuse_simulated(config.device, "diagnose")
    say = on_progress or (lambda _p: None)
    say({"fraction": 0.05, "message": "running the model fused and unfused in a fresh worker"})
    model = check(engine, spec, config, on_progress, xla=config.device == "cpu")
    result = {"spec": model.get("spec") or spec.to_dict(), "config": config.to_dict(),
              "verdict": diagnosis.verdict(model), "xla": diagnosis.xla_verdict(model), "model": _public(model),
              "fingerprint": model.get("fingerprint"), "measured_at": time.strftime("%Y-%m-%d %H:%M:%S"),
              "warnings": tf_failures(model.get("notable") or [])}  # Grappler gave up: the graph ran unoptimised
    if result["verdict"]["fault"] is None:
        result["nodes"], result["pinned"], result["ways"] = model.get("nodes", []), None, []
        if ways and result["warnings"]:  # Grappler gave up: which setting lets it optimise the model again
            say({"fraction": 0.5, "message": "verifying the ways around Grappler's failure"})
            result["ways"] = ways_around(engine, spec, config, reps)
            if remapper_failure(model.get("notable") or []):  # and the rewrite that keeps its other fusions
                rewritten = rewritten_way(engine, spec, config, "split-add", SPLIT_ADD, None, reps, out)
                result["ways"] += [rewritten] if rewritten else []
        return result
    nodes = model.get("nodes") or []
    for i, node in enumerate(nodes[:MAX_NODES]):
        say({"fraction": 0.2 + 0.5 * i / max(len(nodes), 1), "message": f"running {node['node']}'s ops alone"})
        if "script" in node:  # written by the worker (present.fault_repro)
            node["alone"] = run_script(node["script"], config)
    result["nodes"] = nodes
    result["pinned"] = diagnosis.pin(result["verdict"], nodes)
    if ways:
        say({"fraction": 0.75, "message": "verifying the ways around it"})
        result["ways"] = ways_around(engine, spec, config, reps)
        if result["pinned"] is not None:
            rewritten = rewrite_way(engine, spec, config, result["pinned"], reps, out)
            result["ways"] += [rewritten] if rewritten else []
    pinned = result["pinned"]
    if repro and pinned is not None:
        with open(repro, "w") as handle:
            handle.write(nodes[pinned["index"]]["script"])
        result["repro"] = {"path": repro, "reproduces": pinned["reproduces"]}
    return result


def check(engine, spec, config: Config, on_progress=None, reps: int = 0, xla: bool = False) -> dict:
    """The worker's diagnose answer (``reps``: also time the call against the unfused one); with
    ``fused_aborted`` when the fused call killed its process."""
    payload = {"spec": spec.to_dict(), "grappler": config.grappler_dict, "reps": reps, "xla": xla}
    timeout = engine.pool.limits.inspect_s
    with engine.queue(config.device).slot("graph", on_progress):
        try:
            answer, _ = engine.request(config, "diagnose", payload, slot=None, timeout=timeout, fresh=True,
                                       on_progress=on_progress)
        except WorkerError as exc:
            if exc.kind != "crash":
                raise
            aborted = {"line": exc.message}
            off = config.with_switch("remapping", "off")
            answer, _ = engine.request(off, "diagnose", {"spec": spec.to_dict(), "grappler": off.grappler_dict},
                                       slot=None, timeout=timeout, fresh=True, on_progress=on_progress)
            answer = dict(answer, fused_aborted=aborted, nodes=[])
    return answer


def run_script(text: str, config: Config) -> dict:
    """A repro script in a fresh Python process with the configuration's flags: its exit, output and findings."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("TF_", "EXPLORER_"))}
    env.update(config.env_dict)
    env["CUDA_VISIBLE_DEVICES"] = "-1" if config.device != "gpu" else env.get("CUDA_VISIBLE_DEVICES", "")
    env["TF_CPP_MIN_LOG_LEVEL"] = "2"
    with tempfile.TemporaryDirectory(prefix="explorer-repro-") as folder:
        path = os.path.join(folder, "repro.py")
        with open(path, "w") as handle:
            handle.write(text)
        started = time.perf_counter()
        try:
            done = subprocess.run([sys.executable, path], cwd=folder, env=env, capture_output=True, text=True,
                                  timeout=SCRIPT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return {"rc": None, "timed_out": True, "fault": "hangs", "wall_s": SCRIPT_TIMEOUT_S}
    found = diagnosis.read_findings(done.stdout) or {}
    fault = found.get("fault")
    if done.returncode < 0:
        fault = "aborts"
    elif done.returncode != 0 and not found:
        fault = "script-error"
    lines = [ln for ln in (done.stdout + done.stderr).splitlines() if ln.strip()]
    return {"rc": done.returncode, "fault": fault, "findings": found, "wall_s": round(time.perf_counter() - started, 2),
            "last_lines": lines[-6:]}


def ways_around(engine, spec, config: Config, reps: int = 20) -> list[dict]:
    """Each way around, run: does the model then run, and agree with its unfused graph, and how fast."""
    candidates = [("remapper-off", "the remapper off for this model", config.with_switch("remapping", "off"))]
    onednn = config.env_dict.get("TF_ENABLE_ONEDNN_OPTS")
    if onednn != "0":
        candidates.append(("onednn-off", "oneDNN off (TF_ENABLE_ONEDNN_OPTS=0)", config.with_env("TF_ENABLE_ONEDNN_OPTS", "0")))
    else:
        candidates.append(("onednn-on", "oneDNN on (TF_ENABLE_ONEDNN_OPTS=1)", config.with_env("TF_ENABLE_ONEDNN_OPTS", "1")))
    found = []
    for way, words, cfg in candidates:
        try:
            answer = check(engine, spec, cfg, reps=reps)
        except WorkerError as exc:
            found.append({"way": way, "words": words, "config": cfg.to_dict(), "runs": False, "error": exc.message})
            continue
        verdict = diagnosis.verdict(answer)
        found.append({"way": way, "words": words, "config": cfg.to_dict(), "runs": verdict["runs"],
                      "agrees": verdict["fault"] is None and verdict["runs"], "verdict": verdict,
                      "timing": answer.get("timing"), "warnings": tf_failures(answer.get("notable") or [])})
    return found


# The rewrites that prevent only the responsible fusion, the maths kept (``worker.rewrite``): by a fused op the
# pinned node's fusion holds, the fix and its words.
REWRITE_WAYS = (
    ("FusedBatchNorm", "fold-batchnorm",
     "the batch norm folded into the convolution (fold-batchnorm: a rewrite of the model, same maths)"),
    ("Mish", "split-mish",
     "Mish's softplus written as log1p(exp(x)), which the remapper does not fuse (split-mish: a rewrite of the "
     "model, same maths)"),
)


# Around a remapper that failed (Grappler kept none of its fusions): the sum it fails on computed twice.
SPLIT_ADD = ("each residual sum the remapper fails on computed twice, so that it fuses the convolution with its "
             "bias only (split-add: a rewrite of the model, same maths)")


def rewrite_way(engine, spec, config: Config, pinned: dict, reps: int, out: str | None) -> dict | None:
    """Only that fusion prevented, the maths kept: for an imported model whose responsible fusion holds a batch
    norm, the batch norm folded into the convolution's weights and bias (the remapper then makes Conv2D + BiasAdd
    + activation instead); where it holds Mish, that Mish's softplus split so that the remapper leaves it out
    (``REWRITE_WAYS``)."""
    found = next((way for way in REWRITE_WAYS if way[0] in pinned["target"]), None)
    if found is None:
        return None
    _, fix, words = found
    targets = {fix: [pinned["node"]]} if fix == "split-mish" else None  # that Mish alone; a fold: every one
    return rewritten_way(engine, spec, config, fix, words, targets, reps, out)


def rewritten_way(engine, spec, config: Config, fix: str, words: str, targets: dict | None, reps: int,
                  out: str | None) -> dict | None:
    """The rewrite ``fix`` applied to a copy of an imported model (None for another source, or where it finds no
    site), the copy run like the model (does it run, does it agree with its own unfused graph, its time) and kept
    at ``out`` if given."""
    from ..model.sources import source_of
    from . import scratch
    from .fixes import _fixed_spec, _keep

    if "fix" not in source_of(spec).offers:
        return None
    work = scratch.folder("diagnose")
    try:
        with engine.queue(config.device).slot("graph"):
            written, _ = engine.request(config, "fix", {"spec": spec.to_dict(), "out_dir": work, "targets": targets,
                                                        "variants": [{"name": fix, "fixes": [fix]}]},
                                        slot=None, fresh=True)
        variant = written["variants"][0]
        if not any(record["sites"] for record in variant["records"]):
            return None  # not in a form the rewrite takes (a batch norm that is no FusedBatchNorm or Mul/Add, say)
        answer = check(engine, resolve(_fixed_spec(variant, spec)), config, reps=reps)
        verdict = diagnosis.verdict(answer)
        kept = _keep(variant, out) if out else None
    except (WorkerError, ExplorerError) as exc:
        return {"way": fix, "words": words, "runs": False, "agrees": False,
                "error": getattr(exc, "message", None) or str(exc)}
    finally:
        shutil.rmtree(work, ignore_errors=True)
    fused = sorted({f"{n['op']} [{', '.join(n['fused_ops'])}]" for n in answer.get("nodes") or ()})
    return {"way": fix, "words": words, "config": config.to_dict(), "runs": verdict["runs"],
            "agrees": verdict["fault"] is None and verdict["runs"], "verdict": verdict, "timing": answer.get("timing"),
            "fused": fused, "model_out": kept, "warnings": tf_failures(answer.get("notable") or [])}


def _public(model: dict) -> dict:
    return {k: v for k, v in model.items() if k not in ("nodes", "spec", "fingerprint")}
