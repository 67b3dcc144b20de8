"""Commits: one per operation, holding exactly the paths it touched, its tree made from HEAD's
by replacing only those paths (tree builders along the changed folders: no index of the whole
store is read or written); the branch moves by compare-and-swap; the user's own index is left as
it was, except that the committed paths are brought up to date there (LIBRARY-NOTES 1.3).

Blobs are made from the files' raw bytes (``create_blob``), never through git's filters, so a
commit holds exactly the bytes on disk whatever a machine's git configuration says.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import pygit2
from pygit2.enums import FileMode, FileStatus

from ..store.merge import has_conflict_markers
from ..store.paths import SPINE, sync_class
from .errors import CommitRefused, GitBusy
from .maintenance import refresh_index
from .repo import MANAGED_FILES, StoreRepo, require_quiet, write_state_file

TRAILER_PATH_LIMIT = 200  # beyond this, the count says how many (the diff has them all)
BODY_PATH_LIMIT = 50
USER_STAGED = (FileStatus.INDEX_NEW | FileStatus.INDEX_MODIFIED | FileStatus.INDEX_DELETED
               | FileStatus.INDEX_RENAMED | FileStatus.INDEX_TYPECHANGE)
PENDING_INDEX = "pending-index.json"
STAT_ADD_LIMIT = 256 * 1024  # bytes; above it the index gets the blob id without stat data
BULK_PATHS = 200  # a commit of more paths leaves the index's stat data to `git update-index --refresh`

Entry = tuple[pygit2.Oid, int]


@dataclass(frozen=True)
class Identity:
    """Who distilld's commits name as author and committer (machine-local settings)."""

    name: str = "distilld"
    email: str = "distilld@localhost"

    def signature(self, now: datetime) -> pygit2.Signature:
        offset = now.utcoffset()
        minutes = int(offset.total_seconds() // 60) if offset else 0
        return pygit2.Signature(self.name, self.email, int(now.timestamp()), minutes)


def new_pass_id(now: datetime) -> str:
    return f"{now.strftime('%Y%m%dT%H%M%SZ')}-{secrets.token_hex(2)}"


@dataclass
class CommitResult:
    commit: str | None  # the new commit's id; None when nothing was committed
    operation: str
    pass_id: str
    paths: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (path, why it was left out)
    waiting: str | None = None  # why nothing was committed yet (not quiet, busy)
    notes: list[str] = field(default_factory=list)


# -- messages ---------------------------------------------------------------------------------

def trailers(operation: str, pass_id: str, paths: list[str]) -> list[str]:
    """``git interpret-trailers``-readable lines: operation, pass id, and the paths."""
    lines = [f"Distilld-Operation: {operation}", f"Distilld-Pass: {pass_id}", f"Distilld-Path-Count: {len(paths)}"]
    lines += [f"Distilld-Path: {path}" for path in paths[:TRAILER_PATH_LIMIT]]
    return lines


def message(subject: str, body: Iterable[str], operation: str, pass_id: str, paths: list[str]) -> str:
    body_lines = list(body)
    parts = [subject.strip(), ""]
    if body_lines:
        parts += [*body_lines, ""]
    parts += trailers(operation, pass_id, paths)
    return "\n".join(parts) + "\n"


def _listing(title: str, paths: list[str]) -> list[str]:
    if not paths:
        return []
    shown = [f"    {p}" for p in paths[:BODY_PATH_LIMIT]]
    if len(paths) > BODY_PATH_LIMIT:
        shown.append(f"    ... and {len(paths) - BODY_PATH_LIMIT} more")
    return [f"{title}:", *shown]


# -- what may be committed ----------------------------------------------------------------------

def _read_committable(root: Path, path: str) -> bytes | None:
    """The bytes to commit for ``path`` (None: it was removed); CommitRefused when it may not be
    committed. One read, so the bytes checked are the bytes committed."""
    if path not in MANAGED_FILES and sync_class(path) != "shared":
        kind = "a machine-local path" if sync_class(path) == "local" else "not a store file"
        raise CommitRefused(f"{root}: {path} is {kind}; distilld commits only the shared set")
    full = root / path
    try:
        info = os.lstat(full)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        raise CommitRefused(f"{root}: {path} is a symlink; the store holds none (replace it with the file itself)")
    if not stat.S_ISREG(info.st_mode):
        raise CommitRefused(f"{root}: {path} is not a regular file")
    try:
        data = full.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as error:
        raise CommitRefused(f"{root}: {path} cannot be read ({error.strerror or error})") from None
    if has_conflict_markers(data):
        raise CommitRefused(f"{root}: {path} holds git conflict markers; resolve them by hand, then distilld "
                            "commits it")
    return data


# -- trees and the real index -------------------------------------------------------------------

def head_commit(repo: pygit2.Repository) -> pygit2.Commit | None:
    if repo.head_is_unborn:
        return None
    return repo.head.peel(pygit2.Commit)


def tree_entry(tree: pygit2.Tree | None, path: str) -> Entry | None:
    if tree is None:
        return None
    try:
        obj = tree[path]
    except KeyError:
        return None
    return (obj.id, int(obj.filemode))


def tree_with(repo: pygit2.Repository, tree: pygit2.Tree | None, changes: dict[str, Entry | None]) -> pygit2.Oid:
    """``tree`` with the given paths set (or removed, for None): what an index seeded from the
    tree would write, but only the trees along the changed paths are read and written, so a
    commit costs what it changes, not what the store holds."""
    written = _subtree_with(repo, tree, changes)
    return written if written is not None else repo.TreeBuilder().write()


def _subtree_with(repo: pygit2.Repository, tree: pygit2.Tree | None,
                  changes: dict[str, Entry | None]) -> pygit2.Oid | None:
    builder = repo.TreeBuilder(tree) if tree is not None else repo.TreeBuilder()
    below: dict[str, dict[str, Entry | None]] = {}
    for path, entry in changes.items():
        name, slash, rest = path.partition("/")
        if slash:
            below.setdefault(name, {})[rest] = entry
        elif entry is None:
            if builder.get(name) is not None:
                builder.remove(name)
        else:
            builder.insert(name, entry[0], FileMode(entry[1]))
    for name, inside in below.items():
        current = builder.get(name)
        subtree = current if isinstance(current, pygit2.Tree) else None  # a file there gives way, as in an index
        written = _subtree_with(repo, subtree, inside)
        if written is not None:
            builder.insert(name, written, FileMode.TREE)
        elif current is not None:
            builder.remove(name)
    if len(builder) == 0:  # git keeps no empty trees
        return None
    return builder.write()


def index_entry(index: pygit2.Index, path: str) -> Entry | None:
    try:
        entry = index[path]
    except KeyError:
        return None
    return (entry.id, int(entry.mode))


def staged_by_user(store: StoreRepo, paths: Iterable[str]) -> list[str]:
    """Paths whose index entry differs from HEAD's: the user staged them for their own commit."""
    head = head_commit(store.repo)
    tree = head.tree if head else None
    index = store.repo.index
    index.read(False)  # reloaded only when it changed on disk
    return [p for p in paths if index_entry(index, p) != tree_entry(tree, p)]


def _pending_path(store: StoreRepo) -> Path:
    return store.state_dir / PENDING_INDEX


def _write_pending(store: StoreRepo, commit: pygit2.Oid, parent: pygit2.Oid | None,
                   entries: dict[str, Entry | None]) -> None:
    payload = {
        "commit": str(commit),
        "parent": str(parent) if parent else None,
        "paths": {p: [str(e[0]), e[1]] if e else None for p, e in entries.items()},
    }
    write_state_file(_pending_path(store), json.dumps(payload, indent=1).encode())


def _apply_to_index(store: StoreRepo, entries: dict[str, Entry | None], parent_tree: pygit2.Tree | None) -> None:
    """Bring the real index up to date for exactly ``entries``, where the user has not staged
    something else meanwhile. For a small file ``add(path)`` also records its stat data (so git
    does not rehash it); when the file changed since we read it, or is large (adding it would
    compress it a second time), the committed blob is recorded without stat data: git then
    compares content, and newer bytes show as an unstaged change, never as a staged one."""
    index = store.repo.index
    index.read(False)
    # ``add(path)`` writes the blob a second time to get the stat data; for a commit of many paths
    # (the first commit of a store) git's own refresh records it without writing anything.
    bulk = len(entries) > BULK_PATHS and shutil.which("git") is not None
    for path, entry in entries.items():
        if index_entry(index, path) != tree_entry(parent_tree, path):
            continue  # staged by the user after all: theirs to keep
        if entry is None:
            if index_entry(index, path) is not None:
                index.remove(path)
            continue
        oid, mode = entry
        try:
            if not bulk and (store.root / path).stat().st_size <= STAT_ADD_LIMIT:
                index.add(path)
        except (pygit2.GitError, OSError):
            pass
        if index_entry(index, path) != (oid, mode):
            index.add(pygit2.IndexEntry(path, oid, FileMode(mode)))
    index.write()
    if bulk:
        refresh_index(store.root)


def repair_pending_index(store: StoreRepo) -> None:
    """Finish an index update that a held index.lock stopped after a commit was made."""
    path = _pending_path(store)
    try:
        payload = json.loads(path.read_bytes())
    except FileNotFoundError:
        return
    except (OSError, ValueError):
        path.unlink(missing_ok=True)
        return
    repo = store.repo
    head = head_commit(repo)
    commit = pygit2.Oid(hex=payload["commit"])
    if head is None or not (head.id == commit or repo.descendant_of(head.id, commit)):
        path.unlink(missing_ok=True)  # history moved on without it; nothing safe to repair
        return
    parent_tree = repo[pygit2.Oid(hex=payload["parent"])].peel(pygit2.Tree) if payload["parent"] else None
    entries: dict[str, Entry | None] = {
        p: (pygit2.Oid(hex=e[0]), int(e[1])) if e else None for p, e in payload["paths"].items()
    }
    _apply_to_index(store, entries, parent_tree)
    path.unlink(missing_ok=True)


# -- committing -----------------------------------------------------------------------------------

def commit_paths(store: StoreRepo, paths: Iterable[str], text: str, signature: pygit2.Signature,
                 read: dict[str, bytes | None] | None = None) -> str | None:
    """Commit the working-tree bytes of ``paths`` on top of HEAD; None when that changes nothing.
    ``read``: bytes the caller already read (and checked) with ``_read_committable``.

    Raises GitBusy when git is busy or the branch moved meanwhile (retry later), and
    CommitRefused when a path may not be committed or the user staged it.
    """
    repo, root = store.repo, store.root
    require_quiet(store)
    repair_pending_index(store)
    wanted = sorted(set(paths))
    known = read or {}
    contents = {path: known[path] if path in known else _read_committable(root, path) for path in wanted}
    staged = staged_by_user(store, wanted)
    if staged:
        raise CommitRefused(f"{root}: you have staged changes to {', '.join(staged)}; distilld leaves them to "
                            "your own commit and records its change once they are committed")
    head = head_commit(repo)
    entries: dict[str, Entry | None] = {}
    for path in wanted:
        data = contents[path]
        if data is not None:
            oid = repo.create_blob(data)
            old = tree_entry(head.tree if head else None, path)
            mode = old[1] if old and old[1] in (FileMode.BLOB, FileMode.BLOB_EXECUTABLE) else int(FileMode.BLOB)
            entries[path] = (oid, mode)
        else:
            entries[path] = None
    tree = tree_with(repo, head.tree if head else None, entries)
    if head is not None and tree == head.tree.id:
        return None
    parents = [head.id] if head is not None else []
    try:
        # "HEAD" + first parent: libgit2 refuses when the branch tip is no longer that parent.
        new = repo.create_commit("HEAD", signature, signature, text, tree, parents)
    except (pygit2.GitError, OSError) as error:
        raise GitBusy(f"{root}: the branch moved or is locked while committing ({error}); retrying later") from None
    _write_pending(store, new, head.id if head else None, entries)
    try:
        _apply_to_index(store, entries, head.tree if head else None)
    except (pygit2.GitError, OSError):
        return str(new)  # index.lock appeared: the pending record finishes this next time
    _pending_path(store).unlink(missing_ok=True)
    return str(new)


def commit_operation(store: StoreRepo, operation: str, paths: Iterable[str], subject: str,
                     signature: pygit2.Signature, pass_id: str, body: Iterable[str] = ()) -> CommitResult:
    """One maintenance operation (archive, restore, compaction, migration) as one commit."""
    wanted = sorted(set(paths))
    result = CommitResult(None, operation, pass_id, wanted)
    if not wanted:
        return result
    text = message(subject, body, operation, pass_id, wanted)
    result.commit = commit_paths(store, wanted, text, signature)
    return result


# -- changes agents wrote ---------------------------------------------------------------------------

@dataclass
class WorkingChanges:
    """Shared paths that differ from HEAD in the work tree, sorted by kind."""

    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    staged: list[str] = field(default_factory=list)  # the user's: left alone

    @property
    def paths(self) -> list[str]:
        return sorted(self.added + self.changed + self.removed)


def working_changes(store: StoreRepo) -> WorkingChanges:
    repair_pending_index(store)
    found = WorkingChanges()
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
    changes = working_changes(store)
    result = CommitResult(None, operation, pass_id)
    result.notes += [f"{p}: staged by you; left for your own commit" for p in changes.staged]
    paths: list[str] = []
    read: dict[str, bytes | None] = {}
    for path in changes.paths:
        try:
            read[path] = _read_committable(store.root, path)  # read once: checked and committed
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
