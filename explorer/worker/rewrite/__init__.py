"""Fixes as graph rewrites that keep the maths, applied to a copy of an imported model.

One module per fix, named after it; each has ``NAME``, ``find(model)`` (every site of its form, with
why a site is left alone where it is) and ``apply(model, targets)`` -> (sites rewritten, sites left).
``REWRITES`` is their order when several apply together: a bias written as an Add becomes a BiasAdd, and
a dilated convolution one Conv2D, before a batch norm after it is folded; then a Conv1D's activation joins its
bias, its own or a folded batch norm's (squeeze-after-activation); freezing comes last (it turns the
folded weights into constants too). ``split-mish`` and ``split-add`` prevent a fusion instead (ways around one
that breaks the model, or that the remapper fails on: engine.diagnose). ``source`` makes the working copy of a
loaded model; ``output`` writes the result.
"""

from __future__ import annotations

from . import (bias_add, bias_before_reshape, dilated_conv, fold_batchnorm, freeze, split_add, split_mish,
               squeeze_after_activation)

REWRITES = {module.NAME: module for module in (bias_add, bias_before_reshape, dilated_conv, fold_batchnorm,
                                               squeeze_after_activation, split_mish, split_add, freeze)}
NAMES = tuple(REWRITES)


def apply(model, names, targets: dict | None = None) -> list[dict]:
    """Apply the fixes ``names`` in ``REWRITES``' order; one record per fix: the sites it rewrote and
    the ones it left, with why. ``targets``: {fix: contraction names} to restrict a fix to those chains."""
    records = []
    for name in NAMES:
        if name not in names:
            continue
        wanted = (targets or {}).get(name)
        done, left = REWRITES[name].apply(model, set(wanted) if wanted is not None else None)
        records.append({"fix": name, "sites": done, "left": left})
    model.prune()
    return records
