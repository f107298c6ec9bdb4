"""The disk cache of graph results: keyed by everything that makes the result, code included."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from explorer.engine.cache import ResultCache
from explorer.model.flags import Config
from explorer.model.spec import resolve

REPO = Path(__file__).resolve().parents[2]
KEY_OF = (
    "from explorer.engine.cache import ResultCache; from explorer.model.flags import Config; "
    "from explorer.model.spec import resolve; "
    "print(ResultCache.key('inspect', resolve({'preset': 'matmul_bias_relu'}), Config()))"
)


def key_with_package(package: Path) -> str:
    """The cache key a server running the explorer package at ``package`` computes."""
    out = subprocess.run([sys.executable, "-c", KEY_OF], cwd=package.parent, capture_output=True, text=True,
                         timeout=120, env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(package.parent)})
    assert out.returncode == 0, out.stderr
    return out.stdout.strip()


def test_a_result_made_by_other_code_is_not_served(tmp_path):
    package = tmp_path / "explorer"
    shutil.copytree(REPO / "explorer", package, ignore=shutil.ignore_patterns("__pycache__"))
    before = key_with_package(package)
    assert key_with_package(package) == before, "the key is stable for the same code"
    worker = package / "worker" / "bench.py"
    worker.write_text(worker.read_text() + "\n# a changed worker makes different results\n")
    assert key_with_package(package) != before


def test_results_survive_a_new_cache_instance_and_keys_separate_requests(tmp_path):
    spec = resolve({"preset": "matmul_bias_relu", "params": {"m": 8}})
    key = ResultCache.key("inspect", spec, Config())
    assert key != ResultCache.key("inspect", spec.with_params(m=9), Config())
    assert key != ResultCache.key("inspect", spec, Config.make("cpu", grappler={"remapping": "off"}))
    assert key != ResultCache.key("bench", spec, Config())
    ResultCache(tmp_path).put(key, {"stages": {"traced": 1}})
    assert ResultCache(tmp_path).get(key) == {"stages": {"traced": 1}}
    assert not list(tmp_path.glob(".*.tmp")), "no temporary file is left behind"
    (tmp_path / f"{key}.json").write_text("{not json")
    assert ResultCache(tmp_path).get(key) is None, "a damaged entry is a miss, not an error"
    assert ResultCache(None).get(key) is None, "without a directory nothing outlives the instance"


def test_the_disk_cache_keeps_a_bounded_number_of_results(tmp_path, monkeypatch):
    monkeypatch.setattr(ResultCache, "MAX_FILES", 20)
    cache = ResultCache(tmp_path)
    for i in range(45):
        cache.put(f"k{i:03d}", {"i": i})
    kept = sorted(p.stem for p in tmp_path.glob("*.json"))
    assert len(kept) <= 20
    assert "k044" in kept and "k000" not in kept  # the newest stay, the oldest go
