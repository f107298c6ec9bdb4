"""The top of the page: title, the "what is fusion" intro, and the configuration as text to copy."""

from __future__ import annotations

import streamlit as st

from ..errors import ExplorerError, WorkerError
from ..present.command import bench_command_line, command_line
from ..present.markdown import without_images
from . import presenter, state
from .sidebar import Choice

INTRO = (
    "A TensorFlow model runs as a graph of ops, and each op reads its inputs from memory and writes "
    "its output back. In a chain such as MatMul → BiasAdd → ReLU the two small ops each make one more "
    "pass over the whole output. Grappler, TensorFlow's graph optimiser, has a pass called the "
    "**remapper** that recognises such chains and replaces them with one **fused op** (here "
    "`_FusedMatMul` with `fused_ops=[BiasAdd, Relu]`), whose kernel adds the bias and applies the "
    "activation while the result is still in cache. Whether a chain fuses depends on the device, the "
    "dtype and layout, flags such as `TF_ENABLE_ONEDNN_OPTS`, and the graph around it. This page shows "
    "the graph before and after Grappler with what fused, and times the fused graph against the same "
    "model run with the remapper switched off."
)


# Streamlit's default top padding (6rem) pushes the graphs below the fold on a laptop screen, and its
# side padding (5rem) costs the two graphs the width the wider sidebar takes.
# The lesson's key script (presenter.step_keys) takes no room.
CSS = ("<style>[data-testid='stMainBlockContainer']{padding:2.2rem 3rem 4rem 3rem}"
       ".st-key-lesson-keys{display:none}</style>")


def header(lesson_open: bool = False) -> None:
    """The title with the presenter view's switch beside it; the introduction, except in the presenter view
    (there the lesson's panel, when one is open, holds the switch and nothing else is drawn here)."""
    st.html(CSS)
    if state.presenting() and lesson_open:
        return
    title, switch = st.columns([4, 1], vertical_alignment="center")
    if state.presenting():  # one short line: the room came for the graphs
        title.markdown("**TF Fusion Explorer**")
        presenter.toggle(switch)
        return
    title.title("TF Fusion Explorer", anchor=False)
    presenter.toggle(switch)
    # The introduction beside the caption, not on a line of its own: a laptop's first screen keeps room for graphs.
    caption, intro = st.columns([4, 1], vertical_alignment="center")
    caption.caption("Which op chains does TensorFlow's Grappler remapper fuse into one kernel here, and what does "
                    "that buy? Build a model in the sidebar; the graphs and fusions appear below.")
    with intro.popover("What is fusion?", icon=":material/help:", width="stretch"):
        st.markdown(INTRO)


def show_error(exc: ExplorerError, context: str = "") -> None:
    """An engine error as a readable message (never a traceback); the worker's log tail folded away."""
    st.error(without_images(f"{context}: {exc}" if context else str(exc)))  # names from the model: text only
    detail = getattr(exc, "detail", "")
    if isinstance(exc, WorkerError) and detail:
        with st.expander("The worker's last log lines"):
            st.code(detail, language="text")


def reproduce(choice: Choice) -> None:
    """The exact environment and command line of the current configuration (st.code has a copy button)."""
    config = choice.config
    env = config.shell_env()
    head = (f"# worker environment: {env} (the rest: TensorFlow's defaults)" if env
            else "# worker environment: no flags set, TensorFlow's defaults")
    st.code(f"{head}\n{command_line(choice.spec, config, 'inspect')}", language="bash")


def bench_command(choice: Choice, reps: int, warmup: int, max_seconds: float, processes: int = 1) -> str:
    return bench_command_line(choice.spec, choice.config, reps, warmup, max_seconds, processes)
