"""Byte-exactness after a pull: the work tree holds exactly the commit's blobs, and every
archived file still matches the checksum its ledger line recorded (STORE-FORMAT.md 5)."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from dataclasses import dataclass

import pygit2

from ..store.ledger import Ledger
from ..store.paths import LEDGER, archived_path
from ..store.text import sha256_hex, sha256_norm_hex
from .merge import Flat, flatten
from .repo import StoreRepo
from .trees import tree_entry


@dataclass(frozen=True)
class Mismatch:
    path: str
    problem: str

    def __str__(self) -> str:
        return f"{self.path}: {self.problem}"


def changed_between(old: pygit2.Tree | None, new: pygit2.Tree) -> list[str]:
    """Paths a checkout from ``old`` to ``new`` wrote or removed."""
    if old is None:
        return sorted(flatten(new))  # a first checkout writes every file
    paths: set[str] = set()
    for delta in old.diff_to_tree(new).deltas:
        paths.add(delta.old_file.path)
        paths.add(delta.new_file.path)
    return sorted(paths)


def verify_paths(store: StoreRepo, tree: pygit2.Tree, paths: Iterable[str], flat: Flat | None = None) -> list[Mismatch]:
    """Each path's bytes on disk against the tree's blob (absent where the tree has none).
    ``flat``: the tree's files by path, when the caller has them (one walk instead of a lookup
    by path for each)."""
    found: list[Mismatch] = []
    root = str(store.root) + os.sep  # plain strings: a first checkout verifies every file
    for path in paths:
        full = root + path
        entry = flat.get(path) if flat is not None else tree_entry(tree, path)
        try:
            info = os.lstat(full)
        except FileNotFoundError:
            if entry is not None:
                found.append(Mismatch(path, "missing from the work tree"))
            continue
        if entry is None:
            found.append(Mismatch(path, "still in the work tree though the commit removed it"))
        elif stat.S_ISLNK(info.st_mode) or not stat.S_ISREG(info.st_mode):
            found.append(Mismatch(path, "not a regular file"))
        else:
            with open(full, "rb") as handle:
                data = handle.read()
            if pygit2.hash(data) != entry[0]:
                found.append(Mismatch(path, f"bytes differ from the commit's blob {str(entry[0])[:12]}"))
    return found


def verify_archive(store: StoreRepo, only: set[str] | None = None) -> list[Mismatch]:
    """Every file the ledger says is archived (or, with ``only``, those of these tier paths)
    against the ledger's sha256 (or sha256-norm)."""
    try:
        ledger = Ledger((store.root / LEDGER).read_bytes())
    except FileNotFoundError:
        return []
    found: list[Mismatch] = []
    for path, event in sorted(ledger.last_event_by_path.items()):
        if not event.is_archive or (only is not None and path not in only):
            continue
        archived = archived_path(path)
        try:
            raw = (store.root / archived).read_bytes()
        except OSError:
            found.append(Mismatch(archived, "the ledger says archived, but the file is missing"))
            continue
        norm = event.value("sha256-norm")
        if sha256_hex(raw) != event.value("sha256") and not (norm and sha256_norm_hex(raw) == norm):
            found.append(Mismatch(archived, "bytes differ from the ledger's sha256"))
    return found


def _ledger_in(repo: pygit2.Repository, tree: pygit2.Tree | None) -> Ledger | None:
    entry = tree_entry(tree, LEDGER)
    blob = repo[entry[0]] if entry is not None else None
    return Ledger(blob.data) if isinstance(blob, pygit2.Blob) else None


def verify_pulled(store: StoreRepo, old: pygit2.Tree | None, new: pygit2.Tree,
                  exempt: Iterable[str] = ()) -> list[Mismatch]:
    """After a pull, what the pull can have broken: the paths it wrote, against the commit's
    blobs, and the archived files whose ledger line it brought or whose bytes it wrote, against
    the ledger's checksum. A first checkout writes everything, so it verifies everything; the
    whole work tree is verified again on the reconciliation schedule (``verify_pull``)."""
    if old is None:
        return verify_pull(store, old, new, exempt)
    written = set(changed_between(old, new))
    skip = set(exempt) - written
    found = verify_paths(store, new, sorted(written - skip))
    before, after = _ledger_in(store.repo, old), _ledger_in(store.repo, new)
    if after is None:
        return found
    earlier = before.last_event_by_path if before is not None else {}
    wanted = {path for path, event in after.last_event_by_path.items()
              if event.is_archive and (earlier.get(path) is None or earlier[path].text != event.text
                                       or archived_path(path) in written)}
    return found + verify_archive(store, wanted)


def verify_pull(store: StoreRepo, old: pygit2.Tree | None, new: pygit2.Tree,
                exempt: Iterable[str] = ()) -> list[Mismatch]:
    """After a pull: every tracked file against the commit's blob, then the archive against the
    ledger. ``exempt``: paths that held uncommitted edits before the pull (a user's staged
    change, say) and that the pull did not write; they are not expected to match."""
    files = flatten(new)
    written = set(files) if old is None else set(changed_between(old, new))  # a first checkout wrote them all
    skip = set(exempt) - written
    paths = sorted(p for p in set(files) | written if p not in skip)
    return verify_paths(store, new, paths, files) + verify_archive(store)


def verify_work_tree(store: StoreRepo) -> list[Mismatch]:
    """The full verification, for the reconciliation schedule: every tracked file against HEAD's
    blob (except those with uncommitted edits, which are not expected to match), and every
    archived file against its ledger checksum."""
    repo = store.repo
    if repo.head_is_unborn:
        return []
    tree = repo.head.peel(pygit2.Commit).tree
    dirty = list(repo.status(untracked_files="no"))
    return verify_pull(store, tree, tree, dirty)
