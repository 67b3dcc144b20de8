"""The daemon's small interface to the passes other parts of distilld provide: committing and
syncing with git, and compaction. Each is looked up when first used; when a part is missing
from this build the job reports that plainly instead of failing, and everything else runs.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ..policy import Policy
from ..settings import Settings


@dataclass
class CommitResult:
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
class CompactResult:
    ok: bool
    summary: str
    lines: list[str] = field(default_factory=list)  # one activity line per thing done
    changed: list[str] = field(default_factory=list)


def _optional(module: str) -> Any | None:
    try:
        return importlib.import_module(module, __package__)
    except ImportError:
        return None


class GitLink:
    """Commits and sync through distilld's git layer (actions/sync.py), when this build has it.

    Every call opens the repository afresh on the calling (worker) thread: libgit2 objects are
    not to be shared between threads.
    """

    def __init__(self, root: Path, settings: Settings, policy: Policy,
                 clock: Callable[[], datetime]) -> None:
        self.root = root
        self.settings = settings
        self.policy = policy
        self.clock = clock
        module = _optional("..actions.sync")
        needed = ("open_store", "lock_holder", "commit_agent_changes", "new_pass_id", "run_sync",
                  "committed_operation")
        self._module = module if module is not None and all(hasattr(module, n) for n in needed) else None
        self._errors = _optional("..gitstore.errors")

    @property
    def available(self) -> bool:
        return self._module is not None and self._errors is not None

    @property
    def missing(self) -> str:
        return "git support is not part of this build (distilld.actions.sync is missing)"

    def _identity(self) -> Any:
        from ..gitstore.commit import Identity

        return Identity(self.settings.git.author_name, self.settings.git.author_email)

    def _credentials(self) -> Any:
        from ..gitstore.auth import Credentials

        git = self.settings.git
        token = None
        if git.token_file is not None:
            try:
                token = git.token_file.read_text("utf-8").strip() or None
            except OSError:
                token = None
        return Credentials(ssh_user=git.ssh_user, ssh_key=git.ssh_key, use_agent=git.use_ssh_agent, token=token)

    def _open(self) -> tuple[Any | None, str | None]:
        """The store's repository, or why there is none to use."""
        assert self._module is not None and self._errors is not None
        try:
            return self._module.open_store(self.root), None
        except self._errors.NotAStoreRepo:
            return None, "not a git repository distilld has set up (`distilld init` does it)"

    def commit_changes(self, message: str) -> CommitResult:
        """Commit what agents wrote, as one commit, holding the store's lock without waiting."""
        if not self.available:
            return CommitResult(False, note=self.missing)
        assert self._module is not None and self._errors is not None
        store, why = self._open()
        if store is None:
            return CommitResult(False, note=why)
        try:
            with self._module.lock_holder(store.root, self.policy)():
                now = self.clock()
                done = self._module.commit_agent_changes(store, self._identity().signature(now),
                                                         self._module.new_pass_id(now), time.time())
        except self._errors.GitBusy as busy:
            return CommitResult(False, note=f"not committed yet: {busy}", busy=True)
        notes = [*done.notes, *(f"{path}: not committed: {reason}" for path, reason in done.skipped)]
        return CommitResult(bool(done.commit), done.commit, list(done.paths),
                            note=done.waiting or ("; ".join(notes) if notes else None), skipped=notes)

    @contextmanager
    def operation(self, name: str) -> Iterator[OperationLink]:
        """Run a maintenance pass inside: it becomes one commit of exactly the paths it changed."""
        link = OperationLink()
        if not self.available or not self.settings.git.commit:
            yield link
            return
        assert self._module is not None
        with self._module.committed_operation(self.root, name, self.policy, self.clock, self._identity()) as record:
            link.record = record
            yield link
        result = getattr(record, "result", None)
        if result is not None and result.commit:
            link.commit = CommitResult(True, result.commit, list(result.paths))
        link.notes = list(getattr(record, "notes", []))

    def verify(self) -> list[str]:
        """The full byte check of the work tree against the last commit and the ledger (the
        reconciliation's; a pull checks only what it changed). Mismatches, one line each."""
        if not self.available:
            return []
        store, _ = self._open()
        if store is None:
            return []
        from ..gitstore.verify import verify_work_tree

        return [str(m) for m in verify_work_tree(store)]

    def has_remote(self) -> bool:
        if not self.available:
            return False
        store, _ = self._open()
        return store is not None and store.has_remote()

    def sync(self, asked_by_a_person: bool = False) -> SyncResult:
        if not self.available:
            return SyncResult(True, self.missing)
        assert self._module is not None
        store, why = self._open()
        if store is None:
            return SyncResult(True, f"nothing to sync: {why}")
        remote = self.settings.git.remote
        if remote is None and not store.has_remote():
            return SyncResult(True, "no remote set; `distilld init --remote URL` adds one",
                              details={"remote": None})
        report = self._module.run_sync(self.root, self.policy, self.clock, self._identity(), self._credentials(),
                                       remote=remote, scheduled=not asked_by_a_person, quiet_seconds=0.0,
                                       commit_agents=self.settings.git.commit)
        return _sync_result(report, remote or store.remote)

    def state(self) -> dict[str, Any]:
        if not self.available:
            return {"available": False, "note": self.missing}
        store, why = self._open()
        if store is None:
            return {"available": True, "note": why, "remote": None}
        info: dict[str, Any] = {"available": True, "note": None, "branch": store.branch,
                                "remote": store.remote if store.has_remote() else None}
        try:
            from ..gitstore.sync import ahead_behind

            info["ahead"], info["behind"] = ahead_behind(store)
        except Exception:  # a repository in an odd state: status must still be written
            pass
        return info


@dataclass
class OperationLink:
    """What became of a maintenance pass's commit (filled in when its ``with`` block ends)."""

    record: Any = None
    commit: CommitResult | None = None
    notes: list[str] = field(default_factory=list)

    def describe(self, subject: str, body: list[str] | None = None) -> None:
        if self.record is not None:
            self.record.subject = subject
            self.record.body = list(body or [])


def _sync_result(report: Any, remote: str) -> SyncResult:
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
        ok=bool(report.ok) or state == "skipped",
        summary=summary,
        pulled=pulled,
        pushed=bool(report.pushed),
        blocked=blocked,
        ahead=report.ahead,
        behind=report.behind,
        backoff_until=report.retry_at,
        details={"remote": remote, "integration": integration, "state": state,
                 "outcome": "skipped" if state == "skipped" else None,
                 "commits": [c[:12] for c in report.commits], "notes": list(report.notes)},
    )


class CompactLink:
    """Compaction (actions/compact.py: run_compact), when this build has it."""

    def __init__(self) -> None:
        self._module = _optional("..actions.compact")

    @property
    def available(self) -> bool:
        return self._module is not None and hasattr(self._module, "run_compact")

    def run(self, root: Path, policy: Policy, clock: Callable[[], datetime]) -> CompactResult:
        if not self.available:
            return CompactResult(True, "compaction is not part of this build (distilld.actions.compact is missing)")
        assert self._module is not None
        report = self._module.run_compact(root, policy, clock, wait=0, apply=True)
        return describe_compaction(report)


def describe_compaction(report: Any) -> CompactResult:
    """Plain words for a compaction report: one line per thing done, and a summary."""
    lines: list[str] = []
    plan, outcome, recovery = report.plan, report.outcome, report.recovery
    if recovery is not None and recovery.journal is not None:
        lines.append(f"finished an interrupted compaction ({len(recovery.written)} files written)")
    written = [path for path, _ in (outcome.written if outcome else [])]
    summary = "; ".join(report.notes) or "nothing to compact"
    rolled_back = getattr(outcome, "rolled_back", None)
    if rolled_back:  # the store is as it was (and any foreign edit kept): nothing was compacted
        lines.append(f"compaction rolled back ({rolled_back})")
        written = []
    if plan is not None and plan.steps and outcome is not None and written:
        (lines_before, bytes_before), (lines_after, bytes_after) = plan.spine_before, plan.spine_after
        parts = []
        if (lines_before, bytes_before) != (lines_after, bytes_after):
            parts.append(f"SPINE.md {lines_before} -> {lines_after} lines, {bytes_before} -> {bytes_after} bytes")
            lines.append(f"compacted SPINE.md: {lines_before} -> {lines_after} lines, {bytes_before} -> "
                         f"{bytes_after} bytes ({len(plan.cut)} entries shortened, {len(plan.merged)} merged; "
                         "each whole hook kept in its file's Index detail)")
        for split in plan.splits:
            lines.append(f"split {split.path} into {', '.join(split.children)} (over its caps)")
        if plan.splits:
            parts.append(f"{len(plan.splits)} files split")
        summary = "; ".join(parts) or f"{len(written)} files rewritten"
    for problem in [*getattr(plan, "unsplittable", []), *getattr(plan, "breaches", [])]:
        lines.append(f"compaction could not fix: {problem}")
    failed = [f.message for o in (outcome, recovery) if o is not None for f in o.self_check]
    if failed:
        lines.append(f"compaction self-check failed: {'; '.join(failed[:3])}")
        summary = f"self-check failed: {failed[0]}"
    changed = sorted(set(written) | {path for path, _ in (recovery.written if recovery else [])})
    return CompactResult(bool(report.ok), summary, lines, changed)
