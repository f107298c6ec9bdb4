"""The shapes of the plain result data every layer passes on: what a worker returns, what the engine
and the analysis add, what the command line prints and the page draws.

TypedDicts, because the data crosses a process boundary and the disk cache as JSON: a dict in, the
same dict out, with its keys named once here. ``total=False`` where a key is present only in some
results (a simulated GPU has no executed stage; a cached result has no worker timings).
"""

from __future__ import annotations

from typing import NotRequired, TypedDict


class EdgeDict(TypedDict):
    src: str
    port: int
    control: bool


class NodeDict(TypedDict):
    name: str
    op: str
    device: str
    dtype: str
    inputs: list[EdgeDict]
    fused_ops: list[str]
    attrs: dict[str, str]
    shape: str


class GraphDict(TypedDict):
    stage: str  # "traced", "optimized", "executed" or "pass"
    nodes: list[NodeDict]


class Fingerprint(TypedDict, total=False):
    """What ran the model (worker.host.fingerprint)."""

    tensorflow: str
    python: str
    onednn: bool | None
    cuda_build: bool
    cuda_version: str
    cudnn_version: str
    devices: list[str]
    gpus: list[dict]  # {"name", "model", "compute_capability"}
    cpu_model: str
    cpu_flags: list[str]
    cpu_count: int
    flags: dict[str, str]  # the explorer's env flags set in the worker
    tf32: bool
    gpu_memory_growth: bool
    cuda_visible_devices: str | None
    device: str
    import_s: float
    pid: int
    simulated_gpu: dict  # a simulated GPU's profile


class GrapplerAccount(TypedDict, total=False):
    """Grappler's own account of a run, from its log (analysis.grappler_log) and per-pass dumps."""

    remapper_log: list[str]
    notable: list[str]
    items: list[dict]  # grappler items, their iterations and passes
    pass_graphs: dict[str, GraphDict]  # dump file name -> graph
    pass_graphs_skipped: str | None  # why no pass graph was recorded (a frozen model's weights)
    pass_graphs_deferred: bool  # a big model's first graphs came without them: ask with pass_graphs=True
    function_nodes: int  # nodes of the model's function as Grappler received it
    log: list[str]
    log_remapper_off: list[str]


class FusionDict(TypedDict):
    """A fused node and the nodes it absorbed (analysis.fusion.Fusion.to_dict)."""

    node: str
    op: str
    fused_ops: list[str]
    absorbed: list[str]
    absorbed_ops: list[str]
    root: str | None
    consts: list[str]
    describe: str
    description: str  # the same words as "describe" (an older key of inspect --json)


class SettingDict(TypedDict):
    """One setting a fix changes (analysis.preconditions.Setting)."""

    kind: str  # "env", "grappler", "device", "param" or "chain"
    name: str
    value: object  # None: back to TensorFlow's default


class CheckDict(TypedDict):
    name: str
    ok: bool | None  # None: the rules cannot tell here
    detail: str
    fix: str  # in words; "" when the check holds
    changes: list[list[SettingDict]]  # the same as settings: one list per way to make it pass


class FusedOpDict(TypedDict):
    op: str
    fused_ops: list[str]


class Explanation(TypedDict):
    """Why a pattern did or did not fuse (analysis.verdict.explain)."""

    pattern: str
    verdict: str  # "fused", "partly fused", "not fused", "decomposed", "not decomposed"
    full: FusedOpDict | None  # the one fused node if every condition held
    observed: list[FusedOpDict]
    predicted: list[FusedOpDict]
    agrees: bool  # whether the rules' prediction matches the graph
    certain: bool
    reasons: list[str]  # the failing conditions, in words (or why it fused)
    why: str  # the reasons in one sentence, with the disagreement if any (as the CLI prints it)
    fixes: list[str]  # what would make it fuse, in words
    changes: list[list[SettingDict]]  # the same as settings
    checks: list[CheckDict]
    notes: list[str]


class WorkerInfo(TypedDict):
    """How a worker request ran (engine.Engine._run)."""

    pid: int | None  # None: a replayed answer whose recording names no process
    new_process: bool
    startup_s: float
    wall_s: float
    replayed: NotRequired[bool]  # answered from a recording (engine.replay)


class AgreementCheck(TypedDict):
    """Whether the fused graph computes what the unfused one does (worker.agreement; analysis.agreement)."""

    status: str  # "agrees", "differs", "varies", "fails", "aborts", "unchecked", "skipped"
    headline: str | None  # the verdict above everything else ("The fusion breaks this model"), None if it agrees
    summary: str  # one sentence: what was found
    reference: str  # what the fused run was compared with
    inputs: dict  # {"seed", "how", "tensors": [{"name", "shape", "dtype", "min", "max", "mean"}]}
    comparison: dict | None  # analysis.agreement.compare of the outputs, None when a run failed
    fused_error: dict | None  # {"type", "message", "node", "op"}: the failing node when TF's error names it
    reference_error: dict | None
    reference_shapes: list[list[int]] | None
    edges: list[dict]  # edge inputs tried: {"case", "inputs", "shapes", "status", "summary", "comparison", ...}
    seconds: float


class InspectResult(TypedDict, total=False):
    """An inspect request's result: the worker's part, then what the engine and the analysis add."""

    # from the worker (worker.grappler)
    spec: dict
    stages: dict[str, GraphDict]  # "traced", "optimized", "executed"
    pbtxt: dict[str, str]  # large constants' contents elided (worker.elide)
    elided_bytes: dict[str, int]  # per stage, the constant bytes left out of its pbtxt
    output_shapes: list[list[int]]
    agreement: AgreementCheck  # the fused graph against the unfused one, same inputs
    executed_tensors: dict  # {"fused", "unfused"}: each executed op's tensors at the shapes fed (worker.shapes)
    model_info: dict  # an imported model's inputs, signatures and outputs (worker.models.describe)
    function_graphs: int
    grappler: GrapplerAccount
    fingerprint: Fingerprint
    timings: dict[str, float]
    # a simulated GPU's (worker.simulate)
    simulated: bool
    profile: dict
    limits: list[str]
    method: str
    unfused_optimized: GraphDict
    # an import traced with its unknown dimensions fixed (worker.models), and how that changed the fusions
    as_served: GraphDict
    dims: dict  # analysis.dims.compare
    xla_clusters: list[dict]  # XLA's clusters of the graph (worker.xla), when it formed some
    # from the engine
    config: dict
    worker: WorkerInfo
    cached: bool
    shared: bool
    key: str
    # from the analysis (analysis.annotate)
    fusions: list[FusionDict]  # traced -> after Grappler
    fusions_by_pair: dict[str, list[FusionDict]]  # "traced->optimized", "optimized->executed", "traced->executed"
    renames_by_pair: dict[str, list[list[str]]]  # [name, old op, new op]
    warnings: list[str]
    grappler_skipped: str | None  # TF's log line when it ran the function without Grappler
    remapper_failed: str | None  # TF's log line when the remapper failed and its changes were dropped
    explanation: Explanation
    report: dict  # analysis.model_report.report: fusions by pattern, near-misses, totals


class VariantProof(TypedDict):
    remapping: bool
    executed_ops: list[str]
    fused_nodes: list[dict]
    optimized_ops: list[str]


class Agreement(TypedDict, total=False):
    max_abs: float
    max_rel: float
    tolerance: float
    within_tolerance: bool | None  # None: the outputs vary from call to call (``varies`` says why)
    varies: str | None
    tf32: bool
    comparison: dict  # the bench's fused against unfused: analysis.agreement.compare, as inspect's check
    off_declared: str  # an output of another shape than the traced graph declares (analysis.agreement.off_declared)


class BenchResult(TypedDict, total=False):
    """A fused-against-unfused benchmark (worker.bench), with what the engine and analysis add."""

    spec: dict
    reps_requested: int
    reps_done: int
    warmup: int
    order: str
    samples_ns: dict[str, list[int]]  # "fused", "unfused": pair i is sample i of each
    proof: dict[str, VariantProof]
    reinstantiated_during_timing: int
    agreement: Agreement
    fingerprint: Fingerprint
    elapsed_s: float
    config: dict
    worker: WorkerInfo
    isolation: dict
    measured_at: str
    summary: dict  # analysis.stats.bench_summary
    proof_summary: dict
    comparison: str  # what a configuration that itself switches fusion off compares (analysis.annotate.compared)
    nothing_to_compare: str
    first_variant: str
    # several fresh processes (analysis.annotate.annotate_replicated)
    mode: str
    processes: int
    per_process: list[dict]


class SweepResult(TypedDict):
    param: str
    points: list[dict]  # {"value", "result": BenchResult}
    rows: list[dict]  # analysis.stats.sweep_table
    pays_from: int | None


class MatrixRow(TypedDict, total=False):
    """One cell of the what-if matrix (engine.matrix.fill): what it ran and what it found. Every key from
    ``preset`` to ``agreement_summary`` is in a filled row (a cell not filled yet has an empty one); the others
    come with a simulated GPU's prediction, a benchmark or a Ray task."""

    preset: str  # the preset's id; "" for a row of another model
    model: str  # the row's name for people
    settings: dict[str, str]  # the varied names and this cell's values
    label: str
    device: str | None  # None: the cell has no configuration (status says why)
    env: dict[str, str]
    grappler: dict[str, str]
    params: dict
    status: str  # "planned", "invalid", "n/a", "ok", "failed", "stopped", "unrunnable"
    reason: str
    verdict: str | None  # the explanation's verdict, or "fused"/"not fused" for a whole model
    pattern: str | None
    fused_op: str  # each fused op once, with its count
    why: str | None
    because: str
    simulated: bool
    cached: bool
    key: str | None
    fingerprint: Fingerprint
    node: dict  # the Ray node that ran it
    pid: int | None
    agreement: str | None  # AgreementCheck's status
    agreement_summary: str | None
    # a simulated GPU's prediction (engine.matrix.prediction_fields)
    predicted_speedup: float | None  # None: part of the model runs on the host CPU
    predicted_fused_us: float
    predicted_unfused_us: float
    prediction: str
    measured_gpu_speedup: float | None
    measured_gpu: str | None
    # a benchmark
    speedup: float | None
    ci_low: float | None
    ci_high: float | None
    speedup_verdict: str | None
    processes: int
    pairs: int | None
    between_share: float | None
    bench_cached: bool
    bench_error: str  # why it has no speedup
    # a Ray task (engine.ray_backend)
    attempts: int
    retried_because: list[str]
    ray_retries: int | None
