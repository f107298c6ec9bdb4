"""Streamlit's private script-run context, read in one module (explorer/ui/script_run.py): an upgrade that moves
or renames what it reads fails here, not on a Back click in class."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

from streamlit.testing.v1 import AppTest

ROOT = Path(__file__).resolve().parents[2]


def _page():
    import streamlit as st

    from explorer.ui import script_run

    ctx = script_run.get_script_run_ctx()
    st.text(f"context={ctx is not None} history={script_run.is_history_navigation()} "
            f"fragment={script_run.is_fragment_run()}")


def test_the_helpers_find_the_context_of_a_run_and_its_fields():
    # Outside a run there is no context, and the helpers must not mistake that for one...
    from explorer.ui import script_run

    assert script_run.get_script_run_ctx() is None
    # ...inside one they find it (AppTest runs the page as the server does; it has no Back button and reruns a
    # fragment with its page, so the values are those of a whole first run).
    at = AppTest.from_function(_page, default_timeout=30).run()
    assert not at.exception, at.exception
    assert [t.value for t in at.text] == ["context=True history=False fragment=False"]
    fields = {f.name for f in dataclasses.fields(script_run.ScriptRunContext)}
    assert {"is_history_navigation", "fragment_ids_this_run", "query_string"} <= fields
    from streamlit.runtime.state import query_params as limits  # the limits query_limits reads are still there

    assert isinstance(limits.CLIENT_STATE_QUERY_STRING_MAX_FIELDS, int)


def test_no_other_module_reads_streamlits_private_runtime():
    readers = []
    for path in sorted((ROOT / "explorer").rglob("*.py")) + [ROOT / "app.py"]:
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = ([node.module or ""] if isinstance(node, ast.ImportFrom) else
                     [a.name for a in node.names] if isinstance(node, ast.Import) else [])
            if any(name.startswith("streamlit.runtime") for name in names):
                readers.append(str(path.relative_to(ROOT)))
    assert sorted(set(readers)) == ["explorer/ui/script_run.py"]
