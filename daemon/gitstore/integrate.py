"""Taking in the fetched remote branch: nothing, a fast-forward, a first checkout, or an
in-memory merge (gitstore/merge.py). The work tree changes only through a SAFE checkout, which
refuses to overwrite anything the user has not committed, and the branch moves only by
compare-and-swap."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

import pygit2
from pygit2.enums import CheckoutNotify, CheckoutStrategy

from ..errors import UnsafeStore
from ..store import fs
from ..store.limits import Limits
from ..store.merge import Sides
from .cli_join import marker_candidates, read_tree_with_cli
from .commit import new_pass_id
from .errors import GitBusy
from .merge import Flat, flatten, incoming_problems, marker_problem, merge_commits
from .remote import tracking_head
from .repo import StoreRepo, write_state_file
from .trees import head_commit
from .verify import Mismatch, verify_checkout


class _Conflicts(pygit2.CheckoutCallbacks):
    def __init__(self) -> None:
        super().__init__()
        self.paths: list[str] = []

    def checkout_notify_flags(self) -> CheckoutNotify:
        return CheckoutNotify.CONFLICT

    def checkout_notify(self, why: CheckoutNotify, path: str, baseline: Any, target: Any, workdir: Any) -> None:
        self.paths.append(path)


class Blocked(Exception):
    """The remote's commits cannot be taken in now; the message says why."""


def _checkout(store: StoreRepo, old: pygit2.Commit | None, new: pygit2.Oid, why: str,
              strategy: CheckoutStrategy = CheckoutStrategy.SAFE) -> None:
    """SAFE checkout of ``new``, then move the branch from ``old`` (compare-and-swap)."""
    repo = store.repo
    conflicts = _Conflicts()
    try:
        repo.checkout_tree(  # type: ignore[no-untyped-call]
            repo[new], strategy=strategy | CheckoutStrategy.DONT_OVERWRITE_IGNORED, callbacks=conflicts)
    except pygit2.GitError as error:
        where = ", ".join(sorted(set(conflicts.paths))) or str(error)
        raise Blocked(f"incoming changes would overwrite uncommitted edits ({where}); commit or move those "
                      "edits, and the next sync takes the changes in") from None
    if old is None:
        _create_branch(store, new, why)
        return
    ref = repo.references.get(store.branch_ref)
    if ref is None or ref.target != old.id:
        raise GitBusy(f"{store.root}: {store.branch} moved while syncing; the work tree holds the synced files, "
                      "retrying later")
    ref.set_target(new, f"distilld: {why}")


def _create_branch(store: StoreRepo, new: pygit2.Oid, why: str) -> None:
    """The branch of a first checkout, made only if it still does not exist."""
    repo = store.repo
    appeared = GitBusy(f"{store.root}: {store.branch} appeared while syncing; retrying later")
    if repo.references.get(store.branch_ref) is not None:
        raise appeared
    try:  # not forced: a branch made since the check above is the user's, and kept
        repo.create_reference_direct(store.branch_ref, new, False, message=f"distilld: {why}")
    except pygit2.AlreadyExistsError:
        raise appeared from None


def _changes(old: pygit2.Tree | None, new: pygit2.Tree) -> Flat:
    """What a move from ``old`` to ``new`` brings, as (path -> entry) of the new side."""
    if old is None:
        return flatten(new)
    out: Flat = {}
    for delta in old.diff_to_tree(new).deltas:
        if delta.new_file.id != pygit2.Oid(hex="0" * 40):
            out[delta.new_file.path] = (delta.new_file.id, int(delta.new_file.mode))
    return out


def _first_checkout_strategy(store: StoreRepo, incoming: Flat) -> CheckoutStrategy:
    """A machine joining may already hold a copy of the store. Files byte-identical to the
    remote's may be overwritten (nothing changes); any that differ stop the checkout, named."""
    # FORCE would also drop whatever the user staged that the remote does not have: with
    # anything in the index of an unborn branch, stop and say so instead.
    index = store.repo.index
    index.read(False)
    staged = [entry.path for entry in index]
    # An index that is exactly the incoming tree is a first checkout killed before the branch
    # was created (git's read-tree wrote it): finished below, as a copy already here.
    killed_checkout = {entry.path: (entry.id, int(entry.mode)) for entry in index} == incoming
    if staged and not killed_checkout:
        shown = ", ".join(staged[:10]) + (f" and {len(staged) - 10} more" if len(staged) > 10 else "")
        raise Blocked(f"files are staged in this repository before its first commit ({shown}); commit or "
                      "unstage them (`git reset`), then try again")
    root = str(store.root)
    here = set(os.listdir(root))  # a path under a name the folder lacks cannot be there: no lstat for it
    present = [p for p in sorted(incoming) if p.partition("/")[0] in here and os.path.lexists(os.path.join(root, p))]
    differing = []
    for path in present:
        full = store.root / path
        if full.is_symlink() or not full.is_file() or pygit2.hash(full.read_bytes()) != incoming[path][0]:
            differing.append(path)
    if differing:
        shown = ", ".join(differing[:10]) + (f" and {len(differing) - 10} more" if len(differing) > 10 else "")
        raise Blocked(f"the store already holds files that differ from the remote's ({shown}); move them "
                      "aside (or keep what matters as inbox items), then try again")
    return CheckoutStrategy.FORCE if present else CheckoutStrategy.SAFE


def _folders(files: Flat) -> set[str]:
    """Every folder holding a file of ``files``, by its path."""
    found: set[str] = set()
    for path in files:
        folder = path.rpartition("/")[0]
        while folder and folder not in found:
            found.add(folder)
            folder = folder.rpartition("/")[0]
    return found


@dataclass(frozen=True)
class _BeforeCheckout:
    """What a folder held before git's first checkout, to take the checkout back: which of the
    commit's folders were there already, and the index file's bytes (None: there was none)."""

    folders: frozenset[str]
    index: bytes | None

    @classmethod
    def of(cls, store: StoreRepo, files: Flat) -> _BeforeCheckout:
        there = frozenset(f for f in _folders(files) if (store.root / f).is_dir())
        try:
            index = (Path(store.repo.path) / "index").read_bytes()
        except FileNotFoundError:
            index = None
        return cls(there, index)


def _undo_checkout(store: StoreRepo, files: Flat, before: _BeforeCheckout, keep: set[str]) -> list[str]:
    """Take back a first checkout that git wrote into a folder holding none of ``files`` (its
    read-tree refuses to overwrite one): the files, except ``keep`` (changed since git wrote
    them: no longer only ours), the folders it made, and the index. Returns what is left."""
    left = sorted(keep)
    for path in sorted(files.keys() - keep):
        try:
            fs.remove(store.root / path, durable=False)
        except FileNotFoundError:
            continue
        except (OSError, UnsafeStore):
            left.append(path)
    for folder in sorted(_folders(files) - before.folders, key=lambda f: f.count("/"), reverse=True):
        full = store.root / folder
        if not fs.remove_empty_folder(full) and full.is_dir() and not any(p.startswith(folder + "/") for p in left):
            left.append(folder + "/")  # something new in it: not ours to remove
    index = Path(store.repo.path) / "index"
    if before.index is None:
        index.unlink(missing_ok=True)
    else:
        write_state_file(index, before.index)
    return left


def _refuse_marked(store: StoreRepo, commit: pygit2.Oid, incoming: Flat) -> None:
    """Before libgit2 writes a file: the commit's blobs searched for conflict markers."""
    problems = incoming_problems(store.repo, {}, incoming, marker_candidates(store, commit))
    if problems:
        raise Blocked("; ".join(problems))


def _first_checkout(store: StoreRepo, theirs: pygit2.Commit, label: str) -> Integration:
    """A joining machine's first checkout. git writes it when it can, and what it wrote is read
    back once, both to verify the bytes and to search them for conflict markers (searching the
    blobs first would decompress the whole history a second time); a file holding markers takes
    the checkout back, leaving the folder as it was. libgit2's checkout is searched first."""
    incoming = _changes(None, theirs.tree)
    # The problems found without reading a blob (all but the markers): when there are any, the
    # blobs are searched too, so that the refusal names every problem, as it always did.
    if incoming_problems(store.repo, {}, incoming, set()):
        _refuse_marked(store, theirs.id, incoming)
    try:
        strategy = _first_checkout_strategy(store, incoming)
    except Blocked:
        _refuse_marked(store, theirs.id, incoming)  # markers are named before files in the way
        raise
    why = f"first checkout of {label}"
    notes: list[str] = []
    # git is faster at writing a whole store; FORCE (a copy already here) stays libgit2's,
    # which alone can keep ignored files while overwriting identical tracked ones.
    if strategy == CheckoutStrategy.SAFE:
        before = _BeforeCheckout.of(store, incoming)
        why_not = read_tree_with_cli(store, theirs.id)
        if why_not is None:
            checked = verify_checkout(store, incoming, find_markers=True)
            if checked.marked:
                changed = {m.path for m in checked.mismatches if os.path.lexists(store.root / m.path)}
                left = _undo_checkout(store, incoming, before, changed)
                kept = (f"; taking the checkout back left {', '.join(left[:10])} (changed while it ran): "
                        "look at them before joining again") if left else ""
                raise Blocked("; ".join(marker_problem(p) for p in checked.marked) + kept)
            _create_branch(store, theirs.id, why)
            return Integration("first-checkout", new=theirs.tree, commit=str(theirs.id),
                               verified=checked.mismatches)
        notes.append(f"the first checkout: {why_not}; libgit2 checked out the store instead")
    _refuse_marked(store, theirs.id, incoming)
    _checkout(store, None, theirs.id, why, strategy)
    checked = verify_checkout(store, incoming, find_markers=False)
    return Integration("first-checkout", new=theirs.tree, commit=str(theirs.id), notes=notes,
                       verified=checked.mismatches)


@dataclass
class Integration:
    kind: Literal["up-to-date", "ahead", "no-remote-branch", "fast-forward", "first-checkout", "merged", "blocked"]
    reason: str | None = None
    old: pygit2.Tree | None = None
    new: pygit2.Tree | None = None
    commit: str | None = None
    inbox: list[str] = field(default_factory=list)
    resolutions: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # e.g. why git's command line did not check out
    verified: list[Mismatch] = field(default_factory=list)  # a first checkout's files, read back


def integrate(store: StoreRepo, now: datetime, signature: pygit2.Signature, limits: Limits,
              token: Callable[[], str] | None = None) -> Integration:
    """Take in the fetched remote branch: nothing, a fast-forward, or an in-memory merge."""
    repo = store.repo
    theirs_id = tracking_head(store)
    head = head_commit(repo)
    if theirs_id is None:
        return Integration("no-remote-branch" if head is None else "ahead")
    theirs = repo[theirs_id].peel(pygit2.Commit)
    label = f"{store.remote}/{store.branch}"
    try:
        if head is None:
            return _first_checkout(store, theirs, label)
        if head.id == theirs.id:
            return Integration("up-to-date")
        if repo.descendant_of(head.id, theirs.id):
            return Integration("ahead")
        if repo.descendant_of(theirs.id, head.id):
            problems = incoming_problems(repo, {}, _changes(head.tree, theirs.tree))
            if problems:
                return Integration("blocked", "; ".join(problems))
            _checkout(store, head, theirs.id, f"fast-forward to {label}")
            return Integration("fast-forward", old=head.tree, new=theirs.tree, commit=str(theirs.id))
        base_id = repo.merge_base(head.id, theirs.id)
        if base_id is None:
            return Integration("blocked", f"{label} shares no history with {store.branch}: it holds another store. "
                                          "distilld will not merge two stores; clone the remote into an empty folder "
                                          "instead")
        base = repo[base_id].peel(pygit2.Commit)
        sides = Sides(local=f"local {store.branch} {str(head.id)[:12]}", remote=f"{label} {str(theirs.id)[:12]}")
        merged = merge_commits(repo, head, theirs, base, now, signature, new_pass_id(now), limits, sides, label, token)
        if merged.commit is None:  # made only when the merge is ok
            # Problems of the trees stop the merge before the store merge runs, so never both.
            reasons = merged.problems if merged.store is None else [
                f"[{f.group}] {f.message}" for f in merged.store.blocked_by]
            return Integration("blocked", "the merge would break the store, so nothing was committed: "
                               + "; ".join(reasons))
        _checkout(store, head, merged.commit, f"merge {label}")
        assert merged.store is not None
        new_tree = repo[merged.commit].peel(pygit2.Commit).tree
        return Integration("merged", old=head.tree, new=new_tree, commit=str(merged.commit),
                           inbox=merged.store.inbox, resolutions=merged.store.resolutions)
    except Blocked as blocked:
        return Integration("blocked", str(blocked))
