"""Text from a user's file or link as the page's Markdown shows it: text, never markup that loads anything.

Streamlit renders Markdown in ``st.markdown``, captions, and the success, warning and error boxes; it escapes
HTML, but an image (``![x](https://…)``, or by reference) makes every browser that shows the page fetch it.
``escaped`` is for names (an uploaded file's name, a lesson's title in a message): every Markdown character is
shown as itself. ``without_images`` is for a lesson's own prose: emphasis and code stay, an image is shown as
its text.
"""

from __future__ import annotations

import re

from ..errors import shown

_SPECIAL = re.compile(r"([\\`*_{}\[\]()<>!|~:$])")  # mid-line: '#', '-', '+' and '.' only mark up a line's start
_IMAGE = re.compile(r"!(?=\s*\[)")


def escaped(text, limit: int = 200) -> str:
    """``text`` shown as itself in Markdown, inside a line: control characters escaped and cut (``errors.shown``),
    then every character Markdown (or Streamlit's :icon: and $math$) would read there escaped with a backslash."""
    return _SPECIAL.sub(r"\\\1", shown(text, limit))


def without_images(text: str) -> str:
    """A lesson's Markdown with every image (inline or by reference) turned into its text: ``!`` escaped."""
    return _IMAGE.sub(r"\\!", text)
