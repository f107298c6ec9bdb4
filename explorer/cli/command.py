"""How every command runs and ends: its result printed as JSON or in words, its progress on stderr, an explorer
error as one line on stderr with an exit status scripts can read, and its engines closed."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable

from ..errors import ExplorerError, SpecError


def report(exc: ExplorerError) -> int:
    """Print ``exc`` as the command's one error line; return its exit status: 2 for a wrong input (a SpecError, as
    argparse's own errors), 1 for anything else that stopped the run."""
    print(f"explorer: error: {exc}", file=sys.stderr)
    return 2 if isinstance(exc, SpecError) else 1


def show(result: dict, as_json: bool, words, page_link: str | None = None) -> None:
    """A result as JSON, or in words (``present``); with its page link (--link) when asked."""
    if as_json:
        print(json.dumps(dict(result, link=page_link) if page_link else result, indent=1))
        return
    print(words(result), end="")
    if page_link:
        print(f"\nPage link: {page_link}")


def progress(args):
    """A long command's steps as lines on stderr, unless it prints JSON."""
    return None if args.json else (lambda p: print(f"  … {p['message']}", file=sys.stderr, flush=True))


def run(body: Callable[[Callable], int]) -> int:
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
