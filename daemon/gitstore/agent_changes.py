"""What agents wrote since the last commit: the shared paths that differ from HEAD, committed as
one commit of their own (the user's staged paths are left for the user's commit)."""

from __future__ import annotations

import os
from collections.abc import Iterable
from dataclasses import dataclass, field

import pygit2
from pygit2.enums import FileStatus

from ..store.paths import SPINE, sync_class
from .commit import Committable, CommitResult, commit_paths, message, read_committable, repair_pending_index
from .errors import CommitRefused
from .index_entry import settle_fresh_entries
from .index_repair import repair_stale_entries
from .repo import MANAGED_FILES, StoreRepo, busy_reason, require_quiet
from .torn_checkout import finish_torn_files
from .trees import head_commit, tree_entry

BODY_PATH_LIMIT = 50
USER_STAGED = (FileStatus.INDEX_NEW | FileStatus.INDEX_MODIFIED | FileStatus.INDEX_DELETED
               | FileStatus.INDEX_RENAMED | FileStatus.INDEX_TYPECHANGE)


def _listing(title: str, paths: list[str]) -> list[str]:
    if not paths:
        return []
    shown = [f"    {p}" for p in paths[:BODY_PATH_LIMIT]]
    if len(paths) > BODY_PATH_LIMIT:
        shown.append(f"    ... and {len(paths) - BODY_PATH_LIMIT} more")
    return [f"{title}:", *shown]


@dataclass
class WorkingChanges:
    """Shared paths that differ from HEAD in the work tree, sorted by kind."""

    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    staged: list[str] = field(default_factory=list)  # the user's: left alone
    repaired: list[str] = field(default_factory=list)  # index entries a killed distilld left behind

    @property
    def paths(self) -> list[str]:
        return sorted(self.added + self.changed + self.removed)


def repair_index(store: StoreRepo) -> list[str]:
    """Finish an index update a killed distilld left, and set back to HEAD what the index still
    names of an older distilld state (the paths so repaired). Git busy: nothing now; every
    commit repairs first too."""
    if busy_reason(store) is not None:
        return []
    try:
        repair_pending_index(store)
        return repair_stale_entries(store)
    except (pygit2.GitError, OSError):
        return []  # someone else writes the index right now


def working_changes(store: StoreRepo) -> WorkingChanges:
    repair_pending_index(store)
    found = WorkingChanges(repaired=repair_stale_entries(store))
    settle_fresh_entries(store)  # before the scan: a settled entry is not hashed by it
    for path, flags in store.repo.status(untracked_files="all", ignored=False).items():
        if path not in MANAGED_FILES and sync_class(path) != "shared":
            continue
        if flags & USER_STAGED:
            found.staged.append(path)
        elif flags & FileStatus.WT_NEW:
            found.added.append(path)
        elif flags & FileStatus.WT_DELETED:
            found.removed.append(path)
        elif flags & (FileStatus.WT_MODIFIED | FileStatus.WT_TYPECHANGE | FileStatus.WT_RENAMED):
            found.changed.append(path)
    for kind in (found.added, found.changed, found.removed, found.staged):
        kind.sort()
    return found


def _size_in_head(store: StoreRepo, path: str) -> int | None:
    head = head_commit(store.repo)
    entry = tree_entry(head.tree if head else None, path)
    if entry is None:
        return None
    blob = store.repo[entry[0]]
    return len(blob.data) if isinstance(blob, pygit2.Blob) else None


def commit_agent_changes(store: StoreRepo, signature: pygit2.Signature, pass_id: str, now_epoch: float,
                         quiet_seconds: float = 0, operation: str = "agent-changes",
                         subject: str | None = None) -> CommitResult:
    """Commit what agents wrote since the last commit, as its own commit, once the store has
    been quiet for ``quiet_seconds`` (the caller holds or has checked the store's .lock)."""
    require_quiet(store)
    # A checkout killed mid-write left files holding only the start of their new version: they
    # are finished first, so that no commit (the daemon's, a command's) records the torn part.
    torn = finish_torn_files(store)
    changes = working_changes(store)
    result = CommitResult(None, operation, pass_id)
    if torn:
        result.notes.append(f"finished what a killed checkout had half-written: {', '.join(torn[:5])}")
    result.notes += [f"{p}: staged by you; left for your own commit" for p in changes.staged]
    if changes.repaired:
        result.notes.append(f"the index named what {', '.join(changes.repaired[:5])} held before distilld's last "
                            "commit of it (a killed distilld left it so): set back to HEAD")
    paths: list[str] = []
    read: dict[str, Committable | None] = {}
    for path in changes.paths:
        try:
            read[path] = read_committable(store.root, path)  # read once: checked and committed
        except CommitRefused as refused:
            result.skipped.append((path, str(refused).removeprefix(f"{store.root}: ")))
        else:
            paths.append(path)
    if not paths:
        return result
    newest = 0.0
    for path in paths:
        try:
            newest = max(newest, os.lstat(store.root / path).st_mtime)
        except FileNotFoundError:
            pass
    if quiet_seconds > 0 and now_epoch - newest < quiet_seconds:
        result.waiting = f"the store changed {now_epoch - newest:.0f} s ago; waiting for {quiet_seconds:.0f} s of quiet"
        return result
    keep = set(paths)
    added = [p for p in changes.added if p in keep]
    changed = [p for p in changes.changed if p in keep]
    removed = [p for p in changes.removed if p in keep]
    body = _listing("Added", added) + _listing("Changed", changed) + _listing("Removed", removed)
    if SPINE in keep:
        before = _size_in_head(store, SPINE)
        after = (store.root / SPINE).stat().st_size if (store.root / SPINE).exists() else None
        body.append(f"SPINE.md bytes: {before if before is not None else 'none'} -> "
                    f"{after if after is not None else 'none'}")
    headline = subject or (f"distilld: agent changes ({len(added)} added, {len(changed)} changed, "
                           f"{len(removed)} removed)")
    result.paths = sorted(keep)
    result.commit = commit_paths(store, result.paths, message(headline, body, operation, pass_id, result.paths),
                                 signature, read)
    return result


def work_tree_ids(store: StoreRepo, paths: Iterable[str]) -> dict[str, str | None]:
    """The blob id each path's bytes would have now (None: absent), to tell which paths an
    operation changed among those that already differed from HEAD."""
    ids: dict[str, str | None] = {}
    for path in paths:
        try:
            ids[path] = str(pygit2.hash((store.root / path).read_bytes()))
        except OSError:
            ids[path] = None
    return ids
