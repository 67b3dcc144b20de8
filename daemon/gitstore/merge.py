"""The git side of a diverged sync: read the three trees, let store.merge decide every store
file, merge the few non-store files git tracks only when one side changed them, and write the
merge commit. Nothing here touches the work tree or moves a branch."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

import pygit2
from pygit2.enums import FileMode

from ..store.incremental import IncrementalStore
from ..store.limits import Limits
from ..store.merge import Sides, StoreMerge, has_conflict_markers, merge_stores
from ..store.paths import sync_class
from . import blob_cache
from .commit import message
from .repo import ATTRIBUTE_LINES, ATTRIBUTES, BLOCK_START, MANAGED_FILES

Flat = dict[str, tuple[pygit2.Oid, int]]


def flatten(tree: pygit2.Tree | None) -> Flat:
    """Every file of ``tree`` by path, with its blob id and mode."""
    out: Flat = {}
    if tree is None:
        return out
    stack: list[tuple[str, pygit2.Tree]] = [("", tree)]
    while stack:
        prefix, current = stack.pop()
        for entry in current:
            path = prefix + (entry.name or "")
            if isinstance(entry, pygit2.Tree):
                stack.append((path + "/", entry))
            else:
                out[path] = (entry.id, int(entry.filemode))
    return out


def is_store_path(path: str) -> bool:
    return sync_class(path) == "shared"


class BlobStore(Protocol):
    def get(self, oid: pygit2.Oid) -> bytes | None: ...

    def __setitem__(self, oid: pygit2.Oid, data: bytes) -> None: ...


class TreeFiles:
    """A FileSet over one tree's store files; blobs are read on demand, once (the three trees
    of a merge share most of them, and the next merge's trees too, hence the shared cache)."""

    def __init__(self, repo: pygit2.Repository, flat: Flat, cache: BlobStore | None = None) -> None:
        self.repo = repo
        self.entries = {p: e for p, e in flat.items() if is_store_path(p)}
        self.cache: BlobStore = cache if cache is not None else {}

    def paths(self) -> Iterable[str]:
        return self.entries.keys()

    def get(self, path: str) -> bytes | None:
        entry = self.entries.get(path)
        if entry is None:
            return None
        data = self.cache.get(entry[0])
        if data is None:
            blob = self.repo[entry[0]]
            if not isinstance(blob, pygit2.Blob):
                return None
            data = self.cache[entry[0]] = blob.data
        return data

    def ident(self, path: str) -> Hashable | None:
        entry = self.entries.get(path)
        return entry[0] if entry else None


def incoming_problems(repo: pygit2.Repository, before: Flat, after: Flat,
                      marker_candidates: set[str] | None = None) -> list[str]:
    """What the remote's side brings that distilld must not take in: machine-local paths,
    symlinks and submodules, and files holding conflict markers. ``marker_candidates``: the
    only paths that can hold markers (a search found the others free of them), when known."""
    problems: list[str] = []
    for path in sorted(set(after) | set(before)):
        entry = after.get(path)
        if entry is None or entry == before.get(path):
            continue
        oid, mode = entry
        if path not in MANAGED_FILES and sync_class(path) == "local":
            problems.append(f"{path}: the remote tracks a machine-local path; distilld never takes one in")
        elif mode == FileMode.LINK:
            problems.append(f"{path}: the remote holds a symlink; the store holds none")
        elif mode == FileMode.COMMIT:
            problems.append(f"{path}: the remote holds a submodule; the store holds none")
        elif is_store_path(path):
            if marker_candidates is not None and path not in marker_candidates:
                continue
            blob = repo[oid]
            if isinstance(blob, pygit2.Blob) and has_conflict_markers(blob.data):
                problems.append(marker_problem(path))
        elif path in MANAGED_FILES:
            blob = repo[oid]
            if isinstance(blob, pygit2.Blob) and not _keeps_block(path, blob.data):
                problems.append(f"{path}: the remote's version drops distilld's settings (byte-exactness, "
                                "the allow-list); run `distilld init` on the machine that changed it")
    return problems


def marker_problem(path: str) -> str:
    return f"{path}: the remote's version holds git conflict markers"


def _keeps_block(path: str, data: bytes) -> bool:
    """Does an incoming .gitattributes or .gitignore still carry distilld's block?"""
    text = data.decode("utf-8", "replace")
    if BLOCK_START not in text:
        return False
    return path != ATTRIBUTES or all(line in text for line in ATTRIBUTE_LINES)


_CHECKS: dict[str, tuple[threading.Lock, IncrementalStore]] = {}
_CHECKS_LOCK = threading.Lock()


@contextmanager
def _store_checks(repo: pygit2.Repository) -> Iterator[IncrementalStore]:
    """The incremental checker this process keeps for the store's repository, so that the next
    merge checks again only what changed; a fresh one while another thread's merge uses it."""
    with _CHECKS_LOCK:
        lock, checks = _CHECKS.setdefault(repo.path, (threading.Lock(), IncrementalStore()))
    if not lock.acquire(blocking=False):
        yield IncrementalStore()
        return
    try:
        yield checks
    except BaseException:
        checks.reset()  # a merge that stopped half-way leaves nothing half-kept
        raise
    finally:
        lock.release()


@dataclass
class TreeMerge:
    problems: list[str] = field(default_factory=list)
    store: StoreMerge | None = None
    commit: pygit2.Oid | None = None
    changed: list[str] = field(default_factory=list)  # paths that differ from ours

    @property
    def ok(self) -> bool:
        return not self.problems and (self.store is None or self.store.ok)


def merge_commits(repo: pygit2.Repository, ours: pygit2.Commit, theirs: pygit2.Commit, base: pygit2.Commit,
                  now: datetime, signature: pygit2.Signature, pass_id: str, limits: Limits, sides: Sides,
                  remote_label: str, token: Callable[[], str] | None = None) -> TreeMerge:
    """Merge ``theirs`` into ``ours``; on success ``commit`` is a new merge commit (no ref moved)."""
    flats = {name: flatten(c.tree) for name, c in (("base", base), ("ours", ours), ("theirs", theirs))}
    result = TreeMerge(problems=incoming_problems(repo, flats["base"], flats["theirs"]))
    # Files that are not store files: taken from whichever side changed them, never merged.
    other: dict[str, tuple[pygit2.Oid, int] | None] = {}
    for path in sorted(set().union(*(set(f) for f in flats.values()))):
        if is_store_path(path):
            continue
        b, o, t = (flats[n].get(path) for n in ("base", "ours", "theirs"))
        if o == t or t == b:
            continue
        if o == b:
            other[path] = t
        else:
            result.problems.append(f"{path}: changed on both machines and not a store file; distilld will not "
                                   "merge it (merge it with git yourself)")
    if result.problems:
        return result
    extra = {"token": token} if token else {}
    cache = blob_cache.MergeBlobs(blob_cache.SHARED)
    with _store_checks(repo) as checks:
        store = merge_stores(TreeFiles(repo, flats["base"], cache), TreeFiles(repo, flats["ours"], cache),
                             TreeFiles(repo, flats["theirs"], cache), now, limits, sides, checks=checks, **extra)
    result.store = store
    if not store.ok:
        return result
    private = pygit2.Index()
    private.read_tree(ours.tree)
    for path, entry in other.items():
        if entry is None:
            private.remove(path)
        else:
            private.add(pygit2.IndexEntry(path, entry[0], FileMode(entry[1])))
    for path, raw in store.changes.items():
        if raw is None:
            if path in flats["ours"]:
                private.remove(path)
        else:
            private.add(pygit2.IndexEntry(path, repo.create_blob(raw), FileMode.BLOB))
    result.changed = sorted(set(other) | set(store.changes))
    tree = private.write_tree(repo)
    body: list[str] = []
    if store.resolutions:
        body += ["Resolutions:", *(f"    {line}" for line in store.resolutions)]
    if store.inherited:
        body += ["Failures both sides already had (not caused by this merge):",
                 *(f"    [{f.group}] {f.message}" for f in store.inherited[:20])]
    subject = f"distilld: merge {remote_label}"
    if store.inbox:
        subject += f" ({len(store.inbox)} version(s) kept in inbox/)"
    text = message(subject, body, "sync-merge", pass_id, result.changed)
    result.commit = repo.create_commit(None, signature, signature, text, tree, [ours.id, theirs.id])
    return result
