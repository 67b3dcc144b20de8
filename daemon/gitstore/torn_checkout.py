"""Files a killed checkout left half-written, finished at the next sync.

libgit2 (and git) write a checked-out file in place: a SIGKILL while one is written leaves its
first part, with the branch not yet moved. The next sync would commit that part as an agent's
edit, and the merge would drop every line after the tear (a SPINE cut a third of the way down
loses the rest of its entries, on every machine). So each checkout is noted before it starts
(the commits it moves between) and the note is removed once the branch has moved; a note
still there at the next sync means the checkout never finished. A file of it that holds the
start, and only the start, of the version being checked out is given the rest. Any other
bytes (an agent's edit, the old version) are left as they are, for the usual rules.
"""

from __future__ import annotations

from pathlib import Path

import pygit2

from ..store import fs
from .repo import StoreRepo
from .trees import head_commit

NOTE = "distilld-checkout"


def _note(store: StoreRepo) -> Path:
    return Path(store.repo.path) / NOTE


def checkout_starting(store: StoreRepo, old: pygit2.Oid, new: pygit2.Oid) -> None:
    fs.atomic_write(_note(store), f"{old} {new}\n".encode())


def checkout_done(store: StoreRepo) -> None:
    _note(store).unlink(missing_ok=True)


def finish_torn_files(store: StoreRepo) -> list[str]:
    """The files of an interrupted checkout completed to the version it was writing."""
    note = _note(store)
    try:
        old_hex, new_hex = note.read_text().split()
    except (OSError, ValueError):
        note.unlink(missing_ok=True)
        return []
    repo = store.repo
    head = head_commit(repo)
    finished: list[str] = []
    if head is not None and str(head.id) == old_hex and pygit2.Oid(hex=new_hex) in repo:
        new = repo[pygit2.Oid(hex=new_hex)].peel(pygit2.Commit)
        for delta in head.tree.diff_to_tree(new.tree).deltas:
            path = delta.new_file.path
            if delta.new_file.id == pygit2.Oid(hex="0" * 40):
                continue  # removed by the checkout: nothing to finish
            full = store.root / path
            if full.is_symlink() or not full.is_file():
                continue
            have, want = full.read_bytes(), repo[delta.new_file.id].peel(pygit2.Blob).data
            if len(have) < len(want) and want.startswith(have) and have != _old_bytes(head, path):
                fs.atomic_write(full, want)
                finished.append(path)
    note.unlink(missing_ok=True)
    return finished


def _old_bytes(commit: pygit2.Commit, path: str) -> bytes | None:
    try:
        return commit.tree[path].peel(pygit2.Blob).data
    except KeyError:
        return None
