"""The machine's own speeds, measured in the worker: memory bandwidth over working-set sizes and the matmul FLOP rate.

Bandwidth is STREAM-like: *copy* (``b = a``, 2 arrays moved) and *triad* (``a = b + s·c``), numpy on as many
threads as the machine has cores from 1 MiB on (TensorFlow's ops use them all), each thread on its own
slice. Below about 64 KiB a numpy call's own overhead (~1 µs) shows in the figure, as a TF op's does. numpy's
triad is two passes (``a = s·c`` then ``a += b``): counted as the 5 array passes it really makes. A size is
the bytes of the three arrays together (copy touches two of them), the way an op's working set is counted; each size is repeated
until it has run long enough to time, and the best of a few tries is kept (STREAM's convention: the
least disturbed run). The FLOP rate is TensorFlow's own MatMul, the kernel the models run.
"""

from __future__ import annotations

import os
import time
from concurrent.futures import ThreadPoolExecutor

KIB = 1024


def cache_sizes() -> dict[str, int]:
    """L1d, L2, L3 sizes in bytes from sysfs (absent levels left out)."""
    sizes = {}
    base = "/sys/devices/system/cpu/cpu0/cache"
    try:
        entries = sorted(os.listdir(base))
    except OSError:
        return sizes
    for entry in entries:
        try:
            with open(f"{base}/{entry}/level") as f:
                level = f.read().strip()
            with open(f"{base}/{entry}/type") as f:
                kind = f.read().strip()
            with open(f"{base}/{entry}/size") as f:
                text = f.read().strip()
        except OSError:
            continue
        if kind == "Instruction":
            continue
        factor = {"K": KIB, "M": KIB ** 2, "G": KIB ** 3}.get(text[-1:], 1)
        sizes[f"L{level}"] = int(text.rstrip("KMG") or 0) * factor
    return sizes


def default_sizes(caches: dict[str, int]) -> list[int]:
    """Working sets from inside L1 to well beyond the last-level cache, ×4 apart."""
    low = 16 * KIB
    high = min(max(64 * KIB ** 2, 8 * max(caches.values(), default=0)), 256 * KIB ** 2)
    sizes = []
    size = low
    while size <= high:
        sizes.append(size)
        size *= 4
    return sizes


def bandwidth(sizes: list[int], threads: int, min_time_s: float = 0.02, tries: int = 3) -> list[dict]:
    """Per working-set size: copy and triad GB/s (1e9 bytes per second) and the threads that ran them.

    Below ``PARALLEL_FROM`` one thread runs (handing a few KiB to another thread costs more than moving
    them; Eigen, which runs TensorFlow's elementwise ops, likewise keeps small ops on one thread).
    """
    import numpy as np

    points = []
    with ThreadPoolExecutor(threads) as pool:
        for size in sizes:
            used = threads if size >= PARALLEL_FROM else 1
            n = max(size // (3 * 8), used * 64)  # three float64 arrays make the working set
            a, b, c = (np.full(n, v) for v in (1.0, 2.0, 0.5))
            bounds = [(n * i // used, n * (i + 1) // used) for i in range(used)]
            copy_views = [(b[lo:hi], a[lo:hi]) for lo, hi in bounds]
            triad_views = [(a[lo:hi], b[lo:hi], c[lo:hi]) for lo, hi in bounds]
            point = {"bytes": 3 * n * 8, "threads": used}
            for name, kernel, views, moved in (("copy", _copy, copy_views, 2 * n * 8),
                                               ("triad", _triad, triad_views, 5 * n * 8)):
                reps = 1
                while True:  # enough repetitions that one timing lasts min_time_s
                    took = _timed(pool, kernel, reps, views)
                    if took >= min_time_s or reps >= 1 << 20:
                        break
                    reps *= max(2, min(16, int(min_time_s / max(took, 1e-7)) + 1))
                best = min([took] + [_timed(pool, kernel, reps, views) for _ in range(tries - 1)])
                point[f"{name}_gbs"] = round(moved * reps / best / 1e9, 3)
            points.append(point)
    return points


PARALLEL_FROM = 1024 * KIB


def _copy(reps, views):
    import numpy as np

    dst, src = views
    for _ in range(reps):
        np.copyto(dst, src)


def _triad(reps, views):
    import numpy as np

    x, y, z = views
    for _ in range(reps):
        np.multiply(z, 3.0, out=x)
        np.add(x, y, out=x)


def _timed(pool, kernel, reps, views) -> float:
    t0 = time.perf_counter()
    if len(views) == 1:
        kernel(reps, views[0])
    else:
        list(pool.map(lambda v: kernel(reps, v), views))
    return time.perf_counter() - t0


def matmul_rate(tf, size: int = 1024, tries: int = 5) -> dict:
    """TensorFlow's float32 MatMul on the CPU, size³: the best of a few calls, in GFLOP/s."""
    with tf.device("/CPU:0"):
        a = tf.random.stateless_uniform((size, size), seed=(1, 2))
        b = tf.random.stateless_uniform((size, size), seed=(3, 4))
        tf.linalg.matmul(a, b).numpy()  # warm-up: thread pool and kernel selection
        best = float("inf")
        for _ in range(tries):
            t0 = time.perf_counter()
            tf.linalg.matmul(a, b).numpy()
            best = min(best, time.perf_counter() - t0)
    return {"gflops": round(2 * size ** 3 / best / 1e9, 2), "size": size, "dtype": "float32"}


def run(tf, request: dict) -> dict:
    """The probe a request asks for (``sizes`` and ``matmul_size`` to keep a test small)."""
    caches = cache_sizes()
    threads = int(request.get("threads") or os.cpu_count() or 1)
    sizes = [int(s) for s in request.get("sizes") or default_sizes(caches)]
    started = time.perf_counter()
    curve = bandwidth(sizes, threads, float(request.get("min_time_s", 0.02)))
    rate = matmul_rate(tf, int(request.get("matmul_size", 1024)))
    return {"bandwidth": curve, "matmul": rate, "caches": caches, "threads": threads,
            "probe_s": round(time.perf_counter() - started, 3)}
