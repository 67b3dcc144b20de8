"""A count of the changes under a store, for a long-running reader (``distilld serve``).

The search index must match the store on every answer. Checking that costs a stat of every
knowledge file (tens of milliseconds at a few thousand files); a watch on the store tells for
free that nothing has changed since the last check. The count goes up on every event that can
change what a reader sees, on watchdog's thread; the reader compares it with the count it saw
before its last full check. While the watch is not running (it could not start, or its thread
died) the count is None, and the reader checks every file as before.

The watch also keeps the paths it saw change, so that a reader can look at those files alone
instead of every file (``take_changes``). A folder's event (a folder moved or removed takes its
files with it, unnamed) or more paths than a few hundred make the set unknown: then the reader
checks every file.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from watchdog.events import FileSystemEvent, FileSystemEventHandler
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver

from .watcher import CHANGE_EVENTS

KEPT_PATHS = 256  # beyond this many changed paths, checking every file is as cheap


class _Counting(FileSystemEventHandler):
    def __init__(self, counter: ChangeCounter) -> None:
        self._counter = counter

    def on_any_event(self, event: FileSystemEvent) -> None:
        paths = [event.src_path, getattr(event, "dest_path", "") or ""]
        self._counter.bump([p for p in paths if p] if not event.is_directory else None)


class ChangeCounter:
    """Counts the store's file system events from ``start()`` until ``stop()``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._count = 0
        self._lock = threading.Lock()
        self._observer: BaseObserver | None = None
        self._paths: set[str] | None = set()  # changed since the last take_changes; None: unknown

    def bump(self, paths: list[str | bytes] | None = None) -> None:
        """One change, with the paths it touched (None: a folder's, or unknown)."""
        with self._lock:
            self._count += 1
            if paths is None or self._paths is None or len(self._paths) >= KEPT_PATHS:
                self._paths = None
                return
            base = os.path.join(self.root, "")
            for raw in paths:
                path = os.fsdecode(raw)
                if not path.startswith(base):
                    self._paths = None
                    return
                self._paths.add(path[len(base):].replace(os.sep, "/"))

    def take_changes(self) -> set[str] | None:
        """The store-relative paths changed since the last call (then forgotten), or None when
        they cannot be told (a folder changed, too many, or no watch runs): check every file."""
        with self._lock:
            found, self._paths = self._paths, set()
        return found if self._observer is not None and self._observer.is_alive() else None

    def start(self) -> ChangeCounter:
        observer = Observer()
        try:
            observer.schedule(_Counting(self), str(self.root), recursive=True,
                              event_filter=CHANGE_EVENTS)
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
