"""A stop asked for while a pass runs (SIGTERM from systemd, which kills a unit 90 s later): the
pass ends at its next boundary. A context variable, as progress.py is, so no planner signature
changes and planners stay pure: a planner only asks ``checkpoint()`` between units of its work;
a pass that writes asks it between steps and rolls back what it wrote (engine/apply.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_asked: ContextVar[Callable[[], bool] | None] = ContextVar("distilld_stop", default=None)


class PassStopped(Exception):
    """A stop was asked for: the pass ended at a boundary, its store as before or finished."""

    def __init__(self, message: str = "stopped at a boundary because a stop was asked for") -> None:
        super().__init__(message)


def stop_asked() -> bool:
    asked = _asked.get()
    return asked is not None and asked()


def checkpoint() -> None:
    """Raise PassStopped when a stop was asked for (a boundary of the work: nothing half done)."""
    if stop_asked():
        raise PassStopped()


@contextmanager
def stoppable(asked: Callable[[], bool] | None) -> Iterator[None]:
    token = _asked.set(asked)
    try:
        yield
    finally:
        _asked.reset(token)
