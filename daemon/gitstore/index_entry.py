"""Index entries that carry the file's stat data without writing its blob a second time.

After a commit, the real index must name the committed blob for each committed path. With
stat data (times, size, inode) git and libgit2 can tell an unchanged file from its stat alone;
without it every status hashes the whole file again: 6 MB for each sync of a large store's
SPINE and ledger. ``Index.add(path)`` records stat data but writes (compresses) the blob
again, and pygit2's ``IndexEntry`` has no fields for it, so the entry is filled in here.

The stat data is recorded only when the file still holds exactly the committed bytes: its
lstat is still the one the committed bytes were read under, or, when that is not known (a
pending index update finished later), it is the same before and after hashing the file and
the hash is the committed blob's. A file
that changed, or changes while it is hashed, gets the entry without stat data, and git then
compares content: newer bytes show as an unstaged change, never as a staged one. A write
later in the same clock tick is git's "racily clean" case, which git and libgit2 already
re-check by content.
"""

from __future__ import annotations

import os
import stat
from typing import Any

import pygit2
from pygit2.enums import FileMode

_INT32 = 0x7FFFFFFF
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
    """The same file, unchanged: git's own stat fields, and the file's type."""
    return (first.st_mtime_ns, first.st_ctime_ns, first.st_size, first.st_ino, first.st_dev, first.st_mode) == (
        second.st_mtime_ns, second.st_ctime_ns, second.st_size, second.st_ino, second.st_dev, second.st_mode)


def _unchanged_since(full_path: str, read_under: os.stat_result | None) -> os.stat_result | None:
    if read_under is None:
        return None
    try:
        now = os.lstat(full_path)
    except OSError:
        return None
    return now if same_file(now, read_under) and _fits(now) else None


def _fits(info: os.stat_result) -> bool:
    """Within the index's 32-bit seconds; past them git compares content instead."""
    return max(info.st_ctime_ns, info.st_mtime_ns) // 1_000_000_000 <= _INT32


def _verified_stat(full_path: str, oid: pygit2.Oid) -> os.stat_result | None:
    """The file's lstat when it holds exactly blob ``oid`` and did not change while hashed."""
    try:
        before = os.lstat(full_path)
        if not stat.S_ISREG(before.st_mode):
            return None
        hashed = pygit2.hashfile(full_path)  # the raw bytes' blob id, nothing written
        after = os.lstat(full_path)
    except (OSError, pygit2.GitError):
        return None
    if hashed != oid or not same_file(before, after) or not _fits(before):
        return None
    return before


def committed_entry(root: str, path: str, oid: pygit2.Oid, mode: int,
                    read_under: os.stat_result | None = None) -> pygit2.IndexEntry:
    """The index entry for ``path`` committed as ``oid``: with the file's stat data when the
    work tree still holds those bytes, else without (git then compares content).
    ``read_under``: the stat the committed bytes were read under; a file still so needs no hash."""
    full_path = os.path.join(root, path)
    info = _unchanged_since(full_path, read_under) or _verified_stat(full_path, oid)
    if info is None:
        return pygit2.IndexEntry(path, oid, FileMode(mode))
    return _StatEntry(path, oid, FileMode(mode), info)
