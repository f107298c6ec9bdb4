"""Size limits every model source stays under (presets, op chains, layer stacks); the page and the CLI state them."""

from __future__ import annotations

import math

MAX_DIM = 1 << 20
MAX_TENSOR_BYTES = 512 << 20
MAX_MODEL_BYTES = 2 << 30

# Above this many nodes in the model's function, its first graphs come without the graph after every
# Grappler pass (asked for separately when the pass tab draws them): TF writing, and the worker reading
# and comparing, ~30 dumps of a 1,500-node network is a large share of a warm import's first graphs.
PASS_GRAPHS_AUTO_NODES = 500

# Bounds of a benchmark request (the engine checks them; the page, the command line and an experiment state them).
MAX_REPS = 2000
MAX_WARMUP = 200
MAX_BENCH_SECONDS = 300.0
MAX_SWEEP_POINTS = 12
MAX_PROCESSES = 20  # fresh worker processes of one replicated benchmark (pyperf's default for CPython)


def bytes_text(n: float) -> str:
    """'512 MiB', '3.6 TiB': a size in the unit a reader takes in at once."""
    units = ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
    i = min(int(math.log(max(n, 1), 1024)), len(units) - 1)
    return f"{n / 1024 ** i:.3g} {units[i]}"
