"""Trees without an index: the commit HEAD names, an entry by path, and a tree with some paths
set or removed, built along the changed folders only (a commit costs what it changes, not what
the store holds)."""

from __future__ import annotations

import pygit2
from pygit2.enums import FileMode

Entry = tuple[pygit2.Oid, int]


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
