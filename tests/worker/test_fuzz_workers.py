"""Random specs, valid and not, through a real Engine and real TensorFlow workers.

Every request either returns a result or raises an ``ExplorerError`` (a refusal naming a field, or
a worker failure with a message for a person); each returns within its time limit; and when the
engine is closed no worker process or worker directory is left behind.

Valid specs are kept tiny (every size 1..6) so the run stays short; invalid ones are refused
before any TensorFlow runs or fail inside the worker, and both must come back as explanations.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections import Counter

import psutil
import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st

from explorer.engine.engine import MAX_SWEEP_POINTS, Engine
from explorer.engine.runner import Limits
from explorer.errors import ExplorerError, SpecError, WorkerError
from explorer.model.catalog import PRESETS
from explorer.model.chain import ACTIVATIONS, BIASES, CONTRACTIONS, NORMS, Chain
from explorer.model.flags import GRAPPLER_SWITCHES
from explorer.model.spec import PARAMS

pytestmark = pytest.mark.tf

EXAMPLES = 25
LIMITS = Limits(startup_s=90.0, inspect_s=60.0, bench_extra_s=60.0, max_workers=3)
SLACK_S = 30.0  # on top of a request's own limits: killing and replacing a worker takes a moment

TINY = {"filter_size": st.integers(1, 3), "multiplier": st.integers(1, 2)}
ENVS = [{}, {"TF_ENABLE_ONEDNN_OPTS": "0"}]  # two worker configurations, no more: each start costs seconds
JUNK = st.none() | st.booleans() | st.integers(-(2**33), 2**33) | st.floats() | st.text(max_size=6) | st.lists(
    st.integers(), max_size=2)


def tiny_value(name: str):
    param = PARAMS[name]
    if param.kind == "int":
        return TINY.get(name, st.integers(1, 6))
    if param.kind == "bool":
        return st.booleans()
    return st.sampled_from(param.choices)


def chosen(draw, weights: dict):
    """One key of ``weights``, drawn with about those integer weights (the first key is the common case).

    Hypothesis favours the ends of an integer range, so the first key also takes the last place.
    """
    pool = [key for key, weight in weights.items() for _ in range(weight)]
    pool.append(pool[0])
    return pool[draw(st.integers(0, len(pool) - 1))]


@st.composite
def specs(draw):
    """A tiny valid spec, or one with a single thing wrong, or junk."""
    if chosen(draw, {"preset": 3, "chain": 2}) == "preset":
        preset = PRESETS[draw(st.sampled_from(sorted(PRESETS)))]
        data, chain = {"preset": preset.id}, preset.chain
    else:
        chain_dict = {
            "contraction": draw(st.sampled_from(CONTRACTIONS)), "bias": draw(st.sampled_from(BIASES)),
            "norm": draw(st.sampled_from(NORMS)), "activation": draw(st.sampled_from(ACTIVATIONS)),
            "side_add": draw(st.booleans()), "squeeze": chosen(draw, {False: 5, True: 1}),
        }
        try:
            chain = Chain.from_dict(chain_dict)
        except SpecError:
            chain = None  # an impossible chain: resolve must refuse it
        if chain is None and chosen(draw, {"fix": 3, "keep": 1}) == "fix":
            # mostly repair it into a buildable chain, so that many chain specs reach TensorFlow
            chain_dict.update(squeeze=False, bias="none" if chain_dict["contraction"] == "none" else "BiasAdd")
            if chain_dict["contraction"] == "none":
                chain_dict["norm"] = "FusedBatchNorm"
            elif chain_dict["contraction"] in ("MatMul", "BatchMatMulV2"):
                chain_dict["norm"] = "none"
            chain = Chain.from_dict(chain_dict)
        data = {"chain": chain_dict}
    params = {}
    names = chain.param_names() if chain else ["m", "k", "n", "dtype"]
    for name in names:
        if draw(st.integers(0, 3)):  # some left to their (preset) defaults, which may be large: see below
            params[name] = draw(tiny_value(name))
    # Defaults are sized for timing, not for a quick fuzz: pin every size that is left out.
    for name in names:
        if PARAMS[name].kind == "int" and name not in params:
            params[name] = draw(tiny_value(name))
    if chain is not None and chain.squeeze:
        params["width"] = 1
    data["params"] = params
    fault = chosen(draw, {"none": 12, "value": 1, "unknown": 1, "extra": 1, "preset": 1, "junk": 1, "range": 1})
    if fault == "value":
        params[draw(st.sampled_from(names))] = draw(JUNK | st.sampled_from(["", "NCHW", "float8", "-1", "1e9"]))
    elif fault == "unknown":
        params[draw(st.sampled_from(["bogus", "m", "channels", "height"]))] = 2
    elif fault == "extra":
        data[draw(st.sampled_from(["code", "__class__", "eval"]))] = "print('hi')"
    elif fault == "preset":
        data["preset"] = draw(st.sampled_from(["", "nope", "../etc/passwd", "matmul_bias_relu "]) | JUNK)
    elif fault == "junk":
        return draw(JUNK | st.dictionaries(st.text(max_size=5), JUNK, max_size=3))
    elif fault == "range":
        name = draw(st.sampled_from([n for n in names if PARAMS[n].kind == "int"] or ["m"]))
        params[name] = draw(st.sampled_from([0, -1, PARAMS[name].high + 1, 2**63]))
    return data


@st.composite
def configs(draw):
    # gpu-sim (Grappler on a virtual GPU) is a third worker; rare, since each new worker costs seconds
    data = {"device": chosen(draw, {"cpu": 14, "gpu-sim": 1, "gpu-sim:nope": 1, "tpu": 1, "": 1, "CPU": 1})}
    env = dict(ENVS[chosen(draw, {0: 2, 1: 1})])
    if chosen(draw, {"good": 12, "bad": 1}) == "bad":
        env[draw(st.sampled_from(["TF_ENABLE_ONEDNN_OPTS", "LD_PRELOAD", "PYTHONPATH"]))] = draw(
            st.sampled_from(["2", "/tmp/x.so", "yes"]))
    data["env"] = env
    switches = draw(st.lists(st.sampled_from(sorted(GRAPPLER_SWITCHES)), max_size=3, unique=True))
    data["grappler"] = {s: draw(st.sampled_from(["on", "off", "default"])) for s in switches}
    if chosen(draw, {"good": 12, "bad": 1}) == "bad":
        data["grappler"]["no_such_pass"] = "on"
    return data


BAD_REPS = [0, 2, 10**6, "5", True, 2.5, float("nan")]
BAD_WARMUP = [-1, 10**4, None]
BAD_SECONDS = [0, 10**9, float("inf")]


@st.composite
def requests(draw):
    op = chosen(draw, {"inspect": 6, "bench": 3, "sweep": 1})
    request = {"op": op, "spec": draw(specs()), "config": draw(configs())}
    if op in ("bench", "sweep"):
        good = chosen(draw, {True: 4, False: 1})
        request.update(reps=draw(st.integers(3, 5) if good else st.sampled_from(BAD_REPS)),
                       warmup=draw(st.integers(0, 1) if good else st.sampled_from(BAD_WARMUP)),
                       max_seconds=draw(st.sampled_from([1.0, 2.0]) if good else st.sampled_from(BAD_SECONDS)))
    if op == "sweep":
        request["param"] = draw(st.sampled_from(["m", "n", "batch", "height", "channels", "dtype", "zzz"]))
        good = chosen(draw, {True: 3, False: 1})
        request["values"] = draw(st.lists(st.integers(1, 4), min_size=1, max_size=2) if good else
                                 st.sampled_from([[], list(range(1, MAX_SWEEP_POINTS + 2)), ["a"], [0], [2**40]]))
    return request


def budget(request: dict) -> float:
    """How long the request may take by the engine's own limits, plus slack."""
    start = LIMITS.startup_s + SLACK_S
    if request["op"] == "inspect":
        return start + LIMITS.inspect_s
    seconds = request["max_seconds"]
    seconds = seconds if isinstance(seconds, (int, float)) and math.isfinite(seconds) and seconds < 1000 else 0
    one = start + seconds + LIMITS.bench_extra_s
    points = len(request.get("values") or [0]) if request["op"] == "sweep" else 1
    return one * min(points, MAX_SWEEP_POINTS)


def call(engine: Engine, request: dict):
    kwargs = {k: v for k, v in request.items() if k not in ("op", "spec", "config")}
    return getattr(engine, request["op"])(request["spec"], request["config"], **kwargs)


def worker_children() -> set[int]:
    me = psutil.Process()
    found = set()
    for child in me.children(recursive=True):
        try:
            if "explorer.worker" in " ".join(child.cmdline()):
                found.add(child.pid)
        except psutil.Error:
            pass
    return found


def owned_by(owner: str, pids: set[int]) -> set[int]:
    found = set()
    for pid in pids:
        try:
            if psutil.Process(pid).environ().get("EXPLORER_WORKER_OWNER") == owner:
                found.add(pid)
        except psutil.Error:
            pass
    return found


def test_random_specs_through_real_workers_never_escape_hang_or_leak():
    before = worker_children()
    engine = Engine(limits=LIMITS, cache_dir=None)
    seen_pids: set[int] = set()
    seen_dirs: set[str] = set()
    outcomes: Counter = Counter()

    @settings(max_examples=EXAMPLES, derandomize=True, database=None, deadline=None,
              phases=(Phase.explicit, Phase.generate))  # no shrinking: each step would run TensorFlow
    @given(requests())
    def one_request(request):
        box: dict = {}

        def run():
            try:
                box["result"] = call(engine, request)
            except BaseException as exc:  # noqa: BLE001 - the test inspects whatever escaped
                box["error"] = exc

        thread = threading.Thread(target=run, daemon=True)
        started = time.monotonic()
        thread.start()
        thread.join(budget(request))
        elapsed = time.monotonic() - started
        assert not thread.is_alive(), f"{request['op']} still running after {elapsed:.0f} s: {request!r}"
        for worker in engine.pool.workers():
            seen_pids.add(worker.pid)
            seen_dirs.add(worker.workdir)
        error = box.get("error")
        if error is None:
            result = box["result"]
            results = [p["result"] for p in result] if request["op"] == "sweep" else [result]
            for r in results:
                seen_pids.add(r["worker"]["pid"])
                assert "stages" in r if request["op"] == "inspect" else "summary" in r
            outcomes[f"{request['op']}: ok"] += 1
            return
        assert isinstance(error, ExplorerError), f"{type(error).__name__} escaped: {error!r} from {request!r}"
        text = str(error)
        assert text.strip() and "Traceback" not in text, text
        if isinstance(error, SpecError):
            assert isinstance(error.field, str) and error.field.strip()
            outcomes[f"{request['op']}: refused ({error.field.split('.')[0]})"] += 1
        else:
            assert isinstance(error, WorkerError) and error.kind in WorkerError.KINDS, error
            # Tiny models cannot legitimately hang a worker or fill its memory.
            assert error.kind not in ("timeout", "memory"), f"{error.kind}: {text} from {request!r}"
            outcomes[f"{request['op']}: worker said {error.kind}"] += 1
            print("  worker error:", error.kind, text[:300], "<-", request["spec"], request["config"])
        assert len(engine.pool.workers()) <= LIMITS.max_workers

    try:
        one_request()
    finally:
        for worker in engine.pool.workers():
            seen_pids.add(worker.pid)
            seen_dirs.add(worker.workdir)
        engine.close()
    print("fuzz outcomes:", dict(sorted(outcomes.items())))
    assert sum(outcomes.values()) >= EXAMPLES
    assert any(k.endswith(": ok") for k in outcomes), "no example reached TensorFlow successfully"
    assert seen_pids, "no worker ever started"
    left = []
    for pid in seen_pids:
        try:
            proc = psutil.Process(pid)
            if proc.status() != psutil.STATUS_ZOMBIE and "explorer.worker" in " ".join(proc.cmdline()):
                left.append(pid)
        except psutil.NoSuchProcess:
            pass
    assert not left, f"worker processes left behind after close(): {left}"
    # and no other worker of this engine (another role, one a background start finished after close() closes once
    # it is up); other engines of this test process (a fixture's) may start workers of their own meanwhile
    deadline = time.monotonic() + SLACK_S
    while (own := owned_by(engine.pool.owner, worker_children() - before)) and time.monotonic() < deadline:
        time.sleep(0.5)
    assert not own, f"worker processes of the closed engine still running: {own}"
    assert not [d for d in seen_dirs if os.path.exists(d)], "worker directories left behind"
