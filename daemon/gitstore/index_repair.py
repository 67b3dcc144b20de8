"""Index entries a killed distilld left behind: the real index still names what a path held
before one of distilld's own commits, so git shows that commit's change as staged the other
way round, and a plain `git commit` by the user would take it back out of HEAD.

Such an entry is told from one the user staged by history, not by guess: walking HEAD's first
parents, the last commit that changed the path is distilld's (it carries the
``Distilld-Operation`` trailer) and the index names exactly what the path held before it. The
work tree must not hold those bytes either: a user who checked an old version out on purpose
(`git checkout HEAD~1 -- path`) has it in both, and keeps it. Everything else the index holds
that differs from HEAD is the user's, and is left as it is.
"""

from __future__ import annotations

import os

import pygit2
from pygit2.enums import DeltaStatus

from .index_entry import add_committed
from .repo import StoreRepo
from .trees import Entry, head_commit, tree_entry

HISTORY_DEPTH = 64  # commits looked back along the first parents; a crash is found at the next start
TRAILER = "\nDistilld-Operation: "


def _index_side(delta: pygit2.DiffDelta) -> Entry | None:
    # diff_to_tree compares the tree (old side) with the index (new side).
    if delta.status == DeltaStatus.DELETED:
        return None
    return (delta.new_file.id, int(delta.new_file.mode))


def _differing(store: StoreRepo, tree: pygit2.Tree) -> dict[str, Entry | None]:
    """The index's entry (None: absent) for each path where it differs from ``tree``."""
    index = store.repo.index
    index.read(False)
    found: dict[str, Entry | None] = {}
    for delta in index.diff_to_tree(tree).deltas:
        path = delta.new_file.path if delta.status != DeltaStatus.DELETED else delta.old_file.path
        found[path] = _index_side(delta)
    return found


def _older_distilld_states(repo: pygit2.Repository, head: pygit2.Commit,
                           differing: dict[str, Entry | None]) -> set[str]:
    """The paths whose index entry is what the path held before distilld's last commit of it."""
    undecided = dict(differing)
    stale: set[str] = set()
    commit = head
    for _ in range(HISTORY_DEPTH):
        if not undecided or not commit.parents:
            break
        parent = commit.parents[0]
        ours = TRAILER in f"\n{commit.message}"
        for path in list(undecided):
            before, after = tree_entry(parent.tree, path), tree_entry(commit.tree, path)
            if before == after:
                continue  # this commit did not change the path: look further back
            if ours and before == undecided[path]:
                stale.add(path)
            del undecided[path]  # the last change of the path decides
        commit = parent
    return stale


def _work_tree_holds(root: str, path: str, entry: Entry | None) -> bool:
    """Does the file on disk hold exactly ``entry``'s bytes (or is it absent where the entry is)?"""
    full = os.path.join(root, path)
    if entry is None:
        return not os.path.lexists(full)
    try:
        return pygit2.hashfile(full) == entry[0]
    except (OSError, pygit2.GitError):
        return False


def repair_stale_entries(store: StoreRepo) -> list[str]:
    """Bring the index back to HEAD for the paths where it still names an older distilld state;
    the paths repaired (the caller checked that git is quiet: no index.lock)."""
    repo = store.repo
    head = head_commit(repo)
    if head is None:
        return []
    differing = _differing(store, head.tree)
    if not differing:
        return []
    root = str(store.root)
    stale = [p for p in sorted(_older_distilld_states(repo, head, differing))
             if not _work_tree_holds(root, p, differing[p])]
    if not stale:
        return []
    index = repo.index
    for path in stale:
        wanted = tree_entry(head.tree, path)
        if wanted is None:
            index.remove(path)
        else:
            add_committed(index, repo, root, path, wanted[0], wanted[1])
    index.write()
    return stale
