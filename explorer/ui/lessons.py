"""Lessons on the page: choose one (or load your own file), and the panel of its open step.

A step is an experiment (``model.lesson``), so opening it is ``experiment.apply`` of it: the sidebar,
the tab and the stage pair follow, and the address bar holds ``lesson=ID&step=N`` with the rest of the state.
The panel sits at the top of the page (in the presenter view too): the step's text, what to look at, the
question for the room, and Previous / Next. When the result on screen contradicts what the step says
(``analysis.lesson_check``), the panel says so. Opening a lesson prepares it in the background
(``prepare``): every step's result, and the workers of its configurations as far as the server's memory
budget allows, so a step switch in class only draws.
"""

from __future__ import annotations

import streamlit as st

from ..analysis.lesson_check import mismatches
from ..errors import SpecError
from ..model.lesson import MAX_FILE_BYTES, Lesson, read_lesson, seed_lessons
from ..present.markdown import escaped, without_images
from . import experiment, presenter, script_run, state


CUSTOM = "lesson.custom"  # {lesson id: its file's text}: the lessons this session loaded from files
APPLIED = "lesson.applied"  # (id, step) whose experiment was last put into the state, or None
CHOICE = "lesson.choice"  # the sidebar's lesson selectbox
UPLOAD = "lesson.upload"  # the sidebar's lesson file uploader
PROBLEM = "lesson.problem"  # the line that refused the last file loaded, or None
NOTICE = "lesson.notice"  # a line about the lesson a link named, shown once at the top of the page, or None
state.DEFAULTS.update({CUSTOM: {}, APPLIED: None, PROBLEM: None, NOTICE: None})
OWN_FILE = "lesson.own-file"  # the choice that shows the uploader of a teacher's own lesson file
KEYS_HELP = "Keys: → PageDown Space for the next step, ← PageUp for the previous (a presentation clicker sends these)."
NONE = ""  # the choice of no lesson (a selectbox shows None as an empty choice)
# Keys of a link that are the lesson's own: a link with nothing else opens the step as the lesson wrote it.
LESSON_KEYS = {"lesson", "step", "present"}


def find(lesson_id: str | None) -> Lesson | None:
    """The lesson of this id: one this session loaded from a file, else one of the explorer's own."""
    if not lesson_id:
        return None
    text = (st.session_state.get(CUSTOM) or {}).get(lesson_id)
    if text is not None:
        try:
            return read_lesson(text)
        except SpecError:  # it was checked when loaded; a later explorer may read it differently
            return None
    return seed_lessons().get(lesson_id)


def catalogue() -> dict[str, str]:
    """Every lesson on offer to this session: id -> title (the session's own files first)."""
    own = {lid: (find(lid).title if find(lid) else lid) for lid in st.session_state.get(CUSTOM) or {}}
    return {**own, **{lid: lesson.title for lid, lesson in seed_lessons().items() if lid not in own}}


# ---- moving through a lesson (callbacks: they run before the sidebar draws) -------------------------------

def go(lesson_id: str, number: int) -> None:
    """Open step ``number`` of a lesson: its experiment becomes the page's state (the link follows)."""
    lesson = find(lesson_id)
    if lesson is None:
        return
    number, _ = lesson.step(number)
    experiment.apply(lesson.experiment(number, present=state.presenting()))
    st.session_state[APPLIED] = (lesson.id, number)


def close() -> None:
    st.session_state[state.LESSON] = st.session_state[state.LESSON_STEP] = None
    st.session_state[APPLIED] = None


def _chosen() -> None:
    chosen = st.session_state.get(CHOICE)
    if chosen == OWN_FILE:  # the uploader shows; the lesson open stays until a file loads
        return
    if chosen:
        go(chosen, 1)
    else:
        close()


def _loaded() -> None:
    """A teacher's own lesson file: checked like any input, refused in one line naming the field."""
    upload = st.session_state.get(UPLOAD)
    if upload is None:
        return
    data = upload.getvalue()  # in memory already: its size is checked, and stated, as it is
    try:
        lesson = read_lesson(data)
        if lesson.id in seed_lessons():
            raise SpecError("id", f"{lesson.id!r} is a lesson that comes with the explorer; give yours an id of its "
                                  "own (a file may not replace it)")
    except SpecError as exc:
        st.session_state[PROBLEM] = f"{escaped(upload.name)} was not loaded: {without_images(str(exc))}"
        return
    st.session_state[CUSTOM] = {**(st.session_state.get(CUSTOM) or {}), lesson.id: data.decode("utf-8")}
    st.session_state[PROBLEM] = None
    st.session_state[CHOICE] = lesson.id
    go(lesson.id, 1)


# ---- the page's parts ---------------------------------------------------------------------------------------

def begin(engine) -> Lesson | None:
    """The open lesson (the link's ``lesson=ID``, or one chosen), with its step's experiment put into the state
    when the step was not opened yet; call it after ``link.bind`` and before the sidebar draws."""
    ss = st.session_state
    lesson_id = ss.get(state.LESSON)
    if not lesson_id:
        ss[APPLIED] = None
        return None
    lesson = find(lesson_id)
    if lesson is None:
        ss[NOTICE] = (f"There is no lesson {lesson_id!r} here (a lesson loaded from a file lives in the session "
                      f"that loaded it). The lessons here: {', '.join(catalogue())}.")
        close()
        return None
    number, _ = lesson.step(ss.get(state.LESSON_STEP))
    ss[state.LESSON_STEP] = number
    if ss.get(APPLIED) != (lesson.id, number):
        from_link = ss.get(APPLIED) is None or script_run.is_history_navigation()
        # A link that holds more than the lesson's keys is a state someone reached in the lesson: keep it.
        if not (from_link and set(st.query_params) - LESSON_KEYS):
            experiment.apply(lesson.experiment(number, present=state.presenting()))
        ss[APPLIED] = (lesson.id, number)
    if lesson.id not in (ss.get(CUSTOM) or {}):
        # The explorer's own lessons only: an uploaded file must not queue work for the whole server (a teacher
        # prepares theirs with `python -m explorer lessons FILE --check` on the server, which fills its cache).
        prepare(engine, lesson, first=number)
    return lesson


def notice() -> None:
    """The line about a lesson a link named that is not here, once."""
    text = st.session_state.get(NOTICE)
    if text:
        st.warning(text, icon=":material/school:")
        st.session_state[NOTICE] = None


def chooser() -> None:
    """The sidebar's lesson choice, and (chosen as "Your own lesson file…") the loader of a teacher's own file."""
    ss = st.session_state
    offered = catalogue()
    if ss.get(CHOICE) != OWN_FILE:
        ss[CHOICE] = ss.get(state.LESSON) if ss.get(state.LESSON) in offered else NONE
    words = {NONE: "No lesson: explore freely", OWN_FILE: "Your own lesson file…", **offered}
    st.header("Lesson")
    st.selectbox("Lesson", [NONE, *offered, OWN_FILE], key=CHOICE, on_change=_chosen, label_visibility="collapsed",
                 format_func=words.get,
                 help="A guided walk through real experiments, step by step (Previous / Next above the graphs). "
                      "Its link opens it at a step: ?lesson=ID&step=N. Your own lesson: a file in the format of "
                      "docs/lessons.md.")
    if ss.get(CHOICE) == OWN_FILE:
        # Streamlit's own line in the drop zone says whole megabytes: the lesson's own limit instead.
        zone = ".st-key-lesson-upload [data-testid='stFileUploaderDropzoneInstructions']"
        st.html(f"<style>{zone} span {{display:none}} {zone} > div::after "
                f"{{content:'at most {MAX_FILE_BYTES >> 10} KiB • JSON'; font-size:0.85em; opacity:0.7}}</style>")
        st.file_uploader("Your own lesson (.json)", type=["json"], key=UPLOAD, on_change=_loaded, max_upload_size=1,
                         help="A lesson file as docs/lessons.md describes: each step a link's state, a few "
                              "sentences, what to look at, a question. It is checked before anything runs.")
        st.caption(f"A JSON file of at most {MAX_FILE_BYTES >> 10} KiB (docs/lessons.md). Start from a copy of one "
                   "in the explorer's lessons/ folder.")
    if ss.get(PROBLEM):
        st.error(ss[PROBLEM], icon=":material/error:")


def panel(lesson: Lesson, tab_titles: dict[str, str]):
    """The open step: its text, what to look at (``tab_titles``: the page's tabs by id), the question,
    Previous / Next. Returns the place where ``check`` writes what it finds once the result is known."""
    number, step = lesson.step(st.session_state.get(state.LESSON_STEP))
    total = len(lesson.steps)
    presenting = state.presenting()
    with st.container(border=True, key="lesson-panel"):
        # One row that wraps rather than truncates: with the sidebar open the buttons keep their whole labels.
        with st.container(horizontal=True, vertical_alignment="center", key="lesson-head", gap="small"):
            if presenting:
                st.markdown(f"**{escaped(step.title)}** · step {number} of {total}", help=escaped(lesson.title),
                            width="stretch")
            else:
                st.markdown(f"**{escaped(lesson.title)}** · step {number} of {total}: **{escaped(step.title)}**",
                            width="stretch")
            st.button("Previous", key="lesson.previous", on_click=go, args=(lesson.id, number - 1),
                      disabled=number <= 1, icon=":material/arrow_back:", help=KEYS_HELP, wrap=False)
            st.button("Next", key="lesson.next", on_click=go, args=(lesson.id, number + 1), disabled=number >= total,
                      icon=":material/arrow_forward:", type="primary", help=KEYS_HELP, wrap=False)
            if presenting:  # the switch the header would hold
                presenter.toggle()
            st.button(":material/close:", key="lesson.close", on_click=close, help="Close the lesson")
        presenter.step_keys()
        st.markdown(without_images(step.text))
        look = _look_words(step, tab_titles)
        if look and not presenting:  # on a projector the magenta halos and the open tab say it
            st.caption(f"**Look at:** {look}")
        if step.ask:
            st.markdown(f"**Ask the room:** {without_images(step.ask)}")
        return st.empty()


def check(where, lesson: Lesson, result: dict | None) -> None:
    """Under the step's text: a note when the settings on screen are no longer the step's (with *Back to the
    step*, also when the change failed or cannot run: ``result`` None), or when TensorFlow did something other
    than what the step says."""
    number, step = lesson.step(st.session_state.get(state.LESSON_STEP))
    now = experiment.on_screen()
    if now.model != step.experiment.model or now.config != step.experiment.config:
        with where.container():
            left, right = st.columns([5, 1.4], vertical_alignment="center")
            left.caption("You changed this step's settings: the text is about the step's own."
                         + ("" if result is not None else " What you chose did not run (see below)."))
            right.button("Back to the step", key="lesson.reset", on_click=go, args=(lesson.id, number),
                         icon=":material/undo:", width="stretch")
        return
    if result is None:
        return
    wrong = mismatches(step.expect, result)
    if wrong:
        where.warning("TensorFlow did something else here than this step says: " + "; ".join(wrong) + ". The graphs "
                      "show what happened.", icon=":material/warning:")


def focus(tab: str = "graphs") -> dict:
    """The nodes the open step points at (stage -> op types or names), while its own settings are on screen."""
    lesson = find(st.session_state.get(state.LESSON))
    if lesson is None:
        return {}
    _, step = lesson.step(st.session_state.get(state.LESSON_STEP))
    return dict(step.look.nodes) if (step.look.tab or "graphs") == tab else {}


def _look_words(step, titles: dict[str, str]) -> str:
    parts = []
    if step.look.tab:
        parts.append(f"the *{titles.get(step.look.tab, step.look.tab)}* tab")
    if step.look.stages:
        parts.append(step.look.stages.replace("->", " → ").replace("optimized", "after Grappler"))
    nodes = sorted({n for names in step.look.nodes.values() for n in names})
    if nodes:
        parts.append("with a magenta halo: " + ", ".join(f"`{n}`" for n in nodes))
    return " · ".join(parts)


# ---- preparing a lesson: its results made and its workers started ahead ------------------------------------

def prepare(engine, lesson: Lesson, first: int = 1) -> bool:
    """Ask the engine to make every step's result in the background (from step ``first`` on, then the ones
    before), then start the workers of the lesson's configurations while the server's memory budget lets the
    pool keep them: a step switch then reads a stored result, a flag switch finds its worker warm. Once per
    engine and lesson (the same file); False when it was asked for already."""
    order = list(range(first, len(lesson.steps) + 1)) + list(range(1, first))
    steps = tuple(step.link for step in lesson.steps)
    return engine.prepare(f"lesson {lesson.id} {hash(steps):x}", [lesson.steps[n - 1].experiment for n in order],
                          lesson.configs())
