"""The index as one process uses it: found in the state folder, checked against the store on
every call, updated in increments, and rebuilt whenever it cannot be trusted.

Nothing in the index file is believed unless it says it is this schema for this store; a file
that is not SQLite, a truncated or malformed one, another store's, or one deleted or replaced
under a running server is built again from the store (into a temporary file, then moved into
place, so a reader never sees half of it).
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import DistilldError
from ..locations import instance_key, state_dir
from .fingerprint import StoreState, folder_stamps, folders_of, state_with_changes, store_state
from .index import SCHEMA, create_schema, read_meta, update_index

INDEX_NAME = "search.sqlite3"
ATTEMPTS = 3
WATCHED_RECHECK_SECONDS = 60.0  # with a watch, every file is still checked this often: a safety net


class StoreChanging(DistilldError):
    """The store kept changing while the index was read: nothing is answered from a mixture."""


def index_path(root: Path) -> Path:
    return state_dir() / instance_key(root) / INDEX_NAME


@dataclass(frozen=True)
class Current:
    """An index known to match the store at one moment."""

    conn: sqlite3.Connection
    fingerprint: str
    head: str
    state: StoreState


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, timeout=30, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=DELETE")  # no -wal file that could outlive a replaced index
    return conn


class SearchIndex:
    """One store's index, reopened or rebuilt as needed; ``current()`` before every answer."""

    def __init__(self, store: Path, path: Path | None = None, recheck_after: float = 0.0,
                 changes: Callable[[], int | None] | None = None,
                 changed_paths: Callable[[], set[str] | None] | None = None) -> None:
        self.root = Path(store).expanduser().resolve()
        if not self.root.is_dir():
            raise DistilldError(f"{store}: no such store directory (pass the store's folder)")
        self.path = path or index_path(self.root)
        self._conn: sqlite3.Connection | None = None
        self._identity: tuple[int, int] | None = None
        self.rebuilds = 0  # how often this process had to build it from nothing (tests read it)
        self.recheck_after = recheck_after
        self._last: Current | None = None
        self._checked_at = 0.0
        self._folders: tuple[tuple[int, int], ...] = ()
        self._folder_names: tuple[str, ...] = ()
        self._folders_key = ""
        # A count of the store's changes (runtime/change_counter.py, for a server): while it has
        # not moved since the last full check, nothing in the store has, and no file is stat'ed.
        self.changes = changes
        self._changes_seen: int | None = None
        # The paths the watch saw change since it was last asked (None: unknown): an update
        # then looks at those files alone, not at every file.
        self.changed_paths = changed_paths
        self._scanned_at = 0.0  # the last check of every file (the safety net counts from it)

    def close(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self._conn, self._identity, self._last = None, None, None

    def _same_file(self) -> bool:
        try:
            info = os.stat(self.path)
        except OSError:
            return False
        return (info.st_dev, info.st_ino) == self._identity and info.st_size > 0

    def _trusted(self, conn: sqlite3.Connection) -> bool:
        try:
            meta = read_meta(conn)
            conn.execute("SELECT count(*) FROM docs").fetchone()
        except sqlite3.DatabaseError:
            return False
        return meta.get("schema") == SCHEMA and meta.get("store") == str(self.root)

    def _open(self) -> sqlite3.Connection:
        if self._conn is not None and self._same_file():
            return self._conn
        self.close()
        if self.path.is_file() and not self.path.is_symlink():
            try:
                conn = _connect(self.path)
                if self._trusted(conn):
                    return self._adopt(conn)
                conn.close()
            except sqlite3.DatabaseError:
                pass
        return self._adopt(self._build())

    def _adopt(self, conn: sqlite3.Connection) -> sqlite3.Connection:
        info = os.stat(self.path)
        self._conn, self._identity = conn, (info.st_dev, info.st_ino)
        return conn

    def _build(self) -> sqlite3.Connection:
        """A new, empty index in place of whatever was there (filled by the update that follows)."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            handle, temporary = tempfile.mkstemp(prefix=".search-", suffix=".tmp", dir=self.path.parent)
            os.close(handle)
            conn = _connect(Path(temporary))
            create_schema(conn, self.root)
            conn.close()
            os.replace(temporary, self.path)
        except OSError as error:
            raise DistilldError(f"{self.path}: cannot write the search index ({error.strerror or error}); "
                                "make distilld's state folder writable or set DISTILLD_STATE_DIR") from None
        self.rebuilds += 1
        return _connect(self.path)

    def current(self) -> Current:
        """The index, matching the store as it is now.

        Every file's stamp is checked, unless this object was made with ``recheck_after`` (a
        long-running server) and checked them that long ago or less: then the folders' stamps
        and SPINE.md's and CATALOG.md's are checked (every add, removal, rename or atomic save
        moves one), and an edit in place of a tier file is seen within ``recheck_after``."""
        seen = self.changes() if self.changes is not None else None
        last = self._last
        watched = last is not None and seen is not None \
            and time.monotonic() - self._scanned_at < WATCHED_RECHECK_SECONDS
        # The watch's events reach its thread a moment after the write; a folder's stamp moves at
        # once, so a file added, removed or renamed is seen by the very next question.
        if watched and last is not None and seen == self._changes_seen and self._same_file() \
                and self._folders_unchanged() and self._unchanged_meta(last):
            return last
        # Without a watch, folder stamps stand in for a full check for ``recheck_after``; a watch
        # that saw a change knows better (an edit in place moves no folder's stamp).
        if seen is None and self._last is not None and time.monotonic() - self._checked_at < self.recheck_after \
                and self._same_file() and folder_stamps(self.root, self._folder_names) == self._folders \
                and self._unchanged_meta(self._last):
            return self._last
        self._changes_seen = seen  # read before the scan: a change during it is seen next time
        changed = self.changed_paths() if self.changed_paths is not None else None
        if not self._folders_unchanged():
            changed = None  # a file added or removed that the watch may not have told yet: check every file
        for _ in range(ATTEMPTS):
            # The folder stamps stand in for a full check only while no watch runs (see above);
            # with one, they catch what its events have not told yet.
            by_folders = bool(self.recheck_after)
            folders = folder_stamps(self.root, self._folder_names) if by_folders else ()
            if watched and changed is not None and self._last is not None:
                state = state_with_changes(self.root, self._last.state, changed)
            else:
                state = store_state(self.root)
                self._scanned_at = time.monotonic()
            changed = None  # a second attempt checks every file
            try:
                conn = self._open()
                if read_meta(conn).get("stamps_key") != state.stamps_key:
                    update_index(conn, self.root, state, self._last.state if self._last else None)
                meta = read_meta(conn)
            except sqlite3.DatabaseError:
                self.discard()
                continue
            if meta.get("stamps_key") == state.stamps_key:
                self._last = Current(conn, meta["fingerprint"], meta["head"], state)
                if by_folders and state.stamps_key != self._folders_key:
                    names = folders_of(state.stamps)  # the same scan has the same folders
                    self._folders_key = state.stamps_key
                    if names != self._folder_names:  # new folders: their stamps as of this scan
                        self._folder_names, folders = names, folder_stamps(self.root, names)
                self._checked_at, self._folders = time.monotonic(), folders
                return self._last
        raise StoreChanging(f"{self.root}: the store kept changing while its index was brought up to date; "
                            "ask again in a moment")

    def _folders_unchanged(self) -> bool:
        if not self.recheck_after:
            return True
        # The store's own folder moves with every heartbeat of a held lock (.lock is renamed into
        # it); no knowledge file is added there, and SPINE.md and CATALOG.md have stamps of their own.
        skip = 1 if self._folder_names[:1] == ("",) else 0
        return folder_stamps(self.root, self._folder_names)[skip:] == self._folders[skip:]

    def _unchanged_meta(self, last: Current) -> bool:
        """The index file still holds what ``last`` read (no other process updated it since)."""
        try:
            return read_meta(last.conn).get("stamps_key") == last.state.stamps_key
        except sqlite3.DatabaseError:
            return False

    def discard(self) -> None:
        """A malformed index (truncated under us, say): dropped, and built again on the next try."""
        self.close()
        try:
            os.unlink(self.path)
        except OSError:
            pass

    def still_current(self, current: Current) -> bool:
        """Did the store stay as ``current`` saw it (asked after an answer is computed)?"""
        return store_state(self.root).stamps_key == current.state.stamps_key
