"""DOT -> SVG: Graphviz's ``dot`` run on a DOT text, for the linked view and the downloads."""

from __future__ import annotations

import logging
import shutil
import subprocess

from ..errors import ExplorerError

log = logging.getLogger(__name__)


def to_svg(dot_text: str, *, timeout: float = 30.0, dot_binary: str = "dot") -> str:
    """Run Graphviz ``dot -Tsvg``; ExplorerError if it is missing, fails or takes too long."""
    exe = shutil.which(dot_binary)
    if exe is None:
        raise ExplorerError(
            f"Graphviz '{dot_binary}' was not found, so the graph cannot be exported as SVG; "
            "install the graphviz package (apt-get install graphviz) or download the DOT text instead."
        )
    try:
        done = subprocess.run([exe, "-Tsvg"], input=dot_text.encode("utf-8"), capture_output=True, timeout=timeout,
                              check=False)
    except subprocess.TimeoutExpired:
        raise ExplorerError(f"Graphviz took more than {timeout:g} s to lay out the graph; try folding boilerplate.") from None
    if done.returncode != 0:
        message = done.stderr.decode("utf-8", "replace").strip()
        raise ExplorerError(f"Graphviz could not render the graph: {message[:500] or f'exit code {done.returncode}'}")
    if done.stderr:
        log.debug("dot: %s", done.stderr.decode("utf-8", "replace").strip())
    return done.stdout.decode("utf-8")
