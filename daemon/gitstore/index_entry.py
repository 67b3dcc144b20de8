"""Index entries that carry the file's stat data without writing its blob a second time.

After a commit, the real index must name the committed blob for each committed path. With
stat data (times, size, inode) git and libgit2 can tell an unchanged file from its stat alone;
without it every status hashes the whole file again: 6 MB for each sync of a large store's
SPINE and ledger. ``Index.add(path)`` records stat data but writes (compresses) the blob
again, and pygit2's ``IndexEntry`` has no fields for it, so the entry is filled in here.

Stat data is recorded only when it proves the file holds exactly the committed bytes:

* the file's lstat is still the one the committed bytes were read under, or, when that is
  not known, it is the same before and after hashing the file and the hash is the blob's;
* no filter applies to the path (the store's attributes turn them all off; a hand-edited
  attribute file could turn one on, and then git's blob is not the raw bytes' hash);
* the file was last written in a second that is over: git compares whole seconds, and libgit2,
  which compares nanoseconds, does not mark such an entry for re-checking when it writes the
  index later, so a same-size rewrite in that same second would look clean to git. Such a
  "fresh" entry goes in without stat data, and ``settle_fresh_entries`` records it on a later
  scan for changes (the next sync or follow pass), once that second is over.

Anything else, and any failure of the private pygit2 interface used to fill the entry, gives
the entry without stat data: git then compares content, and newer bytes show as an unstaged
change, never as a staged one.
"""

from __future__ import annotations

import json
import os
import stat
import time
from pathlib import Path
from typing import Any

import pygit2
from pygit2.enums import FileMode

from ..store.file_stamp import stamp_of
from .repo import StoreRepo, write_state_file

FRESH_INDEX = "fresh-index.json"  # in the state folder: paths whose stat data waits for their second to end
FRESH_MARGIN_NS = 20_000_000  # a filesystem's coarse clock may stamp a write up to a tick before time_ns()
FILTER_ATTRIBUTES = ("text", "eol", "crlf", "filter", "ident", "working-tree-encoding")
_SECONDS_MAX = 0x7FFFFFFF  # the index holds 32-bit seconds
_UINT32 = 0xFFFFFFFF


class _StatEntry(pygit2.IndexEntry):
    """An entry whose C form also carries ``info``'s stat fields, truncated as git stores them."""

    def __init__(self, path: str, oid: pygit2.Oid, mode: FileMode, info: os.stat_result) -> None:
        super().__init__(path, oid, mode)
        self.info = info

    def _to_c(self) -> tuple[Any, Any]:
        centry, path_ref = super()._to_c()
        info = self.info
        centry.ctime.seconds, centry.ctime.nanoseconds = divmod(info.st_ctime_ns, 1_000_000_000)
        centry.mtime.seconds, centry.mtime.nanoseconds = divmod(info.st_mtime_ns, 1_000_000_000)
        centry.dev, centry.ino = info.st_dev & _UINT32, info.st_ino & _UINT32
        centry.uid, centry.gid = info.st_uid & _UINT32, info.st_gid & _UINT32
        centry.file_size = info.st_size & _UINT32
        return centry, path_ref


def same_file(first: os.stat_result, second: os.stat_result) -> bool:
    """The same file, unchanged: the snapshot's stamp, and the device and the file's type."""
    return stamp_of(first) == stamp_of(second) and (first.st_dev, first.st_mode) == (second.st_dev, second.st_mode)


def _in_index_range(info: os.stat_result) -> bool:
    return all(0 <= ns // 1_000_000_000 <= _SECONDS_MAX for ns in (info.st_ctime_ns, info.st_mtime_ns))


def _settled(info: os.stat_result, checked_at_ns: int) -> bool:
    """The file was last written in a second that was over before the check began: any later
    write stamps a later second, which git's whole-second compare sees. (A content change
    always sets mtime; ctime alone, from a rename say, says nothing about the bytes.)"""
    return info.st_mtime_ns // 1_000_000_000 < (checked_at_ns - FRESH_MARGIN_NS) // 1_000_000_000


def _unchanged_since(full_path: str, read_under: os.stat_result | None) -> os.stat_result | None:
    if read_under is None:
        return None
    try:
        now = os.lstat(full_path)
    except OSError:
        return None
    return now if same_file(now, read_under) else None


def _hashed_stat(full_path: str, oid: pygit2.Oid) -> os.stat_result | None:
    """The file's lstat when it holds exactly blob ``oid`` and did not change while hashed."""
    try:
        before = os.lstat(full_path)
        if not stat.S_ISREG(before.st_mode):
            return None
        hashed = pygit2.hashfile(full_path)  # the raw bytes' blob id, nothing written
        after = os.lstat(full_path)
    except (OSError, pygit2.GitError):
        return None
    return before if hashed == oid and same_file(before, after) else None


def _filtered(repo: pygit2.Repository, path: str) -> bool:
    return any(repo.get_attr(path, name) not in (None, False) for name in FILTER_ATTRIBUTES)


def add_committed(index: pygit2.Index, repo: pygit2.Repository, root: str, path: str, oid: pygit2.Oid,
                  mode: int, read_under: os.stat_result | None = None) -> bool:
    """Set ``path``'s entry to ``oid``, with the file's stat data when it proves the file holds
    those bytes. True when it would, but the file is too fresh for it yet (settle it later)."""
    checked_at = time.time_ns()
    full_path = os.path.join(root, path)
    info = _unchanged_since(full_path, read_under) or _hashed_stat(full_path, oid)
    plain = pygit2.IndexEntry(path, oid, FileMode(mode))
    if info is None or not _in_index_range(info) or _filtered(repo, path):
        index.add(plain)
        return False
    if not _settled(info, checked_at):
        index.add(plain)
        return True
    try:
        index.add(_StatEntry(path, oid, FileMode(mode), info))
    except Exception:  # noqa: BLE001  pygit2's private entry interface changed: no stat data, never no entry
        index.add(plain)
    return False


# -- entries too fresh for their stat data: recorded on a later pass --------------------------

def _fresh_file(store: StoreRepo) -> Path:
    return store.state_dir / FRESH_INDEX


def remember_fresh(store: StoreRepo, fresh: dict[str, tuple[pygit2.Oid, int]]) -> None:
    """Keep the committed entries that went in without stat data because they were too fresh."""
    waiting = _load_fresh(store)
    waiting.update({path: (str(oid), mode) for path, (oid, mode) in fresh.items()})
    if waiting:
        write_state_file(_fresh_file(store), json.dumps(waiting, indent=1).encode())


def _load_fresh(store: StoreRepo) -> dict[str, tuple[str, int]]:
    try:
        loaded = json.loads(_fresh_file(store).read_bytes())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError):
        return {}  # unreadable: the entries stay without stat data, which is only slower
    return {str(p): (str(e[0]), int(e[1])) for p, e in loaded.items()} if isinstance(loaded, dict) else {}


def settle_fresh_entries(store: StoreRepo) -> None:
    """Record the stat data of the entries a commit left without it for being too fresh, where
    the index still names the committed blob and the file still holds it."""
    waiting = _load_fresh(store)
    if not waiting:
        return
    index = store.repo.index
    index.read(False)
    still: dict[str, tuple[pygit2.Oid, int]] = {}
    changed = False
    for path, (hex_id, mode) in waiting.items():
        oid = pygit2.Oid(hex=hex_id)
        try:
            current = index[path]
        except KeyError:
            continue
        if current.id != oid or int(current.mode) != mode:
            continue  # committed again, staged or removed since: nothing of ours to settle
        if add_committed(index, store.repo, str(store.root), path, oid, mode):
            still[path] = (oid, mode)
        changed = True
    if changed:
        try:
            index.write()
        except (pygit2.GitError, OSError):
            return  # git is busy (index.lock): the list stays for the next pass
    _fresh_file(store).unlink(missing_ok=True)
    if still:
        remember_fresh(store, still)
