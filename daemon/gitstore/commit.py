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
import stat
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import NamedTuple

import pygit2
from pygit2.enums import FileMode

from ..crashpoints import crashpoint  # a stdlib-only leaf: fault injection for the crash tests
from ..store.conflicts import has_conflict_markers  # the leaf, not the merge that re-exports it
from ..store.paths import sync_class
from .errors import CommitRefused, GitBusy
from .gitcli import git_executable
from .index_entry import add_committed, remember_fresh, same_file
from .index_repair import repair_stale_entries
from .maintenance import refresh_index
from .repo import MANAGED_FILES, StoreRepo, require_quiet, write_state_file
from .trees import Entry, head_commit, tree_entry, tree_with

TRAILER_PATH_LIMIT = 200  # beyond this, the count says how many (the diff has them all)
PENDING_INDEX = "pending-index.json"
BULK_PATHS = 200  # a commit of more paths leaves the index's stat data to `git update-index --refresh`


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


# -- what may be committed ----------------------------------------------------------------------

class Committable(NamedTuple):
    """A file's bytes as read for a commit, and the stat they were read under (None when the
    file changed during the read): the index records it if the file is still so afterwards."""

    data: bytes
    info: os.stat_result | None


def read_committable(root: Path, path: str) -> Committable | None:
    """The bytes to commit for ``path`` (None: it was removed); CommitRefused when it may not be
    committed. One read, so the bytes checked are the bytes committed."""
    if path not in MANAGED_FILES and sync_class(path) != "shared":
        kind = "a machine-local path" if sync_class(path) == "local" else "not a store file"
        raise CommitRefused(f"{root}: {path} is {kind}; distilld commits only the shared set")
    full = os.path.join(root, path)  # a string, not a Path: a first commit reads every file
    try:
        info = os.lstat(full)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        raise CommitRefused(f"{root}: {path} is a symlink; the store holds none (replace it with the file itself)")
    if not stat.S_ISREG(info.st_mode):
        raise CommitRefused(f"{root}: {path} is not a regular file")
    try:
        with open(full, "rb") as handle:
            data = handle.read()
            read_under = info if same_file(info, os.fstat(handle.fileno())) else None
    except FileNotFoundError:
        return None
    except OSError as error:
        raise CommitRefused(f"{root}: {path} cannot be read ({error.strerror or error})") from None
    if has_conflict_markers(data):
        raise CommitRefused(f"{root}: {path} holds git conflict markers; resolve them by hand, then distilld "
                            "commits it")
    return Committable(data, read_under)


# -- the real index -----------------------------------------------------------------------------

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


def _apply_to_index(store: StoreRepo, entries: dict[str, Entry | None], parent_tree: pygit2.Tree | None,
                    read_under: dict[str, os.stat_result] | None = None) -> None:
    """Bring the real index up to date for exactly ``entries``, where the user has not staged
    something else meanwhile. Each committed path's entry carries the file's stat data when
    that proves the file holds the committed bytes (index_entry.py), so git does not hash it
    again; otherwise it has none: git then compares content, and newer bytes show as an
    unstaged change, never as a staged one."""
    index = store.repo.index
    index.read(False)
    # For a commit of many paths (the first commit of a store) git's own refresh records the
    # stat data of them all in one run, instead of hashing each file here.
    bulk = len(entries) > BULK_PATHS and git_executable() is not None
    # One pass over the index instead of a lookup (and a KeyError) per path and question.
    indexed: dict[str, Entry] = {e.path: (e.id, int(e.mode)) for e in index} if bulk else {}
    root = str(store.root)
    fresh: dict[str, Entry] = {}
    for path, entry in entries.items():
        before = indexed.get(path) if bulk else index_entry(index, path)
        if before != tree_entry(parent_tree, path):
            continue  # staged by the user after all: theirs to keep
        if entry is None:
            if before is not None:
                index.remove(path)
            continue
        oid, mode = entry
        if bulk:
            if before != entry:
                index.add(pygit2.IndexEntry(path, oid, FileMode(mode)))
        elif add_committed(index, store.repo, root, path, oid, mode, (read_under or {}).get(path)):
            fresh[path] = entry
    index.write()
    if fresh:
        remember_fresh(store, fresh)
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
                 read: dict[str, Committable | None] | None = None) -> str | None:
    """Commit the working-tree bytes of ``paths`` on top of HEAD; None when that changes nothing.
    ``read``: files the caller already read (and checked) with ``read_committable``.

    Raises GitBusy when git is busy or the branch moved meanwhile (retry later), and
    CommitRefused when a path may not be committed or the user staged it.
    """
    repo, root = store.repo, store.root
    require_quiet(store)
    repair_pending_index(store)
    repair_stale_entries(store)
    wanted = sorted(set(paths))
    known = read or {}
    contents = {path: known[path] if path in known else read_committable(root, path) for path in wanted}
    staged = staged_by_user(store, wanted)
    if staged:
        raise CommitRefused(f"{root}: you have staged changes to {', '.join(staged)}; distilld leaves them to "
                            "your own commit and records its change once they are committed")
    head = head_commit(repo)
    entries: dict[str, Entry | None] = {}
    read_under: dict[str, os.stat_result] = {}
    for path in wanted:
        found = contents[path]
        if found is not None:
            oid = repo.create_blob(found.data)
            if found.info is not None:
                read_under[path] = found.info
            old = tree_entry(head.tree if head else None, path)
            mode = old[1] if old and old[1] in (FileMode.BLOB, FileMode.BLOB_EXECUTABLE) else int(FileMode.BLOB)
            entries[path] = (oid, mode)
        else:
            entries[path] = None
    tree = tree_with(repo, head.tree if head else None, entries)
    if head is not None and tree == head.tree.id:
        return None
    parents = [head.id] if head is not None else []
    # The order makes a kill anywhere recoverable: the commit object, then the record of the
    # index update it needs, then the branch, then the index. Killed before the branch moves,
    # the record names a commit HEAD does not reach and is dropped; killed after, the next
    # commit or start finishes the index from it (repair_pending_index).
    new = repo.create_commit(None, signature, signature, text, tree, parents)
    _write_pending(store, new, head.id if head else None, entries)
    crashpoint("commit-recorded")
    try:
        # "HEAD" + first parent: libgit2 refuses when the branch tip is no longer that parent.
        # The same object again, so the same id; only now does the branch move.
        moved = repo.create_commit("HEAD", signature, signature, text, tree, parents)
    except (pygit2.GitError, OSError) as error:
        _pending_path(store).unlink(missing_ok=True)
        raise GitBusy(f"{root}: the branch moved or is locked while committing ({error}); retrying later") from None
    assert moved == new, "a commit's id is a function of its content"
    crashpoint("branch-moved")
    try:
        _apply_to_index(store, entries, head.tree if head else None, read_under)
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
