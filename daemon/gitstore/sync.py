"""Sync with the remote: fetch; fast-forward, or merge in memory; verify the bytes; push
whenever ahead, with exponential backoff and jitter after a failure.

Never force-pushes, never resets: the work tree changes only through a SAFE checkout, which
refuses to overwrite anything the user has not committed, and the branch moves only by
compare-and-swap. The store's .lock is the caller's: ``hold_lock`` is entered around every
step that writes the work tree or commits what agents wrote.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

import pygit2
from pygit2.enums import CheckoutNotify, CheckoutStrategy

from ..store.limits import Limits
from ..store.merge import Sides, has_conflict_markers
from ..store.paths import sync_class
from .auth import Credentials, StoreCallbacks, apply_timeouts
from .commit import Identity, commit_agent_changes, head_commit, new_pass_id, working_changes
from .errors import GitBusy, GitStoreError, RemoteError
from .merge import Flat, flatten, incoming_problems, merge_commits
from .repo import MANAGED_FILES, StoreRepo, busy_reason, write_state_file
from .verify import verify_pulled

STATE_FILE = "sync.json"
BACKOFF_BASE_SECONDS = 30.0
BACKOFF_CAP_SECONDS = 3600.0
PUSH_ROUNDS = 3  # a rejected push: fetch, integrate, push again, this many times at most


class PushRejected(RemoteError):
    """The remote refused the push (it moved on meanwhile); fetch, integrate, and retry."""


# -- machine-local sync state: failures and backoff --------------------------------------------

@dataclass
class SyncState:
    failures: int = 0
    retry_at: float = 0.0
    last_error: str | None = None
    last_success: float | None = None


def load_state(store: StoreRepo) -> SyncState:
    try:
        data = json.loads((store.state_dir / STATE_FILE).read_bytes())
        return SyncState(**{k: data[k] for k in asdict(SyncState()) if k in data})
    except (OSError, ValueError, TypeError):
        return SyncState()


def save_state(store: StoreRepo, state: SyncState) -> None:
    write_state_file(store.state_dir / STATE_FILE, json.dumps(asdict(state), indent=1).encode())


def backoff_seconds(failures: int, rng: Callable[[], float] = random.random,
                    base: float = BACKOFF_BASE_SECONDS, cap: float = BACKOFF_CAP_SECONDS) -> float:
    """Exponential in the number of failures, capped, with "equal jitter": half fixed, half random."""
    delay = min(cap, base * float(2 ** max(0, failures - 1)))
    return delay / 2 + rng() * delay / 2


# -- remote operations -----------------------------------------------------------------------------

def fetch(store: StoreRepo, credentials: Credentials | None = None) -> None:
    try:
        remote = store.repo.remotes[store.remote]
    except KeyError:
        raise GitStoreError(f"{store.root}: no remote {store.remote!r}; run `distilld init --remote URL`") from None
    refspec = f"+refs/heads/{store.branch}:{store.tracking_ref}"
    try:
        remote.fetch([refspec], callbacks=StoreCallbacks(credentials))
    except (pygit2.GitError, OSError) as error:
        raise RemoteError(f"fetch from {remote.url} failed: {error}") from None


def push(store: StoreRepo, credentials: Credentials | None = None) -> None:
    remote = store.repo.remotes[store.remote]
    callbacks = StoreCallbacks(credentials)
    spec = f"{store.branch_ref}:{store.branch_ref}"  # no leading '+': never a force-push
    try:
        remote.push([spec], callbacks=callbacks)
    except (pygit2.GitError, OSError) as error:
        text = str(error)
        rejected = ("not present locally", "fast-forward", "fastforward", "fetch first")
        if any(words in text for words in rejected):
            raise PushRejected(f"push to {remote.url} rejected: {text}") from None
        raise RemoteError(f"push to {remote.url} failed: {text}") from None
    if callbacks.rejected:
        raise PushRejected(f"push to {remote.url} rejected: {'; '.join(callbacks.rejected)}")


def tracking_head(store: StoreRepo) -> pygit2.Oid | None:
    ref = store.repo.references.get(store.tracking_ref)
    target = ref.resolve().target if ref is not None else None
    return target if isinstance(target, pygit2.Oid) else None


def ahead_behind(store: StoreRepo) -> tuple[int, int]:
    head = head_commit(store.repo)
    theirs = tracking_head(store)
    if head is None:
        return (0, 1 if theirs else 0)
    if theirs is None:
        return (sum(1 for _ in store.repo.walk(head.id)), 0)
    ahead, behind = store.repo.ahead_behind(head.id, theirs)
    return int(ahead), int(behind)


# -- integrating the remote's commits ---------------------------------------------------------------

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
    ref = repo.references.get(store.branch_ref)
    if old is None:
        if ref is not None:
            raise GitBusy(f"{store.root}: {store.branch} appeared while syncing; retrying later")
        repo.create_reference_direct(store.branch_ref, new, False, message=f"distilld: {why}")
        return
    if ref is None or ref.target != old.id:
        raise GitBusy(f"{store.root}: {store.branch} moved while syncing; the work tree holds the synced files, "
                      "retrying later")
    ref.set_target(new, f"distilld: {why}")


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
    staged = [entry.path for entry in store.repo.index]
    if staged:
        shown = ", ".join(staged[:10]) + (f" and {len(staged) - 10} more" if len(staged) > 10 else "")
        raise Blocked(f"files are staged in this repository before its first commit ({shown}); commit or "
                      "unstage them (`git reset`), then try again")
    present = [p for p in sorted(incoming) if os.path.lexists(store.root / p)]
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


@dataclass
class Integration:
    kind: Literal["up-to-date", "ahead", "no-remote-branch", "fast-forward", "first-checkout", "merged", "blocked"]
    reason: str | None = None
    old: pygit2.Tree | None = None
    new: pygit2.Tree | None = None
    commit: str | None = None
    inbox: list[str] = field(default_factory=list)
    resolutions: list[str] = field(default_factory=list)


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
            incoming = _changes(None, theirs.tree)
            problems = incoming_problems(repo, {}, incoming)
            if problems:
                return Integration("blocked", "; ".join(problems))
            strategy = _first_checkout_strategy(store, incoming)
            _checkout(store, None, theirs.id, f"first checkout of {label}", strategy)
            return Integration("first-checkout", old=None, new=theirs.tree, commit=str(theirs.id))
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
        if not merged.ok or merged.commit is None:
            reasons = list(merged.problems)
            if merged.store is not None:
                reasons += [f"[{f.group}] {f.message}" for f in merged.store.blocked_by]
            return Integration("blocked", "the merge would break the store, so nothing was committed: "
                               + "; ".join(reasons))
        _checkout(store, head, merged.commit, f"merge {label}")
        assert merged.store is not None
        new_tree = repo[merged.commit].peel(pygit2.Commit).tree
        return Integration("merged", old=head.tree, new=new_tree, commit=str(merged.commit),
                           inbox=merged.store.inbox, resolutions=merged.store.resolutions)
    except Blocked as blocked:
        return Integration("blocked", str(blocked))


# -- one sync run ------------------------------------------------------------------------------------

SyncOutcome = Literal["up-to-date", "synced", "skipped", "blocked", "offline", "push-failed", "mismatch"]
OK_OUTCOMES = ("up-to-date", "synced")


@dataclass
class SyncReport:
    store: str
    state: SyncOutcome = "up-to-date"
    reason: str | None = None
    commits: list[str] = field(default_factory=list)  # made here: agent changes, the merge
    integration: str | None = None  # what happened to the remote's commits
    pushed: bool = False
    ahead: int = 0
    behind: int = 0
    inbox: list[str] = field(default_factory=list)
    resolutions: list[str] = field(default_factory=list)
    mismatches: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    retry_at: str | None = None

    @property
    def ok(self) -> bool:
        return self.state in OK_OUTCOMES

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "ok": self.ok}


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class _Run:
    def __init__(self, store: StoreRepo, clock: Callable[[], datetime], identity: Identity,
                 hold_lock: Callable[[], AbstractContextManager[object]], credentials: Credentials | None,
                 quiet_seconds: float, limits: Limits, wall: Callable[[], float],
                 token: Callable[[], str] | None) -> None:
        self.store, self.clock, self.identity, self.hold_lock = store, clock, identity, hold_lock
        self.credentials, self.quiet_seconds, self.limits, self.wall = credentials, quiet_seconds, limits, wall
        self.token = token
        self.commit_agents = True  # False: the user turned commits off; sync only what is committed
        self.report = SyncReport(str(store.root))

    def incoming(self) -> bool:
        theirs = tracking_head(self.store)
        head = head_commit(self.store.repo)
        if theirs is None:
            return False
        return head is None or (theirs != head.id and not self.store.repo.descendant_of(head.id, theirs))

    def locked_step(self, take_in: bool = True) -> bool:
        """Commit agents' changes and (unless offline) take in the remote's commits, under the
        store's .lock. False when the sync must stop here (blocked)."""
        report = self.report
        if not (working_changes(self.store).paths or (take_in and self.incoming())):
            return True
        try:
            with self.hold_lock():
                now = self.clock()
                if self.commit_agents:
                    captured = commit_agent_changes(self.store, self.identity.signature(now), new_pass_id(now),
                                                    self.wall(), self.quiet_seconds)
                    if captured.commit:
                        report.commits.append(captured.commit)
                    report.notes += captured.notes + [f"{p}: not committed: {why}" for p, why in captured.skipped]
                    if captured.waiting:
                        report.notes.append(captured.waiting)
                if not take_in:
                    return True
                # Whatever stays uncommitted (a user's staged edit, say) is not expected to match.
                dirty = list(self.store.repo.status(untracked_files="no"))
                now = self.clock()
                done = integrate(self.store, now, self.identity.signature(now), self.limits, self.token)
        except GitBusy as busy:
            report.state, report.reason = "skipped", str(busy)
            return True  # still push what is already committed
        report.integration = done.kind
        if done.kind == "blocked":
            report.state, report.reason = "blocked", done.reason
            return False
        if done.kind == "merged" and done.commit:
            report.commits.append(done.commit)
        report.inbox += done.inbox
        report.resolutions += done.resolutions
        if done.new is not None:
            mismatches = verify_pulled(self.store, done.old, done.new, dirty)
            report.mismatches += [str(m) for m in mismatches]
            if mismatches:
                report.state = "mismatch"
                report.reason = f"{len(mismatches)} file(s) differ from what was pulled: BYTE-EXACTNESS FAILED"
        return True

    def failed(self, state: SyncOutcome, error: str) -> SyncReport:
        saved = load_state(self.store)
        saved.failures += 1
        saved.last_error = error
        saved.retry_at = self.wall() + backoff_seconds(saved.failures)
        save_state(self.store, saved)
        self.report.state, self.report.reason = state, error
        self.report.retry_at = _iso(saved.retry_at)
        self.report.ahead, self.report.behind = ahead_behind(self.store)
        if self.report.ahead:
            self.report.notes.append(f"{self.report.ahead} commit(s) wait locally and go with the next push")
        return self.report

    def run(self, scheduled: bool) -> SyncReport:
        report, store = self.report, self.store
        reason = busy_reason(store)
        if reason is not None:
            report.state, report.reason = "skipped", reason
            return report
        saved = load_state(store)
        if scheduled and saved.retry_at > self.wall():
            report.state = "skipped"
            report.reason = (f"backing off after {saved.failures} failure(s) until {_iso(saved.retry_at)} "
                             f"(last: {saved.last_error}); `distilld sync` retries now")
            report.retry_at = _iso(saved.retry_at)
            return report
        apply_timeouts()
        for _ in range(PUSH_ROUNDS):
            try:
                fetch(store, self.credentials)
            except RemoteError as error:
                self.locked_step(take_in=False)  # what agents wrote is committed, and queued
                return self.failed("offline", str(error))
            if not self.locked_step():
                report.ahead, report.behind = ahead_behind(store)
                return report
            report.ahead, report.behind = ahead_behind(store)
            if skipped_while_behind(report):
                return report
            if report.ahead == 0:
                break
            refusal = push_refusal(store)
            if refusal is not None:
                report.state, report.reason = "blocked", refusal
                return report
            try:
                push(store, self.credentials)
            except PushRejected as rejected:
                report.notes.append(f"{rejected}; fetching and trying again")
                continue
            except RemoteError as error:
                return self.failed("push-failed", str(error))
            report.pushed = True
            report.ahead, report.behind = ahead_behind(store)
            break
        else:
            return self.failed("push-failed", f"the push was rejected {PUSH_ROUNDS} times in a row")
        if report.state == "up-to-date" and (report.pushed or report.commits or report.integration not in
                                               (None, "up-to-date", "ahead", "no-remote-branch")):
            report.state = "synced"
        save_state(store, SyncState(last_success=self.wall()))
        return report


def _unsafe_path(path: str, mode: int) -> str | None:
    if mode == pygit2.GIT_FILEMODE_LINK:
        return "a symlink"
    if sync_class(path) == "local" and path not in MANAGED_FILES:
        return "a machine-local path (dotfiles, data/, local/, bin/ never leave this machine)"
    if "\\" in path or ":" in path or path.startswith(("/", "~")):
        return "a path that is not contained in the store (D10)"
    return None


def push_refusal(store: StoreRepo) -> str | None:
    """What is about to be pushed, whoever committed it (the user by hand included): a file left
    with conflict markers, a machine-local path, a symlink or an uncontained path would stop
    every other machine. The commit and the file are named, with how to fix it."""
    repo = store.repo
    head = head_commit(repo)
    if head is None:
        return None
    walker = repo.walk(head.id, pygit2.enums.SortMode.TOPOLOGICAL)
    theirs = tracking_head(store)
    if theirs is not None:
        walker.hide(theirs)
    newest_change: dict[str, pygit2.Commit] = {}
    for commit in walker:  # newest first: the first commit seen for a path is its newest change
        parent = commit.parents[0].tree if commit.parents else None
        diff = parent.diff_to_tree(commit.tree) if parent is not None else commit.tree.diff_to_tree(swap=True)
        for delta in diff.deltas:
            if delta.status != pygit2.enums.DeltaStatus.DELETED:
                newest_change.setdefault(delta.new_file.path, commit)
    fix = (f"fix it in {store.root}, commit the fix (`git -C {store.root} commit`), then sync again; "
           "distilld never rewrites your commits")
    for path, commit in sorted(newest_change.items()):
        try:
            entry = head.tree[path]
        except KeyError:
            continue  # removed again by a later commit
        where = f"commit {str(commit.id)[:7]} ({commit.message.splitlines()[0] if commit.message else ''})"
        why = _unsafe_path(path, entry.filemode)
        if why is not None:
            return f"not pushed: {where} adds {path}, {why}; {fix}"
        if path.endswith(".md") and has_conflict_markers(repo[entry.id].read_raw()):
            return f"not pushed: {where} leaves conflict markers in {path}; {fix}"
    return None


def skipped_while_behind(report: SyncReport) -> bool:
    """The lock was held (the remote's commits could not be taken in) and the remote is ahead
    of us: a push could only be rejected. That is a skip, said as one, with no backoff."""
    if report.state != "skipped" or not report.behind:
        return False
    report.notes.append(f"not pushed: {report.behind} commit(s) on the remote must be taken in first, "
                        "once the lock is released")
    return True


def sync_store(store: StoreRepo, clock: Callable[[], datetime], identity: Identity,
               hold_lock: Callable[[], AbstractContextManager[object]], limits: Limits,
               credentials: Credentials | None = None, scheduled: bool = False, quiet_seconds: float = 0.0,
               wall: Callable[[], float] = time.time, token: Callable[[], str] | None = None,
               commit_agents: bool = True) -> SyncReport:
    """One sync: skipped while git is busy (or, when ``scheduled``, while backing off); a
    manual run ignores the backoff. ``hold_lock`` takes the store's .lock (raising GitBusy
    when a distiller holds it)."""
    run = _Run(store, clock, identity, hold_lock, credentials, quiet_seconds, limits, wall, token)
    run.commit_agents = commit_agents
    return run.run(scheduled)
