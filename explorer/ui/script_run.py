"""What Streamlit knows about the run in progress that its public API does not say: the one module that reads
its script-run context (``streamlit.runtime.scriptrunner``, private). tests/unit/test_script_run.py fails when
an upgrade moves or renames what is read here.
"""

from __future__ import annotations

from streamlit.runtime.scriptrunner import ScriptRunContext, get_script_run_ctx

__all__ = ["ScriptRunContext", "get_script_run_ctx", "is_fragment_run", "is_history_navigation", "query_limits",
           "query_string"]


def is_history_navigation() -> bool:
    """This run was started by the browser's Back or Forward (the address bar changed under the page)."""
    ctx = get_script_run_ctx()
    return ctx is not None and bool(ctx.is_history_navigation)


def is_fragment_run() -> bool:
    """This run is a fragment's alone, not the whole script's."""
    ctx = get_script_run_ctx()
    return ctx is not None and bool(ctx.fragment_ids_this_run)


def query_string() -> str:
    """The query the browser sent with this session's page, as sent (Streamlit's query_params may have dropped
    part of it: past 1,000 parameters, it keeps none)."""
    ctx = get_script_run_ctx()
    return (ctx.query_string or "") if ctx is not None else ""


def query_limits() -> tuple[int, int | None]:
    """The most fields and characters of a query Streamlit reads (past either it reads none), where it keeps them;
    1,000 fields and no character limit where an upgrade moved them."""
    from streamlit.runtime.state import query_params as limits

    return (getattr(limits, "CLIENT_STATE_QUERY_STRING_MAX_FIELDS", 1000),
            getattr(limits, "CLIENT_STATE_QUERY_STRING_MAX_LENGTH", None))
