"""Fixtures shared by the worker tests (real TensorFlow in real worker processes)."""

from __future__ import annotations

import pytest

from explorer.engine import Engine


@pytest.fixture(scope="session")
def engine():
    """One engine without a result cache for every worker test that only inspects and benchmarks:
    its warm workers (one per device and flag set) serve all of those modules, so each configuration
    imports TensorFlow once per session. Tests that crash, hang or count workers make their own."""
    engine = Engine(cache_dir=None)
    yield engine
    engine.close()
