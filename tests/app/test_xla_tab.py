"""The XLA tab, driven with AppTest over the real engine: off by default, then the real XLA result."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from explorer.ui import state
from tests.page_tabs import open_tab

pytestmark = pytest.mark.tf


def texts(at) -> str:
    parts = []
    for kind in ("markdown", "caption", "error", "warning", "info", "code"):
        parts += [str(e.value) for e in getattr(at, kind)]
    return "\n".join(parts)


def xla_results_computed() -> int:
    """XLA results the page's engine has made this session: the result files in its cache directory
    (conftest's EXPLORER_CACHE_DIR, new for the session)."""
    directory = Path(os.environ["EXPLORER_CACHE_DIR"])
    return sum(1 for path in directory.glob("*.json") if json.loads(path.read_text()).get("compiler") == "xla")


def test_default_page_compiles_nothing_with_xla(make_app):
    before = xla_results_computed()
    at = open_tab(make_app(), "xla")
    assert not at.exception and not at.error, [e.value for e in at.error]
    assert "XLA" in [t.label for t in at.tabs]
    assert at.toggle(key=state.XLA_ON).value is False
    assert "Off: nothing is compiled until you switch it on." in texts(at)
    assert xla_results_computed() == before
    assert "Not measured here (no GPU)" in texts(at) and "BIAS_GELU" in texts(at)


def test_switched_on_it_shows_xla_fusions_beside_grappler(make_app):
    at = open_tab(make_app(), "xla")
    at.toggle(key=state.XLA_ON).set_value(True).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    text = texts(at)
    assert "**XLA** made:" in text and "_FusedMatMul" in text
    table = next(df.value for df in at.dataframe if "XLA instruction" in df.value.columns)
    loops = table[table["what"] == "loop fusion"]
    assert len(loops) == 1 and "BiasAdd" in loops.iloc[0]["TF ops"] and "Gelu/Tanh" in loops.iloc[0]["TF ops"]
    assert "MatMul" in set(table[table["what"] == "dot"]["TF ops"])
    accounting = next(df.value for df in at.dataframe if "where it went" in df.value.columns)
    assert "MatMul" in set(accounting["TF op"]) and "Identity" in set(accounting["TF op"])
    passes = next(e for e in at.expander if e.label.startswith("XLA's pass pipeline:"))
    assert "changed the module" in passes.label
    chooser = at.selectbox(key="xla.pass")
    chooser.set_value(next(label for label in chooser.options if label.startswith("fusion ("))).run()
    passes = next(e for e in at.expander if e.label.startswith("XLA's pass pipeline:"))
    assert any(c.language == "diff" and "+" in c.value and "fusion(" in c.value for c in passes.code)
    labels = {b.proto.label for b in at.get("download_button")}
    assert {"HLO before optimisation", "Optimised HLO", "DOT (this drawing)", "DOT (XLA's own)"} <= labels


def test_a_model_xla_refuses_gets_the_op_named_and_grappler_stays(make_app):
    at = make_app(**{state.param_key("hash_bucket", "m"): 8, state.param_key("hash_bucket", "n"): 4,
                     state.XLA_ON: True})
    at.session_state[state.PRESET] = "hash_bucket"
    open_tab(at, "xla")
    assert not at.exception
    errors = [e.value for e in at.error]
    assert len(errors) == 1 and "XLA cannot compile this model" in errors[0] and "AsString" in errors[0]
    assert "found by Grappler" in texts(at)


def test_three_way_benchmark_from_the_tab(make_app):
    at = open_tab(make_app(**{state.XLA_ON: True, state.XLA_BENCH_REPS: 5}), "xla")
    assert not at.exception
    next(b for b in at.button if b.label == "Run the three-way benchmark").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    labels = [m.label for m in at.metric]
    assert {"unfused (remapper off) median", "Grappler-fused median", "XLA (jit_compile=True) median",
            "XLA's first call"} <= set(labels)
    agreement = next(df.value for df in at.dataframe if "elements differing" in df.value.columns)
    assert list(agreement["outputs"]) == ["fused-unfused", "xla-unfused", "xla-fused"]
    assert agreement["within tolerance"].all()
    assert "XLA ran module" in texts(at)


def test_size_sweep_gains_the_xla_line(make_app):
    at = open_tab(make_app(**{state.XLA_ON: True, state.SWEEP_PARAM: "m", state.SWEEP_VALUES: "32, 64",
                              state.SWEEP_REPS: 3}), "xla")
    assert not at.exception
    next(b for b in at.button if b.label == "Sweep three ways").click().run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    table = next(df.value for df in at.dataframe if "XLA first call ms" in df.value.columns)
    assert list(table["m"]) == [32, 64]
    assert (table["XLA (jit_compile=True) ms"] > 0).all() and (table["Grappler-fused ms"] > 0).all()
