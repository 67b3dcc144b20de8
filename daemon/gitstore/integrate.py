"""Taking in the fetched remote branch: nothing, a fast-forward, a first checkout, or an
in-memory merge (gitstore/merge.py). The work tree changes only through a SAFE checkout, which
refuses to overwrite anything the user has not committed, and the branch moves only by
compare-and-swap."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

import pygit2
from pygit2.enums import CheckoutNotify, CheckoutStrategy

from ..store.limits import Limits
from ..store.merge import Sides
from .cli_join import marker_candidates, read_tree_with_cli
from .commit import new_pass_id
from .errors import GitBusy
from .merge import Flat, flatten, incoming_problems, merge_commits
from .remote import tracking_head
from .repo import StoreRepo
from .torn_checkout import checkout_done, checkout_starting
from .trees import head_commit
from .verify import Mismatch, verify_paths


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
    if old is not None:
        checkout_starting(store, old.id, new)  # a kill from here on: the next sync finishes torn files
    try:
        repo.checkout_tree(  # type: ignore[no-untyped-call]
            repo[new], strategy=strategy | CheckoutStrategy.DONT_OVERWRITE_IGNORED, callbacks=conflicts)
    except pygit2.GitError as error:
        if not conflicts.paths:
            # Not a conflict (found before anything is written) but a failure while writing (a
            # full disk, say): the note stays, so the next sync finishes what was half-written.
            raise Blocked(f"the checkout of the incoming changes failed while writing the files ({error}); "
                          "the next sync finishes it") from None
        checkout_done(store)
        where = ", ".join(sorted(set(conflicts.paths)))
        raise Blocked(f"incoming changes would overwrite uncommitted edits ({where}); commit or move those "
                      "edits, and the next sync takes the changes in") from None
    try:
        if old is None:
            _create_branch(store, new, why)
            return
        ref = repo.references.get(store.branch_ref)
        if ref is None or ref.target != old.id:
            raise GitBusy(f"{store.root}: {store.branch} moved while syncing; the work tree holds the synced "
                          "files, retrying later")
        ref.set_target(new, f"distilld: {why}")
    finally:
        checkout_done(store)  # every file is written: what the branch says is the next sync's to see


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


def _first_checkout(store: StoreRepo, theirs: pygit2.Commit, label: str) -> Integration:
    """A joining machine's first checkout. The commit's blobs are searched for conflict markers
    (and its paths checked) before anything is written, so a kill at any point never leaves a
    marked file in the folder; git writes the files when it can, and what was written is read
    back once to verify its bytes."""
    incoming = _changes(None, theirs.tree)
    problems = incoming_problems(store.repo, {}, incoming, marker_candidates(store, theirs.id))
    if problems:
        raise Blocked("; ".join(problems))
    strategy = _first_checkout_strategy(store, incoming)
    why = f"first checkout of {label}"
    notes: list[str] = []
    # git is faster at writing a whole store; FORCE (a copy already here) stays libgit2's,
    # which alone can keep ignored files while overwriting identical tracked ones.
    written_by_git = False
    if strategy == CheckoutStrategy.SAFE:
        why_not = read_tree_with_cli(store, theirs.id)
        written_by_git = why_not is None
        if why_not is not None:
            notes.append(f"the first checkout: {why_not}; libgit2 checked out the store instead")
    if written_by_git:
        _create_branch(store, theirs.id, why)
    else:
        _checkout(store, None, theirs.id, why, strategy)
    verified = verify_paths(store, theirs.tree, sorted(incoming), incoming)
    return Integration("first-checkout", new=theirs.tree, commit=str(theirs.id), notes=notes, verified=verified)


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
