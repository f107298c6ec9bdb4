"""The fix request: copies of an imported model rewritten by the fixes asked for, written to disk.

Each variant (all the fixes together, each fix alone) starts from a fresh copy of the loaded model
(``rewrite.source``), gets its rewrites (``rewrite.apply``: what each rewrote and what it left, with
why) and is written as a model of its own (``rewrite.source.write``), which the engine then imports
like any other: its own content digest, graphs, fusions, benchmark and cache.
"""

from __future__ import annotations

import os
import time

from ..errors import SpecError
from ..model.sources import source_of
from ..model.spec import resolve
from . import models, rewrite
from .grappler import traced_shapes
from .rewrite import source
from .runtime import Runtime


def run(rt: Runtime, request: dict) -> dict:
    spec = resolve(request["spec"])
    if "fix" not in source_of(spec).offers:  # model.sources: the sources whose graph a fix may rewrite
        raise SpecError("model", "fixes rewrite an imported model (a GraphDef, SavedModel or .keras file)")
    out_dir = request.get("out_dir")
    if not isinstance(out_dir, str) or not os.path.isdir(out_dir):
        raise SpecError("out_dir", "the fixed models need a directory to be written to")
    rt.reset_grappler()
    t0 = time.perf_counter()
    body, args = rt.build(spec)
    shapes = {name: [int(d) for d in text.strip("[]").split(",") if d.strip()]
              for name, text in traced_shapes(models.function(body, rt.tf, served=True), args, body, rt.tf).items()}
    timings = {"load_s": round(time.perf_counter() - t0, 3)}
    variants = []
    for variant in request.get("variants") or []:
        unknown = [f for f in variant["fixes"] if f not in rewrite.REWRITES]
        if unknown:
            raise SpecError("apply", f"no fix {unknown[0]!r}; the fixes are {', '.join(rewrite.NAMES)}")
        t1 = time.perf_counter()
        model = source.source(spec, rt.tf, shapes)
        records = rewrite.apply(model, variant["fixes"], request.get("targets"))
        t2 = time.perf_counter()
        written = source.write(model, os.path.join(out_dir, variant["name"]))
        variants.append({"name": variant["name"], "fixes": list(variant["fixes"]), "records": records, **written,
                         "timings": {"rewrite_s": round(t2 - t1, 3), "write_s": round(time.perf_counter() - t2, 3)}})
    rt.log.read()
    return {"spec": spec.to_dict(), "variants": variants, "timings": timings, "fingerprint": rt.fingerprint}
