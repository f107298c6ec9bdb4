"""Compilers: what fuses a model's ops (Grappler's remapper, XLA), one table.

Each compiler is one line of ``COMPILERS``: the worker requests that show what it made and time it,
the worker modules that answer them, the analysis the engine adds, the command line's words for it,
and the page's tab. The command line's ``--compiler`` takes a compiler's id, or ``both`` (every
compiler side by side); nothing else names a compiler. Hooks in other layers are "module:attribute",
imported by the layer that calls them:

    worker_inspect, worker_bench   (rt, request) -> plain result          in the worker process
    annotate, annotate_bench       (result) -> result with the analysis    in the engine
    text, bench_text               (result) -> str                         what the command line prints
    page                           (engine, choice, grappler result) -> None   its tab (None: no tab)

Grappler is first: it runs on every request, its results are the page's main tabs, and the others
are compared with it. A compiler's benchmark times the unfused graph, Grappler's, and its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import SpecError


@dataclass(frozen=True)
class Compiler:
    id: str  # --compiler's value, a result's "compiler", the key its result takes beside Grappler's
    label: str  # in words, for the page and the CLI
    inspect: str  # the engine's call (engine.interface) that shows what it made
    inspect_op: str  # the worker request behind it
    worker_inspect: str
    bench_op: str  # the worker request that times it against the unfused graph
    worker_bench: str
    annotate: str
    annotate_bench: str
    text: str
    bench_text: str
    page: str | None = None
    tab: str = ""  # its tab's title on the page
    simulated: bool = False  # a simulated GPU shows what it makes


COMPILERS: tuple[Compiler, ...] = (
    Compiler("grappler", "Grappler (the remapper)", "inspect", "inspect", "explorer.worker.grappler:answer",
             "bench", "explorer.worker.bench:run", "explorer.analysis.annotate:annotate",
             "explorer.analysis.annotate:annotate_bench", "explorer.present.text:inspect_text",
             "explorer.present.text:bench_text", simulated=True),
    Compiler("xla", "XLA (tf.function(jit_compile=True))", "xla", "xla", "explorer.worker.xla:inspect",
             "bench_xla", "explorer.worker.xla_bench:run", "explorer.analysis.xla_fusion:annotate_xla",
             "explorer.analysis.xla_bench:annotate_three_way", "explorer.present.text:xla_text",
             "explorer.present.text:three_way_text", page="explorer.ui.xla:panel", tab="XLA"),
)
BY_ID = {c.id: c for c in COMPILERS}
BOTH = "both"  # every compiler, side by side
CHOICES = (*BY_ID, BOTH)
FIRST = COMPILERS[0]


def chosen(choice: str) -> tuple[Compiler, ...]:
    """The compilers a --compiler value names: one, or every one for ``both``."""
    if choice == BOTH:
        return COMPILERS
    if choice not in BY_ID:
        raise SpecError("compiler", f"{choice!r} is not a compiler; choose {', '.join(CHOICES[:-1])} or {BOTH}")
    return (BY_ID[choice],)


def timed(choice: str) -> Compiler:
    """The compiler whose benchmark a --compiler value runs: its own (which times Grappler's too), the last
    one's for ``both``."""
    return chosen(choice)[-1]


def by_op(op: str) -> tuple[Compiler, str] | None:
    """The compiler a worker request belongs to, and whether it is its "inspect" or its "bench"."""
    for compiler in COMPILERS:
        if op == compiler.inspect_op:
            return compiler, "inspect"
        if op == compiler.bench_op:
            return compiler, "bench"
    return None
