"""The graphs captured from TF 2.21 by the real worker (tests/fixtures, made by tests/fixtures/make_fixtures.py),
as the unit tests read them::

    from fixture_graphs import FIXTURES, stages
"""

from __future__ import annotations

import json
from pathlib import Path

from explorer.model.graph import Graph

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def fixture(name: str) -> dict:
    """The fixture file ``tests/fixtures/NAME.json`` as stored: ``stages``, ``passes`` ..."""
    return json.loads((FIXTURES / f"{name}.json").read_text())


def stages(name: str) -> dict[str, Graph]:
    """Stage name (traced, optimized, executed) -> its graph."""
    return {stage: Graph.from_dict(g) for stage, g in fixture(name)["stages"].items()}
