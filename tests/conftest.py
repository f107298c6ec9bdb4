"""Markers by directory, so that a selection such as ``-m "not tf and not e2e"`` starts no TensorFlow.

    unit/       no TensorFlow, no server: pure functions on plain data and fixtures
    replay/     the page on recorded results (a ReplayEngine): no TensorFlow, no worker
    worker/     real worker processes                                  -> tf
    imported/   real user models (SavedModel, .keras, GraphDef)        -> tf
    app/        the page (AppTest) on the real engine                  -> tf
    gpu/        a real GPU (skipped without one)                       -> tf (and gpu, in the file)
    realmodels/ real networks (keras.applications) through the engine  -> tf
    faulty/     models whose fusion breaks them (the diagnose corpus)  -> tf
    security/   hostile inputs: each file marks its TensorFlow tests tf itself
    e2e/        the app in headless Chromium                           -> e2e

A test file may add markers of its own (``gpu``); the directory's come on top. There is no ``slow``
marker: ``-m "not tf and not e2e"`` is the quick selection (no TensorFlow, no browser).
"""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
DIRECTORY_MARKS = {"worker": ("tf",), "imported": ("tf",), "app": ("tf",), "gpu": ("tf",), "realmodels": ("tf",),
                   "faulty": ("tf",), "e2e": ("e2e",)}


def pytest_collection_modifyitems(config, items):
    for item in items:
        try:
            top = Path(str(item.fspath)).resolve().relative_to(HERE).parts[0]
        except ValueError:  # a test outside tests/ (given on the command line)
            continue
        for mark in DIRECTORY_MARKS.get(top, ()):
            item.add_marker(getattr(pytest.mark, mark))


# Warm workers the session's engine keeps. The tests ask for about a dozen configurations in turns (oneDNN on
# and off, simulated GPUs, XLA's flags): a server's pool of 4 stopped the common ones for the rare and started
# them again, each time a TensorFlow import (~4 s of CPU). The memory budget counts caps, not use: an idle
# worker holds well under 1 GB, and 8 of them fit a 24 GiB CI machine beside everything else.
TEST_WORKERS = 8


def many_worker_limits():
    """The Limits of an engine that serves many tests: TEST_WORKERS warm workers, each with a server's cap."""
    from explorer.engine.runner import Limits

    return Limits(max_workers=TEST_WORKERS, memory_budget=TEST_WORKERS * Limits().memory_bytes)


@pytest.fixture(scope="session")
def worker_limits():
    return many_worker_limits()


@pytest.fixture(scope="session")
def engine():
    """One engine without a result cache for the worker, imported and real-network tests that only inspect,
    benchmark and fix: its warm workers (one per device and flag set, TEST_WORKERS of them) serve them all, so
    each configuration imports TensorFlow once per session. Tests that crash, hang or count workers make their
    own; the security and GPU tests have their own. Nothing starts until a test asks for it."""
    from explorer.engine import Engine

    engine = Engine(many_worker_limits(), cache_dir=None)
    yield engine
    engine.close()
