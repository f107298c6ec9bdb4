"""How every command ends on an explorer error: one line on stderr and an exit status scripts can read."""

from __future__ import annotations

import sys

from ..errors import ExplorerError, SpecError


def report(exc: ExplorerError) -> int:
    """Print ``exc`` as the command's one error line; return its exit status: 2 for a wrong input (a SpecError, as
    argparse's own errors), 1 for anything else that stopped the run."""
    print(f"explorer: error: {exc}", file=sys.stderr)
    return 2 if isinstance(exc, SpecError) else 1
