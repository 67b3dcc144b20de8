"""Which files are knowledge, how they stand on disk, and the store's fingerprint.

The fingerprint is HEAD plus a digest of the knowledge files' bytes: two clones holding the
same bytes at the same commit have the same fingerprint, whatever their mtimes. Telling
whether anything changed must be cheap, since every command asks: the files' stamps (mtime,
ctime, size, inode, as git tells a changed file) are compared first, and only a file whose
stamp moved is read and hashed again.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import stat
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from ..gitstore.head_ref import head_commit_id
from ..store.paths import CATALOG, SPINE, TIERS

# Top folders whose Markdown files are knowledge; local/ is this machine's overlay (its SPINE is
# part of the `spine` answer), never data/, .git/, bin/ or dotfiles.
KNOWLEDGE_TOPS: tuple[str, ...] = (*TIERS, "archive", "evidence", "local")
Stamp = str  # "mtime_ns:ctime_ns:size:inode"


def is_knowledge_path(path: str) -> bool:
    """A store-relative path distilld serves and indexes: SPINE.md, CATALOG.md, or a Markdown
    file below a knowledge folder, with no hidden or empty segment."""
    if path in (SPINE, CATALOG):
        return True
    parts = path.split("/")
    return (len(parts) > 1 and parts[0] in KNOWLEDGE_TOPS and path.endswith(".md")
            and all(part and not part.startswith(".") for part in parts))


def _utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def scan_stamps(root: Path) -> dict[str, Stamp]:
    """Every knowledge file's stamp, by store-relative path. Symbolic links are never followed
    or listed: a link is not knowledge, whatever it points at."""
    return {path: f"{m}:{c}:{size}:{ino}" for path, m, c, size, ino in _scan(root)}


def _scan(root: Path) -> list[tuple[str, int, int, int, int]]:
    """(path, mtime_ns, ctime_ns, size, inode) of every knowledge file, in scan order; plain
    tuples, since every command scans every file (most of a warm query's cost at x100)."""
    found: list[tuple[str, int, int, int, int]] = []
    base = os.path.join(root, "")
    for name in (SPINE, CATALOG):
        try:
            info = os.lstat(base + name)
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode):
            found.append((name, info.st_mtime_ns, info.st_ctime_ns, info.st_size, info.st_ino))
    pending = [top for top in KNOWLEDGE_TOPS if not os.path.islink(base + top)]
    while pending:
        relative = pending.pop()
        try:
            with os.scandir(base + relative) as entries:
                children = list(entries)
        except OSError:
            continue  # absent, or not a folder (links are filtered before descending)
        for entry in children:
            name = entry.name
            if name[0] == "." or entry.is_symlink() or not (name.isascii() or _utf8(name)):
                continue  # a name that is not UTF-8 can be neither served nor indexed
            if name.endswith(".md") and entry.is_file(follow_symlinks=False):
                try:
                    info = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                found.append((f"{relative}/{name}", info.st_mtime_ns, info.st_ctime_ns, info.st_size, info.st_ino))
            elif entry.is_dir(follow_symlinks=False):
                pending.append(f"{relative}/{name}")
    return found


def folders_of(stamps: dict[str, Stamp]) -> tuple[str, ...]:
    """The folders a scan found knowledge files in, every parent up to the store root, and the
    knowledge folders themselves (a new subfolder moves its parent's stamp)."""
    found = {"", *KNOWLEDGE_TOPS}
    for path in stamps:
        parts = path.split("/")[:-1]
        found.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
    return tuple(sorted(found))


def folder_stamps(root: Path, folders: tuple[str, ...]) -> tuple[tuple[int, int], ...]:
    """(mtime + ctime + size, inode) of each folder, and of SPINE.md and CATALOG.md: what a file
    added, removed, renamed or atomically saved in one of them, or an edit of those two, moves.
    A few stats, not one per file."""
    base = os.path.join(root, "")
    found: list[tuple[int, int]] = []
    for name in (*folders, SPINE, CATALOG):
        try:
            info = os.lstat(base + name)
            found.append((info.st_mtime_ns + info.st_ctime_ns + info.st_size, info.st_ino))
        except OSError:
            found.append((0, 0))
    return tuple(found)


def content_digest(hashes: dict[str, str]) -> str:
    """The knowledge files' bytes, as one digest: every path with its sha256, sorted by path."""
    # Code point order is UTF-8 byte order, so a plain sort serves unless a name holds an
    # escaped byte (a lone surrogate); the bytes hashed are the same either way.
    try:
        joined = "".join(f"\n{path}\0{hashes[path]}" for path in sorted(hashes)).encode("utf-8")
    except UnicodeEncodeError:
        joined = "".join(f"\n{path}\0{hashes[path]}" for path in sorted(hashes, key=os.fsencode)).encode(
            "utf-8", "surrogateescape")
    return hashlib.sha256(b"distilld-knowledge/1" + joined).hexdigest()


def fingerprint_of(head: str, digest: str) -> str:
    return hashlib.sha256(f"distilld-fingerprint/1\n{head}\n{digest}".encode()).hexdigest()[:32]


Scanned = list[tuple[str, int, int, int, int]]


@dataclass(frozen=True)
class StoreState:
    """The store as the index must match it: HEAD, the files' stamps, and their one key."""

    head: str
    scanned: Scanned
    stamps_key: str

    @cached_property
    def stamps(self) -> dict[str, Stamp]:
        """Each file's stamp by path; built only when the index must be brought up to date."""
        return {p: f"{m}:{c}:{size}:{ino}" for p, m, c, size, ino in self.scanned}


def store_state(root: Path) -> StoreState:
    head = head_commit_id(root)
    scanned = _scan(root)
    # The key is over the scan as it came (folder order is stable while nothing changes; if it
    # moves, the update that follows finds every stamp equal and re-reads nothing). marshal
    # format 2 (no back-references) gives the same bytes for the same paths and numbers.
    key = hashlib.sha256(head.encode() + b"\n" + marshal.dumps(scanned, 2)).hexdigest()
    return StoreState(head, scanned, key)


def _scan_would_list(base: str, path: str) -> bool:
    """Would a full scan reach ``path``? Not through a linked folder, nor a name it skips."""
    parts = path.split("/")
    if path not in (SPINE, CATALOG) and not (is_knowledge_path(path) and all(_utf8(p) for p in parts)):
        return False
    return not any(os.path.islink(base + "/".join(parts[:i])) for i in range(1, len(parts)))


def state_with_changes(root: Path, previous: StoreState, changed: set[str]) -> StoreState:
    """``previous`` with only the ``changed`` paths looked at again (a watch named them): the
    same files and stamps a full scan would find, in an order of its own (the key then differs
    from a full scan's, and the next full check finds every stamp equal and re-reads nothing)."""
    base = os.path.join(root, "")
    by_path = {entry[0]: entry for entry in previous.scanned}
    for path in changed:
        if not _scan_would_list(base, path):
            continue
        try:
            info = os.lstat(base + path)
        except OSError:
            by_path.pop(path, None)
            continue
        if stat.S_ISREG(info.st_mode):
            by_path[path] = (path, info.st_mtime_ns, info.st_ctime_ns, info.st_size, info.st_ino)
        else:
            by_path.pop(path, None)
    head = head_commit_id(root)
    scanned = list(by_path.values())
    key = hashlib.sha256(head.encode() + b"\n" + marshal.dumps(scanned, 2)).hexdigest()
    return StoreState(head, scanned, key)
