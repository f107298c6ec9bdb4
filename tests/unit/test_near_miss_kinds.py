"""Every near-miss kind the finder can report is named in words on the page and is either rewritten by a fix or
listed as one no fix rewrites (a kind added without them showed its raw id in the report's table)."""

from __future__ import annotations

import ast
from pathlib import Path

import explorer.analysis
from explorer.analysis import fix_plan
from explorer.ui import report


def reported_kinds() -> set[str]:
    kinds = set()
    for path in sorted(Path(explorer.analysis.__file__).parent.glob("near_miss_*.py")):  # every finder's module
        tree = ast.parse(path.read_text())
        for call in ast.walk(tree):
            if isinstance(call, ast.Call) and getattr(call.func, "id", "") == "record" and call.args:
                first = call.args[0]
                if isinstance(first, ast.Constant):
                    kinds.add(first.value)
    return kinds


def test_every_kind_has_words_and_a_fix_or_none():
    kinds = reported_kinds()
    assert {"batchnorm-as-arithmetic", "unfused-pattern", "layernorm-as-arithmetic", "einsum"} <= kinds
    rewritten = {k for ks in fix_plan.FIXES.values() for k in ks}
    assert kinds <= set(report.KINDS), kinds - set(report.KINDS)
    assert kinds <= rewritten | set(fix_plan.NOT_OFFERED), kinds - rewritten - set(fix_plan.NOT_OFFERED)
    assert not rewritten & set(fix_plan.NOT_OFFERED)
