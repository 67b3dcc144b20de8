"""`distilld init` and `distilld sync`, and one commit per maintenance operation.

Orchestration over gitstore: the store's .lock is held whenever the work tree is written (a
pull) or agents' changes are read for a commit, and is never waited for: a running
distillation means "skipped, retry later".
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..gitstore.commit import CommitResult, Identity
from ..gitstore.errors import GitStoreError
from ..gitstore.repo import InitReport, open_store
from ..gitstore.sync import SyncReport, sync_store

if TYPE_CHECKING:
    from ..gitstore.auth import Credentials
    from ..gitstore.repo import StoreRepo
    from ..policy import Policy

# What only some runs need is imported where it is used: a sync with nothing to do takes no lock
# and finishes no pass, and each module it leaves alone (the lock, its guards and log, recovery,
# the merge) is CPU that a one-shot `distilld sync` would pay for nothing.

DEFAULT_IDENTITY = Identity()


def lock_holder(root: Path, policy: Policy, owner: str | None = None) -> Callable[[], AbstractContextManager[object]]:
    """Take the store's .lock without waiting; a held lock becomes GitBusy (skip, retry later).
    The lock's modules load when it is first taken: a sync with nothing to do never takes it."""

    @contextmanager
    def hold() -> Iterator[object]:
        from ..engine.guard import guarded_pass
        from ..engine.lock import AcquireKind, StoreLock, default_owner
        from ..errors import LockHeld, LockLost
        from ..gitstore.errors import GitBusy

        lock = StoreLock.from_policy(root, owner or default_owner(), policy.lock)
        try:
            taken = lock.acquire(0)
        except LockHeld as held:
            who = f"by {held.owner} for {held.age} s" if held.owner else "contended"
            raise GitBusy(f"{root}/.lock is held ({who}): a distillation is running; its changes are "
                          "committed and synced once it has finished") from None
        try:
            with guarded_pass(Path(root).resolve()):  # no checkout through a link, no shrunken ledger
                if taken.kind is not AcquireKind.ALREADY_HELD:
                    # With the lock ours, a ledger line without its line break is an append that
                    # never finished: taken back as every pass does, before it could be committed
                    # and pushed as a whole (malformed) line to every machine.
                    from .passes import take_back_torn_ledger

                    take_back_torn_ledger(Path(root))
                yield lock
        finally:
            if taken.kind is not AcquireKind.ALREADY_HELD:  # else an outer pass holds it and releases it
                try:
                    lock.release()
                except LockLost:
                    pass

    return hold


# -- init --------------------------------------------------------------------------------------

@dataclass
class InitOutcome:
    report: InitReport
    checked_out: str | None = None
    commit: CommitResult | None = None
    mismatches: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        report = {**asdict(self.report), "root": str(self.report.root)}
        return {
            "report": report,
            "checked_out": self.checked_out,
            "commit": asdict(self.commit) if self.commit else None,
            "mismatches": self.mismatches,
        }


def absolute_remote(url: str | None) -> str | None:
    """A remote given as a relative path, made absolute, as `git clone` records it: kept as given,
    git (run in the store) and the daemon (run from anywhere) would each read it elsewhere."""
    from ..gitstore.cli_join import transport

    if url is None or transport(url) != "local" or url.lower().startswith("file://") or Path(url).is_absolute():
        return url
    return str(Path(url).expanduser().absolute())


def run_init(store: Path, policy: Policy, clock: Callable[[], datetime], remote_url: str | None = None,
             branch: str | None = None, identity: Identity = DEFAULT_IDENTITY,
             credentials: Credentials | None = None, pack: bool = True) -> InitOutcome:
    """Adopt or create the store's repository. With a remote and no commit yet, the remote's
    branch is checked out first (a second machine joining); then whatever is shared and not yet
    committed (the attribute and ignore files included) becomes the first commit."""
    from ..engine.guard import set_aside_seen_ledger, settle_set_aside_ledger
    from ..gitstore.agent_changes import commit_agent_changes
    from ..gitstore.auth import apply_timeouts
    from ..gitstore.commit import new_pass_id
    from ..gitstore.errors import GitBusy, RemoteError
    from ..gitstore.integrate import integrate
    from ..gitstore.join_branch import choose_join_branch
    from ..gitstore.maintenance import pack_objects
    from ..gitstore.remote import fetch, tracking_head
    from ..gitstore.repo import busy_reason, init_store, write_managed_files
    from ..gitstore.trees import head_commit
    from ..gitstore.verify import verify_archive

    repo_store, report = init_store(store, branch, absolute_remote(remote_url))
    outcome = InitOutcome(report)
    hold = lock_holder(repo_store.root, policy)
    if repo_store.has_remote() and head_commit(repo_store.repo) is None:
        apply_timeouts()
        try:
            why_not = fetch(repo_store, credentials, with_cli=True)
            # Only a remote without our branch is asked which ones it has (no extra round trip otherwise).
            if tracking_head(repo_store) is None and choose_join_branch(repo_store, report, credentials,
                                                                        explicit=branch is not None):
                why_not = fetch(repo_store, credentials, with_cli=True)
            if why_not is not None:
                report.notes.append(f"the fetch: {why_not}; libgit2 fetched the store instead")
        except RemoteError as error:
            report.notes.append(f"{error}; `distilld sync` tries again")
        else:
            busy = busy_reason(repo_store)  # a git killed mid-checkout leaves index.lock: say so, not "edits"
            if busy is not None:
                raise GitBusy(f"{repo_store.root}: cannot check out {repo_store.remote}/{repo_store.branch} now: {busy}")
            aside = set_aside_seen_ledger(repo_store.root, clock().strftime("%Y%m%dT%H%M%SZ"))
            try:
                with hold():
                    now = clock()
                    done = integrate(repo_store, now, identity.signature(now), policy.limits)
            finally:
                kept = settle_set_aside_ledger(repo_store.root, aside) if aside is not None else None
                report.notes += [kept] if kept else []
            report.notes += done.notes
            if done.kind == "blocked":
                raise GitStoreError(f"{repo_store.root}: cannot check out {repo_store.remote}/{repo_store.branch}: "
                                    f"{done.reason}")
            if done.kind == "first-checkout" and done.new is not None:
                outcome.checked_out = done.commit
                # Every file was read back right after the checkout; the archive's checksums are left.
                outcome.mismatches = [str(m) for m in done.verified + verify_archive(repo_store)]
    report.wrote = write_managed_files(repo_store.root)
    with hold():
        now = clock()
        outcome.commit = commit_agent_changes(repo_store, identity.signature(now), new_pass_id(now), time.time(),
                                              operation="adopt", subject="distilld: adopt the store")
    if pack and outcome.commit.commit:
        # A first commit of a big store is all loose objects: packed in the background, as git does.
        trouble = pack_objects(repo_store.root, background=True)
        if trouble:
            report.notes.append(trouble)
    return outcome


def render_init_text(outcome: InitOutcome) -> str:
    report = outcome.report
    how = "created a repository" if report.created else "adopted the repository"
    out = [f"{report.root}: {how} on branch {report.branch}"]
    out.append(f"remote: {report.remote_url}" if report.remote_url else
               "remote: none (pass --remote URL to sync with one)")
    out += [f"wrote {name}" for name in report.wrote]
    if outcome.checked_out:
        out.append(f"checked out {outcome.checked_out[:12]} from the remote")
    out += [f"BYTE MISMATCH: {m}" for m in outcome.mismatches]
    commit = outcome.commit
    if commit and commit.commit:
        out.append(f"committed {commit.commit[:12]}: {len(commit.paths)} file(s)")
    if commit:
        out += [f"not committed: {why}" for _, why in commit.skipped]
        out += [f"note: {n}" for n in commit.notes]
    out += [f"note: {n}" for n in report.notes]
    return "\n".join(out) + "\n"


def render_init_json(outcome: InitOutcome) -> str:
    return json.dumps(outcome.to_dict(), indent=2, ensure_ascii=False, default=str) + "\n"


# -- sync --------------------------------------------------------------------------------------

def run_sync(store: Path, policy: Policy, clock: Callable[[], datetime], identity: Identity = DEFAULT_IDENTITY,
             credentials: Credentials | None = None, remote: str | None = None, scheduled: bool = False,
             quiet_seconds: float = 0.0, commit_agents: bool = True) -> SyncReport:
    """One sync. A manual run (``scheduled=False``) ignores the backoff. ``commit_agents=False``
    (the setting git.commit = false) syncs what is committed and leaves agents' edits alone."""
    repo_store = open_store(store)
    if remote is not None:
        if remote not in repo_store.repo.remotes.names():
            raise GitStoreError(f"{repo_store.root}: no remote named {remote!r}; "
                                f"`git -C {repo_store.root} remote -v` lists them")
        repo_store.remote = remote
    return sync_store(repo_store, clock, identity, lock_holder(repo_store.root, policy), policy.limits, credentials,
                      scheduled=scheduled, quiet_seconds=quiet_seconds,
                      commit_agents=commit_agents)


def render_sync_text(report: SyncReport) -> str:
    headline = {
        "up-to-date": "up to date",
        "synced": "synced",
        "skipped": "SKIPPED",
        "blocked": "BLOCKED",
        "offline": "OFFLINE",
        "push-failed": "PUSH FAILED",
        "mismatch": "BYTE MISMATCH",
    }[report.state]
    out = [f"{report.store}: {headline}" + (f": {report.reason}" if report.reason else "")]
    if report.integration and report.integration not in ("up-to-date", "ahead", "no-remote-branch"):
        out.append(f"remote changes: {report.integration}")
    out += [f"committed {c[:12]}" for c in report.commits]
    if report.pushed:
        out.append("pushed")
    out += [f"resolved: {r}" for r in report.resolutions]
    out += [f"kept in the inbox: {p}" for p in report.inbox]
    out += [f"BYTE MISMATCH: {m}" for m in report.mismatches]
    if report.ahead or report.behind:
        out.append(f"ahead {report.ahead}, behind {report.behind}")
    if report.retry_at:
        out.append(f"next automatic try after {report.retry_at}")
    out += [f"note: {n}" for n in report.notes]
    return "\n".join(out) + "\n"


def render_sync_json(report: SyncReport) -> str:
    return json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n"


# -- one commit per maintenance operation --------------------------------------------------------

@dataclass
class OperationRecord:
    """Filled in by the caller while the operation runs; committed when it returns."""

    operation: str
    pass_id: str
    subject: str | None = None
    body: list[str] = field(default_factory=list)
    result: CommitResult | None = None
    notes: list[str] = field(default_factory=list)


@contextmanager
def operation_under_lock(store: Path, operation: str, policy: Policy, clock: Callable[[], datetime],
                         wait: float = 0, identity: Identity = DEFAULT_IDENTITY) -> Iterator[OperationRecord]:
    """The store's .lock taken first (waiting ``wait`` s for a distiller), and only then the
    operation's "before" taken, the operation run and its commit made, all before the lock is
    released: what an agent writes during the wait is its own commit, never part of ours."""
    from .passes import require_store_folder, store_lock_held

    root = store.expanduser().resolve()
    require_store_folder(root)
    with store_lock_held(root, policy, wait):
        with committed_operation(root, operation, policy, clock, identity) as record:
            yield record


@contextmanager
def committed_operation(store: Path, operation: str, policy: Policy, clock: Callable[[], datetime],
                        identity: Identity = DEFAULT_IDENTITY) -> Iterator[OperationRecord]:
    """Run a maintenance operation inside ``with``; it becomes one commit of exactly the paths
    it changed. What agents wrote before it is committed first, as its own commit. A store that
    is not a distilld repository, or a busy git, only leaves a note: the operation still runs."""
    from ..engine.recovery import interrupted_passes
    from ..gitstore.agent_changes import commit_agent_changes, work_tree_ids, working_changes
    from ..gitstore.commit import commit_operation, new_pass_id
    from ..gitstore.errors import CommitRefused, GitBusy, NotAStoreRepo

    now = clock()
    record = OperationRecord(operation, new_pass_id(now))
    try:
        repo_store: StoreRepo | None = open_store(store)
    except NotAStoreRepo:
        repo_store = None
    except GitStoreError as error:  # a repository distilld cannot use: the operation still runs
        record.notes.append(f"the {operation} is not committed: {error}")
        repo_store = None
    before: dict[str, str | None] = {}
    interrupted = interrupted_passes(repo_store.root) if repo_store is not None else []
    if interrupted:  # its half-done writes are not the agents': the operation finishes or undoes them
        record.notes.append(f"agents' changes not committed first: an interrupted pass ({interrupted[0]}) "
                            "is finished or rolled back first")
    if repo_store is not None and not interrupted:
        try:
            with lock_holder(repo_store.root, policy)():
                captured = commit_agent_changes(repo_store, identity.signature(now), new_pass_id(now), time.time())
            record.notes += [f"{p}: not committed: {why}" for p, why in captured.skipped]
        except GitBusy as busy:
            record.notes.append(f"agents' changes not committed first: {busy}")
    if repo_store is not None and not interrupted:  # else what it left is this operation's to commit
        before = work_tree_ids(repo_store, working_changes(repo_store).paths)
    yield record
    if repo_store is None:
        return
    changed = working_changes(repo_store).paths
    after = work_tree_ids(repo_store, changed)
    touched = [p for p in changed if before.get(p, "absent") != after[p]]
    now = clock()
    try:
        record.result = commit_operation(repo_store, operation, touched, record.subject or f"distilld: {operation}",
                                         identity.signature(now), record.pass_id, record.body)
    except (GitBusy, GitStoreError, CommitRefused) as error:
        # The operation itself is done; its changes wait for the next commit of agents' changes.
        record.notes.append(f"the {operation} was not committed: {error}")


def sync_exit_code(report: SyncReport) -> int:
    """0 in sync; 7 skipped or blocked (nothing was wrong with the remote: retry later or fix
    what the report names); 8 offline, push failed or a byte mismatch."""
    if report.ok:
        return 0
    return 7 if report.state in ("skipped", "blocked") else 8
