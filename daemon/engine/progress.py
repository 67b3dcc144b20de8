"""Progress of a long pass, for whoever watches: the command line draws a bar on a terminal;
nothing is reported when nobody asked. A context variable, so no pass signature changes."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

Reporter = Callable[[str, int, int], None]  # (what is being done, how many done, out of)

_reporter: ContextVar[Reporter | None] = ContextVar("distilld_progress", default=None)


def report(phase: str, done: int, total: int) -> None:
    reporter = _reporter.get()
    if reporter is not None:
        reporter(phase, done, total)


@contextmanager
def reporting(reporter: Reporter | None) -> Iterator[None]:
    token = _reporter.set(reporter)
    try:
        yield
    finally:
        _reporter.reset(token)
