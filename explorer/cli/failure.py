"""How every command ends on an explorer error: one line on stderr and an exit status scripts can read."""

from __future__ import annotations

import sys
from collections.abc import Callable

from ..errors import ExplorerError, SpecError


def report(exc: ExplorerError) -> int:
    """Print ``exc`` as the command's one error line; return its exit status: 2 for a wrong input (a SpecError, as
    argparse's own errors), 1 for anything else that stopped the run."""
    print(f"explorer: error: {exc}", file=sys.stderr)
    return 2 if isinstance(exc, SpecError) else 1


def command(body: Callable[[Callable], int]) -> int:
    """Run a command's ``body(open_engine)``: its exit status, an explorer error ended in one line (``report``),
    and every engine it opened (``open_engine(cache_dir, limits=None)``) closed however it ends."""
    from ..engine.engine import Engine

    engines: list[Engine] = []

    def open_engine(cache_dir, limits=None) -> Engine:
        engines.append(Engine(limits, cache_dir=cache_dir))
        return engines[-1]

    try:
        return body(open_engine)
    except ExplorerError as exc:
        return report(exc)
    finally:
        for engine in engines:
            engine.close()
