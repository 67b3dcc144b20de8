"""Sync with the remote: fetch; fast-forward, or merge in memory; verify the bytes; push
whenever ahead, with exponential backoff and jitter after a failure (the remote:
gitstore/remote.py; taking its commits in: gitstore/integrate.py; the backoff state:
gitstore/sync_state.py).

Never force-pushes, never resets: the work tree changes only through a SAFE checkout, which
refuses to overwrite anything the user has not committed, and the branch moves only by
compare-and-swap. The store's .lock is the caller's: ``hold_lock`` is entered around every
step that writes the work tree or commits what agents wrote.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

import pygit2

from ..store.conflicts import has_conflict_markers
from ..store.paths import sync_class
from .agent_changes import commit_agent_changes, working_changes
from .auth import Credentials, apply_timeouts
from .commit import Identity, new_pass_id
from .errors import GitBusy, RemoteError
from .remote import PushRejected, ahead_behind, fetch, push, rewound_since, tracking_head
from .repo import MANAGED_FILES, StoreRepo, busy_reason, write_info_attributes
from .torn_checkout import finish_torn_files
from .sync_state import SyncState, backoff_seconds, load_state, save_state
from .trees import head_commit

if TYPE_CHECKING:
    from ..store.limits import Limits

# Taking the remote's commits in (integrate, the merge, the checks of what was pulled) is imported
# by the step that does it: a sync with nothing to take in does not pay for loading it.

PUSH_ROUNDS = 3  # a rejected push: fetch, integrate, push again, this many times at most


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
    rewound: str | None = None  # the remote's branch was force-pushed back since the last fetch

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
                 quiet_seconds: float, limits: Limits, wall: Callable[[], float], commit_agents: bool) -> None:
        self.store, self.clock, self.identity, self.hold_lock = store, clock, identity, hold_lock
        self.credentials, self.quiet_seconds, self.limits, self.wall = credentials, quiet_seconds, limits, wall
        self.commit_agents = commit_agents  # False: the user turned commits off; sync only what is committed
        self.report = SyncReport(str(store.root))
        self.mismatched: set[str] = set()  # the files whose bytes differ after a pull, over every round

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
                torn = finish_torn_files(self.store)  # before they could pass for an agent's edit
                report.notes += [f"{p}: finished, a killed checkout had written only its start" for p in torn]
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
                from .integrate import integrate

                # Whatever stays uncommitted (a user's staged edit, say) is not expected to match.
                dirty = list(self.store.repo.status(untracked_files="no"))
                now = self.clock()
                done = integrate(self.store, now, self.identity.signature(now), self.limits)
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
            from .verify import verify_archive, verify_pulled

            # A first checkout read every file back already: only the archive's checksums are left.
            mismatches = (done.verified + verify_archive(self.store) if done.kind == "first-checkout"
                          else verify_pulled(self.store, done.old, done.new, dirty))
            report.mismatches += [str(m) for m in mismatches]
            self.mismatched.update(m.path for m in mismatches)
            if mismatches:
                report.state = "mismatch"
                report.reason = f"{len(self.mismatched)} file(s) differ from what was pulled: BYTE-EXACTNESS FAILED"
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
            known = tracking_head(store)
            try:
                fetch(store, self.credentials)
            except RemoteError as error:
                self.locked_step(take_in=False)  # what agents wrote is committed, and queued
                return self.failed("offline", str(error))
            rewound = rewound_since(store, known)
            if rewound is not None:
                report.rewound = rewound
                report.notes.append(rewound)
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
               wall: Callable[[], float] = time.time, commit_agents: bool = True) -> SyncReport:
    """One sync: skipped while git is busy (or, when ``scheduled``, while backing off); a
    manual run ignores the backoff. ``hold_lock`` takes the store's .lock (raising GitBusy
    when a distiller holds it)."""
    write_info_attributes(store.repo)  # a repository set up by an older distilld has none yet
    run = _Run(store, clock, identity, hold_lock, credentials, quiet_seconds, limits, wall, commit_agents)
    return run.run(scheduled)
