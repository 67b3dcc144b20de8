"""A count of the changes under a store, for a long-running reader (``distilld serve``).

The search index must match the store on every answer. Checking that costs a stat of every
knowledge file (tens of milliseconds at a few thousand files); a watch on the store tells for
free that nothing has changed since the last check. The count goes up on every event that can
change what a reader sees, on watchdog's thread; the reader compares it with the count it saw
before its last full check. While the watch is not running (it could not start, or its thread
died) the count is None, and the reader checks every file as before.
"""

from __future__ import annotations

import threading
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver

from .watcher import NOISE_EVENTS


class _Counting(FileSystemEventHandler):
    def __init__(self, counter: ChangeCounter) -> None:
        self._counter = counter

    def on_any_event(self, event: FileSystemEvent) -> None:
        if event.event_type not in NOISE_EVENTS:  # reading a file changes nothing
            self._counter.bump()


class ChangeCounter:
    """Counts the store's file system events from ``start()`` until ``stop()``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._count = 0
        self._lock = threading.Lock()
        self._observer: BaseObserver | None = None

    def bump(self) -> None:
        with self._lock:
            self._count += 1

    def start(self) -> ChangeCounter:
        observer = Observer()
        try:
            observer.schedule(_Counting(self), str(self.root), recursive=True)
            observer.start()
        except (OSError, RuntimeError):  # no inotify watch left, say: the reader checks every file
            return self
        self._observer = observer
        return self

    def count(self) -> int | None:
        """The changes seen so far, or None while no watch runs (nothing can be told from it)."""
        if self._observer is None or not self._observer.is_alive():
            return None
        with self._lock:
            return self._count

    def stop(self) -> None:
        if self._observer is not None:
            self._observer.stop()
            self._observer.join(timeout=5)
            self._observer = None
