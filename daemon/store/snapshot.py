"""Read a store into memory once: raw bytes in, a model out.

Symlinks are recorded and never followed or read; every other file the checks need is read
as raw bytes. Nothing here writes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import NamedTuple

from ..errors import StoreError
from .file_stamp import FileStamp as FileStamp
from .file_stamp import stamp_of as stamp_of
from .ledger import Ledger, parsed_ledger
from .paths import CATALOG, LEDGER, LOCAL_SPINE, SPINE, TIERS, Layout, is_nested_archive
from .root_access import is_a_file_line
from .spine import Spine
from .tierfile import KnowledgeFile

SCANNED_DIRS: tuple[str, ...] = (*TIERS, "archive", "evidence", "local")


def c_sorted(paths: list[str]) -> list[str]:
    """Sort as ``LC_ALL=C sort`` does: by bytes. ASCII text sorts the same as its bytes, so
    the usual store (ASCII names; one join tells) is sorted without encoding each name."""
    if "".join(paths).isascii():
        return sorted(paths)
    return sorted(paths, key=os.fsencode)


class ReadError(NamedTuple):
    path: str
    message: str


@dataclass
class Snapshot:
    """Everything the checks read, taken from disk at one moment."""

    root: Path
    files: set[str] = field(default_factory=set)  # every regular file in the scanned areas
    symlinks: list[str] = field(default_factory=list)
    contents: dict[str, bytes] = field(default_factory=dict)
    read_errors: list[ReadError] = field(default_factory=list)
    removed: frozenset[str] = frozenset()  # gone in the store a plan would leave (planned_snapshot)
    # (mtime, ctime, size, inode) per file, recorded only by refresh_snapshot: what tells it that
    # a file is unchanged since the snapshot before.
    stamps: dict[str, FileStamp] = field(default_factory=dict)

    # -- file sets of the reference checker -------------------------------------------------
    @cached_property
    def tier_paths(self) -> list[str]:
        return c_sorted([p for p in self._markdown_under(TIERS) if not is_nested_archive(p)])

    @cached_property
    def nested_archive_paths(self) -> list[str]:
        return c_sorted([p for p in self._markdown_under(TIERS) if is_nested_archive(p)])

    @cached_property
    def archive_paths(self) -> list[str]:
        return c_sorted(
            [p for p in self._markdown_under(("archive",)) if p.rsplit("/", 1)[-1] != "LEDGER.md"]
        )

    @cached_property
    def evidence_paths(self) -> list[str]:
        return c_sorted(self._markdown_under(("evidence",)))

    def _markdown_under(self, tops: tuple[str, ...]) -> list[str]:
        by_top = self._markdown_by_top
        return [p for top in tops for p in by_top.get(top, ())]

    @cached_property
    def _markdown_by_top(self) -> dict[str, list[str]]:
        """Every ``*.md`` below a top folder, by that folder: one pass over the files for all four lists."""
        found: dict[str, list[str]] = {}
        for path in self.files:
            top, slash, _ = path.partition("/")
            if slash and path.endswith(".md"):
                found.setdefault(top, []).append(path)
        return found

    # -- models ------------------------------------------------------------------------------
    def knowledge(self, path: str) -> KnowledgeFile:
        cached = self._knowledge_cache.get(path)
        if cached is None:
            cached = KnowledgeFile(path, self.contents.get(path, b""))
            self._knowledge_cache[path] = cached
        return cached

    @cached_property
    def _knowledge_cache(self) -> dict[str, KnowledgeFile]:
        return {}

    @cached_property
    def spine(self) -> Spine | None:
        raw = self.contents.get(SPINE)
        return Spine(raw) if raw is not None else None

    @cached_property
    def local_spine(self) -> Spine | None:
        raw = self.contents.get(LOCAL_SPINE)
        return Spine(raw) if raw is not None else None

    @cached_property
    def ledger(self) -> Ledger | None:
        raw = self.contents.get(LEDGER)
        return parsed_ledger(raw) if raw is not None else None

    @property
    def catalog_raw(self) -> bytes | None:
        return self.contents.get(CATALOG)

    def exists(self, path: str) -> bool:
        """Is there a file at this store-relative path (as ``test -f`` would say)?"""
        if path in self.removed:
            return False
        if path in self.files:
            return True
        if path in self._symlinked_files:
            return True
        top = path.split("/", 1)[0]
        if "/" in path and top in SCANNED_DIRS:
            return False  # the scan saw everything there
        return (self.root / path).is_file() and not (self.root / path).is_symlink()

    @cached_property
    def _symlinked_files(self) -> set[str]:
        # `test -f` follows a link; report the link, but let existence checks agree with the checker.
        return {link for link in self.symlinks if (self.root / link).is_file()}

    def file_contents(self) -> dict[str, bytes]:
        """Every file the scan read, by path: what planners that work on bytes take in."""
        return {path: raw for path, raw in self.contents.items() if path in self.files}

    def require_readable(self) -> None:
        """A writer that cannot read every file cannot know what it would change: refuse."""
        if self.read_errors:
            first = self.read_errors[0]
            raise StoreError(f"{self.root / first.path}: {first.message}; fix its permissions, then run "
                             "again (nothing was changed)")

    @cached_property
    def layout(self) -> Layout:
        if CATALOG in self.files:
            return Layout.FILES_ONLY
        if any(p.split("/", 1)[0] in (*TIERS, "archive") for p in self.files):
            return Layout.UNMIGRATED
        return Layout.NEW


def _walk(root: Path, top: str, snapshot: Snapshot, stamped: bool = False) -> None:
    pending = [top]
    while pending:
        relative = pending.pop()
        try:
            with os.scandir(root / relative) as entries:
                children = list(entries)
        except FileNotFoundError:
            continue
        except OSError as error:
            snapshot.read_errors.append(ReadError(relative, f"cannot list directory: {error.strerror}"))
            continue
        for entry in children:
            child = f"{relative}/{entry.name}"
            if entry.is_symlink():
                snapshot.symlinks.append(child)
            elif entry.is_dir(follow_symlinks=False):
                pending.append(child)
            elif entry.is_file(follow_symlinks=False):
                snapshot.files.add(child)
                if stamped:
                    try:
                        snapshot.stamps[child] = stamp_of(entry.stat(follow_symlinks=False))
                    except OSError:
                        pass  # gone meanwhile, or unreadable: read (and reported) as if new


def _read(base: str, path: str, snapshot: Snapshot) -> None:
    """Read ``base + path`` (``base`` is the root with its slash): a plain string and an
    unbuffered open() (one read to the end needs no buffer) cost half what a Path's read_bytes
    does per file, over every file of the store."""
    try:
        with open(base + path, "rb", buffering=0) as handle:
            snapshot.contents[path] = handle.read()
    except OSError as error:
        snapshot.read_errors.append(ReadError(path, f"cannot read: {error.strerror or error}"))
        snapshot.contents[path] = b""


def take_snapshot(store: Path | str) -> Snapshot:
    """Read the store at ``store``. Raises StoreError when it is not a readable directory."""
    return _scan(store, None, stamped=False)


def refresh_snapshot(store: Path | str, previous: Snapshot | None) -> Snapshot:
    """Read the store again, taking from ``previous`` the bytes (and parsed models) of every file
    whose (mtime, ctime, size, inode) is what ``previous`` recorded; every other file is read.

    The result equals a ``take_snapshot`` unless a file changed without changing any of the four
    (a rewrite of the same size within one clock tick): the daemon's scheduled full rescan,
    which reads by content, is there for that."""
    return _scan(store, previous, stamped=True)


def _scan(store: Path | str, previous: Snapshot | None, stamped: bool) -> Snapshot:
    given = Path(store).expanduser()
    if not given.exists():
        raise StoreError(f"{given}: no such store directory (create it, or pass the store's path)")
    if not given.is_dir():
        raise StoreError(is_a_file_line(given))
    root = given.resolve()  # the checker works on physical paths (pwd -P)
    snapshot = Snapshot(root=root)
    for name in (SPINE, CATALOG):
        candidate = root / name
        if candidate.is_symlink():
            snapshot.symlinks.append(name)
        elif candidate.is_file():
            snapshot.files.add(name)
            if stamped:
                try:
                    snapshot.stamps[name] = stamp_of(candidate.stat())
                except OSError:
                    pass
    for top in SCANNED_DIRS:
        candidate = root / top
        if candidate.is_symlink():
            snapshot.symlinks.append(top)
        elif candidate.is_dir():
            _walk(root, top, snapshot, stamped)
    snapshot.symlinks.sort(key=os.fsencode)
    reusable = previous is not None and previous.root == root
    if reusable and previous is not None and snapshot.files == previous.files and snapshot.symlinks == previous.symlinks:
        for name in ("tier_paths", "nested_archive_paths", "archive_paths", "evidence_paths", "_symlinked_files",
                     "layout"):
            if name in previous.__dict__:
                snapshot.__dict__[name] = previous.__dict__[name]  # the same files: the same lists
    wanted = [SPINE, CATALOG, LEDGER, LOCAL_SPINE]
    wanted += snapshot.tier_paths + snapshot.nested_archive_paths
    wanted += snapshot.archive_paths + snapshot.evidence_paths
    unreadable = {error.path for error in previous.read_errors} if previous is not None else set()
    base = os.path.join(root, "")
    for path in wanted:
        if path not in snapshot.files or path in snapshot.contents:
            continue
        if reusable and previous is not None and path not in unreadable and _unchanged(previous, snapshot, path):
            snapshot.contents[path] = previous.contents[path]
        else:
            _read(base, path, snapshot)
    if reusable and previous is not None:
        _carry_models(previous, snapshot)
    return snapshot


def _unchanged(previous: Snapshot, current: Snapshot, path: str) -> bool:
    stamp = current.stamps.get(path)
    return stamp is not None and previous.stamps.get(path) == stamp and path in previous.contents


def _carry_models(previous: Snapshot, current: Snapshot) -> None:
    """Parsed files whose bytes were carried over are carried over too, with what they cached."""
    cache = current._knowledge_cache
    for path, known in previous._knowledge_cache.items():
        if current.contents.get(path) is known.raw:
            cache[path] = known
    for name, path in (("spine", SPINE), ("local_spine", LOCAL_SPINE), ("ledger", LEDGER)):
        model = previous.__dict__.get(name)
        if model is not None and current.contents.get(path) is model.raw:
            current.__dict__[name] = model  # a cached_property, set as it would have been


def snapshot_from_files(root: Path, files: Mapping[str, bytes]) -> Snapshot:
    """A snapshot of a store held in memory (a merged tree, say), as ``take_snapshot`` would
    read it from disk. ``root`` should be an empty directory: the checks never find anything
    there that ``files`` does not hold."""
    snapshot = Snapshot(root=root)
    for path, raw in files.items():
        if _scanned(path):
            snapshot.files.add(path)
            snapshot.contents[path] = raw
    return snapshot


def _scanned(path: str) -> bool:
    return path in (SPINE, CATALOG) or ("/" in path and path.split("/", 1)[0] in SCANNED_DIRS)


def planned_snapshot(before: Snapshot, files: Mapping[str, bytes]) -> Snapshot:
    """The store as a plan would leave it: the real store ``before`` (read from disk) with the
    plan's files laid over it. ``files`` is the plan's whole view, as ``before.file_contents()``
    gave it and the plan edited it: a path it adds or changes is written, a path it dropped is
    moved away or deleted. Everything the plan never read (the ``local/`` overlay's files,
    ``inbox/``, folders distilld does not manage) stays as it is on disk, and existence checks
    answer from that overlay, so the self-check of a plan sees the whole store."""
    removed = frozenset(p for p in before.file_contents() if p not in files)
    snapshot = Snapshot(root=before.root, removed=removed)
    snapshot.files = (before.files - removed) | {p for p in files if _scanned(p)}
    snapshot.symlinks = list(before.symlinks)
    snapshot.read_errors = list(before.read_errors)
    snapshot.contents = {p: raw for p, raw in before.contents.items() if p not in removed}
    snapshot.contents.update((p, raw) for p, raw in files.items() if _scanned(p))
    return snapshot
