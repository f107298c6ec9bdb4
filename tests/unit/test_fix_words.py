"""The fix report's words on a fix that ran slower alone: said only where its whole interval is below 1×, with
what to do according to how all the fixes together ran (the figures: Xception with oneDNN, docs/fixes.md)."""

from __future__ import annotations

from explorer.present.fix_text import fix_text, slower_alone_words


def sp(estimate, low, high):
    return {"estimate": estimate, "ci_low": low, "ci_high": high, "processes": 3}


def result(together, fold, freeze):
    return {"applied": [{"fix": "fold-batchnorm", "nodes": ["bn"], "chains": [], "advice": "fold it"}],
            "fused_kernels_before": 1, "fused_kernels_after": 30, "fusions_before": [], "fusions_after": [],
            "speedup": together, "max_abs_diff": None,
            "per_fix": [{"fix": "fold-batchnorm", "speedup": fold, "fused_kernels_after": 30},
                        {"fix": "freeze", "speedup": freeze, "fused_kernels_after": 1}]}


def test_a_fix_slower_alone_is_taken_only_with_the_others_when_they_pay():
    r = result(sp(1.44, 1.16, 1.79), sp(0.62, 0.60, 0.65), sp(1.43, 1.25, 1.64))
    (line,) = slower_alone_words(r)
    assert line.startswith("fold-batchnorm alone ran slower here (0.62× (95% CI 0.60–0.65, 3 fresh worker processes))")
    assert line.endswith("all the fixes together faster (1.44×): apply it only with the others.")
    assert f"  NOTE: {line}" in fix_text(r)


def test_a_fix_slower_alone_is_left_out_when_the_others_do_not_pay_either():
    (line,) = slower_alone_words(result(sp(1.02, 0.95, 1.10), sp(0.81, 0.72, 0.90), sp(1.20, 1.1, 1.3)))
    assert line.endswith("leave it out on this machine and setting.")


def test_nothing_is_said_where_the_interval_reaches_1_or_one_fix_ran():
    assert slower_alone_words(result(sp(1.29, 0.98, 1.69), sp(0.84, 0.63, 1.12), sp(1.28, 0.97, 1.69))) == []
    one = result(sp(0.8, 0.7, 0.9), sp(0.8, 0.7, 0.9), None)
    one["per_fix"] = one["per_fix"][:1]
    assert slower_alone_words(one) == []
    assert "NOTE:" not in fix_text(one)
