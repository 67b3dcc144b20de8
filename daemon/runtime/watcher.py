"""Following the store's changes with watchdog.

The observer only records paths; a debouncer (runtime/debounce.py) turns a burst of events into
one batch once the store has been quiet for ``quiet`` seconds (or after ``max_wait`` seconds of
unbroken activity), and the batch becomes one job request on the worker. Nothing slow runs on
watchdog's thread.

What counts is decided in runtime/watch_paths.py (the shared set, Markdown files and folders;
`.lock` followed separately). distilld's own writes are recognised by the file's identity (inode, size, mtime) right after
the write: an event for a file that still looks exactly like that is ours and is dropped.

When the watch itself is in doubt (the kernel's event queue overflowed, the watch limit was
hit, the observer thread died, the store folder was replaced), the observer is restarted and a
full rescan requested: events may have been lost, the content never is.
"""

from __future__ import annotations

import errno
import logging
import os
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from watchdog.events import (
    DirCreatedEvent,
    DirDeletedEvent,
    DirMovedEvent,
    FileClosedEvent,
    FileCreatedEvent,
    FileDeletedEvent,
    FileModifiedEvent,
    FileMovedEvent,
    FileSystemEvent,
    FileSystemEventHandler,
)
from watchdog.observers import Observer
from watchdog.observers.api import BaseObserver
from watchdog.observers.polling import PollingObserver

from ..log import get_logger, utc_stamp
from .debounce import Debouncer
from .watch_paths import Signature, classify, signature

# The events that say something changed, the only ones asked of the kernel. A read (opened,
# closed without writing) or a folder's mtime says nothing the file events beside it do not; the
# daemon's own scans open folders and files, and each such event crossed into watchdog's thread
# only to be dropped there.
CHANGE_EVENTS: list[type[FileSystemEvent]] = [
    FileCreatedEvent, DirCreatedEvent, FileModifiedEvent, FileClosedEvent,
    FileDeletedEvent, DirDeletedEvent, FileMovedEvent, DirMovedEvent,
]
OWN_WRITE_MARGIN = 0.02  # seconds: file mtimes lag the wall clock by up to a kernel tick

log = get_logger("distilld.watcher")


class _Handler(FileSystemEventHandler):
    """Runs on watchdog's thread: classify and record, never raise (an exception kills the thread)."""

    def __init__(self, watcher: StoreWatcher) -> None:
        self._watcher = watcher

    def on_any_event(self, event: FileSystemEvent) -> None:
        try:
            self._watcher._on_event(event)
        except Exception:
            log.exception("watcher.handler_failed")


@dataclass
class WatchHealth:
    mode: str = "stopped"  # inotify / polling / stopped / waiting for the store
    alive: bool = False
    started_at: str | None = None
    events: int = 0
    last_event_at: str | None = None
    overflows: int = 0
    restarts: int = 0
    last_restart_reason: str | None = None
    ignored_own_writes: int = 0
    note: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


class _OverflowListener(logging.Handler):
    """watchdog rebuilds its watches after an inotify queue overflow and only logs it; listen."""

    def __init__(self, callback: Callable[[], None]) -> None:
        super().__init__(logging.WARNING)
        self._callback = callback

    def emit(self, record: logging.LogRecord) -> None:
        if "overflow" in record.getMessage().lower():
            self._callback()


class StoreWatcher:
    """The observer, its supervision, and the record of distilld's own writes."""

    def __init__(self, root: Path, debouncer: Debouncer, on_lock: Callable[[], None],
                 on_rescan: Callable[[str], None], mode: str = "auto",
                 polling_interval: float = 5.0, observer_timeout: float = 5.0) -> None:
        self.root = root
        self.debouncer = debouncer
        self._on_lock = on_lock
        self._on_rescan = on_rescan
        self.mode = mode
        self.polling_interval = polling_interval
        self.observer_timeout = observer_timeout
        self.health = WatchHealth()
        self._observer: BaseObserver | None = None
        self._root_id: tuple[int, int] | None = None
        self._own: dict[str, Signature] = {}
        self._own_lock = threading.Lock()
        self._restart_reason: str | None = None
        self._state_lock = threading.RLock()
        self._overflow = _OverflowListener(self._overflowed)
        self._root_str = str(root)

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> bool:
        """Start watching; False (and health says why) when the store folder does not exist."""
        with self._state_lock:
            if not self.root.is_dir():
                self.health.mode, self.health.alive = "waiting for the store", False
                self.health.note = f"{self.root} does not exist"
                return False
            info = os.stat(self.root)
            self._root_id = (info.st_dev, info.st_ino)
            for name in ("watchdog.observers.inotify_c", "watchdog.observers.inotify"):
                logging.getLogger(name).addHandler(self._overflow)
            observer = self._start_observer()
            self._observer = observer
            self.health.alive = True
            self.health.started_at = utc_stamp()
            return True

    def _start_observer(self) -> BaseObserver:
        if self.mode != "polling":
            observer: BaseObserver = Observer(timeout=self.observer_timeout)
            try:
                observer.schedule(_Handler(self), self._root_str, recursive=True,
                                  event_filter=CHANGE_EVENTS)
                observer.start()
                self.health.mode, self.health.note = "native", None
                return observer
            except OSError as error:
                with_limit = error.errno in (errno.ENOSPC, errno.EMFILE)
                self._stop_quietly(observer)
                if not with_limit:
                    raise
                self.health.note = (f"file events unavailable ({error.strerror or error}); polling every "
                                    f"{self.polling_interval:g} s. Raise fs.inotify.max_user_watches / "
                                    "max_user_instances to get them back")
                log.warning("watcher.limit_reached", error=str(error))
        observer = PollingObserver(timeout=self.polling_interval)
        observer.schedule(_Handler(self), self._root_str, recursive=True,
                          event_filter=CHANGE_EVENTS)
        observer.start()
        self.health.mode = "polling"
        return observer

    @staticmethod
    def _stop_quietly(observer: BaseObserver, wait: float = 6.0) -> None:
        try:
            observer.stop()
            if observer.is_alive():
                observer.join(timeout=wait)
        except Exception:
            log.exception("watcher.stop_failed")

    def stop(self) -> None:
        with self._state_lock:
            for name in ("watchdog.observers.inotify_c", "watchdog.observers.inotify"):
                logging.getLogger(name).removeHandler(self._overflow)
            if self._observer is not None:
                self._stop_quietly(self._observer)
                self._observer = None
            self.health.alive = False
            self.health.mode = "stopped"

    def restart(self, reason: str) -> None:
        """A fresh observer and a full rescan: whatever the old one missed is found by content."""
        with self._state_lock:
            log.warning("watcher.restart", reason=reason)
            self.stop()
            self.health.restarts += 1
            self.health.last_restart_reason = reason
            started = self.start()
        self._on_rescan(reason if started else f"{reason}; the store folder is gone")

    def check(self) -> None:
        """Supervision, called periodically from the main thread."""
        with self._state_lock:
            reason = self._restart_reason
            self._restart_reason = None
            if reason is None:
                reason = self._doubt()
        if reason:
            self.restart(reason)

    def _doubt(self) -> str | None:
        if self._observer is None:
            return "the store folder appeared" if self.root.is_dir() else None
        try:
            info = os.stat(self.root)
        except OSError:
            return "the store folder was removed"
        if (info.st_dev, info.st_ino) != self._root_id:
            return "the store folder was replaced"
        if not self._observer.is_alive() or not all(e.is_alive() for e in self._observer.emitters):
            return "the observer thread died"  # also what a removed and re-created root looks like
        return None

    def _overflowed(self) -> None:
        self.health.overflows += 1
        self._restart_reason = "the kernel's event queue overflowed (events were lost)"

    # -- events ---------------------------------------------------------------------------

    def _relative(self, path: str | bytes) -> str:
        text = os.fsdecode(path)
        if text == self._root_str:
            return "."
        return os.path.relpath(text, self._root_str)

    def _on_event(self, event: FileSystemEvent) -> None:
        sources = [event.src_path]
        if getattr(event, "dest_path", ""):
            sources.append(event.dest_path)  # an atomic save: tmp -> x.md counts by its target
        interesting: list[str] = []
        for raw in sources:
            rel = self._relative(raw)
            if rel == "." and event.event_type in ("deleted", "moved"):
                self._restart_reason = "the store folder was removed or moved"
                continue
            kind = classify(rel, event.is_directory)
            if kind == "lock":
                self._on_lock()
            elif kind == "content":
                interesting.append(rel.replace(os.sep, "/"))
        if interesting:
            self.health.events += 1
            self.health.last_event_at = utc_stamp()
            self.debouncer.add(interesting)

    # -- distilld's own writes ---------------------------------------------------------------

    def mark_own(self, paths: Iterable[str]) -> None:
        """These paths were just written by distilld: drop events that find them unchanged."""
        with self._own_lock:
            for rel in paths:
                self._own[rel] = signature(self.root / rel)

    def record_own(self, before: dict[str, Signature], after: dict[str, Signature], started: float,
                   ended: float) -> None:
        """What changed between two scans taken while distilld held the store's lock is its own
        work. A file written after that (its mtime says so) is someone else's, whoever the lock
        now belongs to: the margin covers the file system's coarse clock."""
        latest = (ended - OWN_WRITE_MARGIN) * 1e9
        changed = [rel for rel in before.keys() | after.keys() if before.get(rel) != after.get(rel)]
        with self._own_lock:
            for rel in changed:
                sig = after.get(rel)
                if sig is not None and sig[2] > latest:
                    continue
                self._own[rel] = sig

    def drop_own(self, paths: set[str]) -> set[str]:
        """The paths of a batch that were not (or no longer look) as distilld left them."""
        kept: set[str] = set()
        with self._own_lock:
            for rel in paths:
                if rel in self._own:
                    if signature(self.root / rel) == self._own[rel]:
                        self.health.ignored_own_writes += 1
                        continue
                    del self._own[rel]  # changed again since: someone else's change now
                kept.add(rel)
            if len(self._own) > 10_000:
                self._own.clear()  # a bound; forgetting only costs one redundant pass
        return kept

    def snapshot_health(self) -> dict[str, Any]:
        count, since = self.debouncer.pending
        with self._state_lock:
            alive = self._observer is not None and self._observer.is_alive()
        data = {key: value for key, value in self.health.__dict__.items() if key != "extra"}
        data.update(alive=alive, pending_paths=count,
                    pending_for_seconds=round(time.monotonic() - since, 1) if since is not None else None,
                    quiet_seconds=self.debouncer.quiet, max_wait_seconds=self.debouncer.max_wait)
        return data
