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

``./dev.sh test`` runs the suite in two pytest-xdist processes (``--dist loadfile``, scheduled by GROUPS below):
each file is one unit, so its module fixtures are made once; the files of one of GROUPS run in one process, one
after another; each
process has a temporary folder of its own, so a check that nothing was left behind sees only its own files.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
DIRECTORY_MARKS = {"worker": ("tf",), "imported": ("tf",), "app": ("tf",), "gpu": ("tf",), "realmodels": ("tf",),
                   "faulty": ("tf",), "e2e": ("e2e",)}


# Tests that must not be spread over the processes. A local Ray cluster each: two at once on one machine fight
# over its ports and CPUs. tests/security: its package fixtures (TMPDIR a temp folder of its own, checked empty
# afterwards) must be made and taken down around its files, not around another directory's tests in between.
# app/, e2e/ and realmodels/: their session fixtures (the page's engine and its cache, the app server and its warm
# workers, the exported networks and their inspections) cost minutes of CPU, made once rather than in each process.
GROUPS = {"worker/test_ray_matrix.py": "ray", "app/test_matrix_tab.py": "ray", "security": "security",
          "app": "app", "e2e": "e2e", "realmodels": "realmodels"}


def group(relative: Path) -> str:
    path = relative.as_posix()
    return GROUPS.get(path) or GROUPS.get(relative.parts[0]) or path


def pytest_configure(config):
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:  # short (a Ray socket path must fit 107 bytes) and this process's own
        own = Path(tempfile.gettempdir()) / f"tfx-{worker}-{os.getpid()}"
        own.mkdir()
        os.environ["TMPDIR"], tempfile.tempdir = str(own), str(own)
        # Ray's sockets too, whatever TMPDIR a fixture sets later (tests/security's lasts the process, as a
        # package fixture of a folder that is no package: under pytest-of-root/.../popen-gwN/ it is too long)
        os.environ["RAY_TMPDIR"] = str(own)
        config.add_cleanup(lambda: shutil.rmtree(own, ignore_errors=True))


@pytest.hookimpl(optionalhook=True, tryfirst=True)  # before xdist's own choice of scheduler
def pytest_xdist_make_scheduler(config, log):
    """``--dist loadfile`` with GROUPS: xdist's own way (``xdist_group`` marks, ``--dist loadgroup``) writes the group
    into each test's id, which pytest 9.2 no longer lets a plugin change (pytest-xdist issue 1386: the marks are
    silently ignored)."""
    if config.getvalue("dist") != "loadfile":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class ByGroup(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = Path(nodeid.split("::", 1)[0])
            return group(path.relative_to("tests")) if path.parts[:1] == ("tests",) else path.as_posix()

    return ByGroup(config, log)


def pytest_collection_modifyitems(config, items):
    for item in items:
        try:
            relative = Path(str(item.fspath)).resolve().relative_to(HERE)
        except ValueError:  # a test outside tests/ (given on the command line)
            continue
        for mark in DIRECTORY_MARKS.get(relative.parts[0], ()):
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
