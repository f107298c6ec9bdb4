"""Text inside DOT: escaping for HTML-like labels and quoted strings, shortened names, stable element ids.

TF node names are arbitrary strings (newlines, quotes, backslashes, '<', a lone ']'), so every string
that reaches DOT goes through here: ``html_text`` inside HTML-like labels, ``quoted`` for attribute
values (pydot does not escape backslashes), ``html_id`` and ``cluster_id`` for the element ids the page links by.
"""

from __future__ import annotations

import hashlib
import html
import re

MAX_NAME = 48  # longer names are shortened in the label (the tooltip has them whole)

_CONTROL = {i: 0x2400 + i for i in range(32)}  # control chars -> their Unicode "control pictures"
_CONTROL[127] = 0x2421


def visible(text: str) -> str:
    """Control characters as their Unicode pictures (a newline in a name shows as ␊, not as a break)."""
    return str(text).translate(_CONTROL)


def html_text(text: str) -> str:
    """Text for inside an HTML-like label: escaped, control characters made visible.

    Graphviz expands \\N, \\G ... even in HTML labels (after entities), so backslashes are doubled.
    Graphviz 2.43 rejects a text of only "]" or "]]" (an op named "]"): a leading "]" is an entity.
    """
    return re.sub(r"^\]", "&#93;", html.escape(visible(text), quote=False).replace('"', "&quot;").replace("\\", "\\\\"))


def quoted(text: str) -> str:
    """A DOT double-quoted string; newlines become the escString line break."""
    lines = [visible(line).replace("\\", "\u29f5").replace('"', '\\"') for line in str(text).split("\n")]
    # Backslashes are replaced, not escaped: Graphviz 2.43 expands tooltips' escapes twice.
    return '"' + "\\n".join(lines) + '"'


def html_id(name: str, prefix: str = "") -> str:
    """A stable, HTML-safe element id for a TF node name (the same in every stage and run)."""
    slug = re.sub(r"[^A-Za-z0-9_-]+", "_", name)[:40]
    digest = hashlib.sha1(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"fx-{prefix}{slug}-{digest}"


def cluster_id(index: int, prefix: str = "") -> str:
    """The element id of a drawing's ``index``-th fused box (numbered as its drawing made them)."""
    return f"fx-{prefix}cluster-{index}"


def css_name(text: str) -> str:
    """A CSS class name for an op type or a status."""
    return re.sub(r"[^A-Za-z0-9_-]+", "_", text)


def shorten(name: str, limit: int = MAX_NAME) -> str:
    """A long name cut in the middle ('model/very…/BiasAdd'): both ends are what tells nodes apart."""
    if len(name) <= limit:
        return name
    keep = (limit - 1) // 2
    return name[:keep] + "…" + name[-(limit - 1 - keep):]
