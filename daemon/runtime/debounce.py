"""Turn a burst of watch events into one batch: handed over once the store has been quiet for
``quiet`` seconds, or after ``max_wait`` seconds of unbroken activity (a debouncer that never
fires while events keep arriving would leave the store unchecked)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable

from ..log import get_logger

log = get_logger("distilld.watcher")


class Debouncer:
    """Collect paths; hand them over once quiet for ``quiet`` s, or ``max_wait`` s after the first."""

    def __init__(self, quiet: float, max_wait: float, flush: Callable[[set[str], bool], None],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.quiet = quiet
        self.max_wait = max_wait
        self._flush = flush
        self._clock = clock
        self._cond = threading.Condition()
        self._paths: set[str] = set()
        self._poked = False
        self._first: float | None = None
        self._last: float | None = None
        self._stopped = False
        self._thread = threading.Thread(target=self._loop, name="distilld-debounce", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        with self._cond:
            self._stopped = True
            self._cond.notify_all()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def configure(self, quiet: float, max_wait: float) -> None:
        with self._cond:
            self.quiet, self.max_wait = quiet, max_wait
            self._cond.notify_all()

    def add(self, paths: Iterable[str]) -> None:
        with self._cond:
            self._paths.update(paths)
            self._arm()

    def poke(self) -> None:
        """Count as activity without a path (a distiller released the lock we waited for)."""
        with self._cond:
            self._poked = True
            self._arm()

    def _arm(self) -> None:
        now = self._clock()
        if self._first is None:
            self._first = now
        self._last = now
        self._cond.notify_all()

    @property
    def pending(self) -> tuple[int, float | None]:
        """How many paths wait, and since when (monotonic)."""
        with self._cond:
            return len(self._paths), self._first

    def _loop(self) -> None:
        while True:
            with self._cond:
                while self._first is None and not self._stopped:
                    self._cond.wait()  # idle: no timer, no wake-ups
                if self._stopped:
                    return
                assert self._first is not None and self._last is not None
                due = min(self._last + self.quiet, self._first + self.max_wait)
                wait = due - self._clock()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                batch, poked = self._paths, self._poked
                self._paths, self._poked, self._first, self._last = set(), False, None, None
            try:
                self._flush(batch, poked)
            except Exception:
                log.exception("debounce.flush_failed")
