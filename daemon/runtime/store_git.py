"""The daemon's git: committing what agents wrote, one commit per maintenance pass, sync, and
what status.json says about the repository (actions/sync.py does the work).

Every call opens the repository afresh on the calling (worker) thread: libgit2 objects are not
to be shared between threads.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ..actions.sync import OperationRecord, committed_operation, lock_holder, run_sync
from ..gitstore.agent_changes import commit_agent_changes, repair_index
from ..gitstore.auth import Credentials
from ..gitstore.commit import Identity, new_pass_id
from ..gitstore.errors import GitBusy, NotAStoreRepo
from ..gitstore.remote import ahead_behind
from ..gitstore.repo import StoreRepo, open_store
from ..gitstore.sync import SyncReport
from ..gitstore.verify import verify_work_tree
from ..policy import Policy
from ..settings import Settings


@dataclass
class CommitOutcome:
    """What became of an attempt to commit: the commit, or why there is none."""

    committed: bool
    sha: str | None = None
    paths: list[str] = field(default_factory=list)
    note: str | None = None  # why nothing was committed, when that is worth saying
    busy: bool = False  # a distiller or another git held things up: try again soon
    skipped: list[str] = field(default_factory=list)


@dataclass
class SyncResult:
    ok: bool
    summary: str
    pulled: int = 0
    pushed: bool = False
    blocked: str | None = None
    ahead: int | None = None
    behind: int | None = None
    backoff_until: str | None = None
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class OperationCommit:
    """What became of a maintenance pass's commit (filled in when its ``with`` block ends)."""

    record: OperationRecord | None = None
    commit: CommitOutcome | None = None
    notes: list[str] = field(default_factory=list)

    def describe(self, subject: str, body: list[str] | None = None) -> None:
        if self.record is not None:
            self.record.subject = subject
            self.record.body = list(body or [])


class StoreGit:
    """The store's repository as the daemon's jobs use it, with the machine's git settings."""

    def __init__(self, root: Path, settings: Settings, policy: Policy,
                 clock: Callable[[], datetime]) -> None:
        self.root = root
        self.settings = settings
        self.policy = policy
        self.clock = clock

    def _identity(self) -> Identity:
        return Identity(self.settings.git.author_name, self.settings.git.author_email)

    def _credentials(self) -> Credentials:
        git = self.settings.git
        token = None
        if git.token_file is not None:
            try:
                token = git.token_file.read_text("utf-8").strip() or None
            except OSError:
                token = None
        return Credentials(ssh_user=git.ssh_user, ssh_key=git.ssh_key, use_agent=git.use_ssh_agent, token=token)

    def _open(self) -> tuple[StoreRepo | None, str | None]:
        """The store's repository, or why there is none to use."""
        try:
            return open_store(self.root), None
        except NotAStoreRepo:
            return None, "not a git repository distilld has set up (`distilld init` does it)"

    def commit_changes(self, message: str) -> CommitOutcome:
        """Commit what agents wrote, as one commit, holding the store's lock without waiting."""
        store, why = self._open()
        if store is None:
            return CommitOutcome(False, note=why)
        try:
            with lock_holder(store.root, self.policy)():
                now = self.clock()
                done = commit_agent_changes(store, self._identity().signature(now), new_pass_id(now), time.time())
        except GitBusy as busy:
            return CommitOutcome(False, note=f"not committed yet: {busy}", busy=True)
        notes = [*done.notes, *(f"{path}: not committed: {reason}" for path, reason in done.skipped)]
        return CommitOutcome(bool(done.commit), done.commit, list(done.paths),
                             note=done.waiting or ("; ".join(notes) if notes else None), skipped=notes)

    def repair_index(self) -> list[str]:
        """At start-up: finish an index update a killed distilld left, and set back to HEAD what
        the index still names of an older distilld state; the paths repaired. Git busy: later
        (every commit repairs first too)."""
        store, _ = self._open()
        return [] if store is None else repair_index(store)

    @contextmanager
    def operation(self, name: str) -> Iterator[OperationCommit]:
        """Run a maintenance pass inside: it becomes one commit of exactly the paths it changed."""
        outcome = OperationCommit()
        if not self.settings.git.commit:
            yield outcome
            return
        with committed_operation(self.root, name, self.policy, self.clock, self._identity()) as record:
            outcome.record = record
            yield outcome
        result = record.result
        if result is not None and result.commit:
            outcome.commit = CommitOutcome(True, result.commit, list(result.paths))
        outcome.notes = list(record.notes)

    def verify(self) -> list[str]:
        """The full byte check of the work tree against the last commit and the ledger (the
        reconciliation's; a pull checks only what it changed). Mismatches, one line each."""
        store, _ = self._open()
        if store is None:
            return []
        return [str(m) for m in verify_work_tree(store)]

    def has_remote(self) -> bool:
        store, _ = self._open()
        return store is not None and store.has_remote()

    def sync(self, asked_by_a_person: bool = False) -> SyncResult:
        store, why = self._open()
        if store is None:
            return SyncResult(True, f"nothing to sync: {why}")
        remote = self.settings.git.remote
        if remote is None and not store.has_remote():
            return SyncResult(True, "no remote set; `distilld init --remote URL` adds one",
                              details={"remote": None})
        report = run_sync(self.root, self.policy, self.clock, self._identity(), self._credentials(),
                          remote=remote, scheduled=not asked_by_a_person, quiet_seconds=0.0,
                          commit_agents=self.settings.git.commit)
        return _sync_result(report, remote or store.remote)

    def state(self) -> dict[str, Any]:
        store, why = self._open()
        if store is None:
            return {"available": True, "note": why, "remote": None}
        info: dict[str, Any] = {"available": True, "note": None, "branch": store.branch,
                                "remote": store.remote if store.has_remote() else None,
                                "push": self.settings.git.push}
        try:
            info["ahead"], info["behind"] = ahead_behind(store)
        except Exception:  # a repository in an odd state: status must still be written
            pass
        return info


def _sync_result(report: SyncReport, remote: str) -> SyncResult:
    state = report.state
    integration = report.integration
    pulled = 1 if integration not in (None, "up-to-date", "ahead", "no-remote-branch", "blocked") else 0
    blocked = report.reason if state in ("blocked", "mismatch") else None
    if state in ("offline", "push-failed"):
        blocked = report.reason
    summary = {
        "up-to-date": "up to date",
        "synced": "synced",
        "skipped": f"skipped: {report.reason}",
        "blocked": f"blocked: {report.reason}",
        "offline": f"offline: {report.reason}",
        "push-failed": f"push failed: {report.reason}",
        "mismatch": f"byte mismatch after pull: {report.reason}",
    }.get(state, str(state))
    return SyncResult(
        ok=bool(report.ok),  # a skipped sync did not sync: recorded as not ok, with its reason
        summary=summary,
        pulled=pulled,
        pushed=bool(report.pushed),
        blocked=blocked,
        ahead=report.ahead,
        behind=report.behind,
        backoff_until=report.retry_at,
        details={"remote": remote, "integration": integration, "state": state,
                 "outcome": "skipped" if state == "skipped" else None,
                 "commits": [c[:12] for c in report.commits], "notes": list(report.notes),
                 "rewound": report.rewound},
    )
