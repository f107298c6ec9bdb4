"""The page's link: the address bar always holds the experiment on screen, and a link opens it (docs/experiments.md).

The experiment on screen is ``ui.experiment``'s (``current``, ``apply``); a link holds what differs from the server's default one.

The binding: ``bind()`` runs first in every run and applies the address bar's link on a session's first run
(a new browser, a reload) and on a run the browser's Back or Forward started; ``sync(choice)`` runs last
and writes the experiment on screen into ``st.query_params``, which Streamlit's frontend turns into a new
history entry (a replaced one during a Back/Forward run). A link is applied at no other time, so a run
still writing the previous link cannot undo a widget just changed. The stage pair, chosen in the graph
panel's fragment, and its folding and view are written from there (``write_view``).
"""

from __future__ import annotations

import streamlit as st

from ..errors import SpecError
from ..model.experiment import Experiment, ignored_line, server_default
from ..present.markdown import without_images
from . import experiment, script_run, state

BOUND = "link.bound"  # set on a session's first run: its link was read
BARE = "link.bare"  # the session's first run found no link: the browser checks whether Streamlit dropped one
IGNORED = "link.ignored"  # what the link that opened the page left out (one line), shown while it is on screen


def bind() -> None:
    """Apply the address bar's link on a session's first run and on a Back/Forward run; see the module's doc."""
    ss = st.session_state
    first = not ss.get(BOUND)
    ss[BOUND] = True
    if not first and not script_run.is_history_navigation():
        return
    params = {k: st.query_params.get_all(k) for k in st.query_params}
    cut = _cut_short(script_run.query_string(), params)
    ss[BARE] = first and not params
    if first and not params:
        ss[IGNORED] = cut  # a bare page: the session's own state stays (a test may have set it)
        return
    exp, ignored = Experiment.from_query(params, server_default())
    experiment.apply(exp)
    ss[IGNORED] = " ".join(filter(None, (cut, without_images(ignored_line(ignored)))))


def dropped_link_check() -> None:
    """On a page that opened without a link, a check in the browser of the address it opened (Streamlit drops a
    query past its limits before the script sees it, so only the browser knows): when the address bar holds a
    link Streamlit did not read, it says so where the link's note goes. Nothing shows otherwise."""
    if not st.session_state.get(BARE):
        return
    most_fields, most_chars = script_run.query_limits()
    most_chars = most_chars or 512 * 1024
    # In the page's own document (st.html), not a frame: the graphs' drawings are the page's frames.
    st.html(DROPPED_CHECK % {"fields": most_fields, "chars": most_chars}, unsafe_allow_javascript=True)


DROPPED_CHECK = """<div id="explorer-dropped-link" style="font: 15px sans-serif; color: #926c05;
background: #fffce7; padding: 12px 16px; border-radius: 8px; display: none"></div><script>
(() => {
  const query = window.location.search.slice(1), fields = query ? query.split("&").length : 0;
  const words = fields > %(fields)d ? fields.toLocaleString("en") + " parameters; Streamlit reads at most " +
    (%(fields)d).toLocaleString("en") : query.length > %(chars)d ? query.length.toLocaleString("en") +
    " characters; Streamlit reads at most " + (%(chars)d).toLocaleString("en") : "";
  if (!words) return;
  const show = (tries) => {
    const note = document.getElementById("explorer-dropped-link");
    if (!note) return tries > 0 && setTimeout(() => show(tries - 1), 100);
    note.textContent = "The page did not read this link (" + words + "): it opened with its defaults, whatever " +
      "the address bar shows.";
    note.style.display = "block";
  };
  show(50);
})();
</script>"""


def _cut_short(raw: str, params: dict) -> str:
    """The line saying that Streamlit dropped the link's parameters (past its limits it reads none of them, and
    the address bar still shows the link); empty when it read them."""
    if not raw or params:
        return ""
    fields, chars = raw.count("&") + 1, len(raw)
    most_fields, most_chars = script_run.query_limits()  # Streamlit's own limits, where it keeps them
    said = (f"{fields:,} parameters; Streamlit reads at most {most_fields:,}" if fields > most_fields else
            f"{chars:,} characters; Streamlit reads at most {most_chars:,}" if most_chars and chars > most_chars
            else "it could not be read")
    return (f"The page did not read this link ({said}): it opened with its defaults, whatever the address bar "
            "shows.")


def ignored_note() -> str:
    """The line saying what the link that opened this page left out, while that experiment is on screen."""
    return st.session_state.get(IGNORED) or ""


def sync(spec: dict | None, config=None) -> Experiment:
    """The experiment on screen, made once per run from what the sidebar built (``spec``, ``config``), written into
    the address bar (a history entry when it changed); ``experiment.on_screen()`` hands it to the rest of the run."""
    ss = st.session_state
    ss[state.MODEL_SPEC] = spec
    exp = experiment.current(spec, config)
    if ss.get(state.EXPERIMENT) is not None and exp != ss[state.EXPERIMENT]:
        ss[IGNORED] = ss[BARE] = None  # the user moved on from the link that was cut down (or dropped)
    ss[state.EXPERIMENT] = exp
    _write(exp)
    return exp


def write_view(**view) -> None:
    """The stage pair, the folding or the graph view changed in the graph panel's fragment (``stages``, ``fold``,
    ``graph_view``): the link says so too."""
    if not script_run.is_fragment_run():
        return  # a whole run: sync() writes the link at its end, from everything on screen
    shown = st.session_state.get(state.EXPERIMENT)
    if shown is not None and any(getattr(shown, k) != v for k, v in view.items()):
        try:
            exp = shown.replace(**view)
        except SpecError:
            return  # a value no link can hold (a test's odd one): the link stays as it was
        st.session_state[state.EXPERIMENT] = exp
        _write(exp)


def _write(exp: Experiment) -> None:
    query = exp.to_query(server_default())
    now = {k: st.query_params.get_all(k) for k in st.query_params}
    wanted = {k: v if isinstance(v, list) else [v] for k, v in query.items()}
    if now != wanted:
        st.query_params.from_dict(query)
