"""The pass that follows the agents' changes once the store is quiet: the catalog rebuilt if it
is stale, the invariants checked, the budgets measured. (Committing and pushing the changes is
the git layer's job; the daemon runs it right after this pass.)

Reading needs no lock. Writing CATALOG.md does: the pass takes `.lock` only when the catalog
is stale, re-reads the store under it, and never waits for a distiller (the daemon does the
waiting, so that it can say for whom it waits).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from ..engine.guard import LostLines, guarded_pass, lost_ledger_lines
from ..engine.lock import AcquireKind, AcquireResult, StoreLock, default_owner
from ..errors import LockLost
from ..policy import Policy
from ..store.budget import BudgetReport
from ..store.findings import Finding
from ..store.incremental import IncrementalStore
from ..store.paths import Layout
from ..engine.finish import stale_reasons
from .catalog import refresh_catalog


@dataclass
class FollowReport:
    store: Path
    layout: Layout
    catalog_reasons: list[str] = field(default_factory=list)  # why the catalog was stale
    catalog_written: bool = False
    takeover: AcquireResult | None = None  # a stale lock taken over to write the catalog
    failures: list[Finding] = field(default_factory=list)  # C1-C3 findings that fail
    budget: BudgetReport | None = None
    ledger_lost: LostLines | None = None  # ledger lines gone since the last pass: nothing is written

    @property
    def ok(self) -> bool:
        return not self.failures and self.ledger_lost is None


def run_follow(store: Path, policy: Policy, clock: Callable[[], datetime],
               owner: str | None = None, incremental: IncrementalStore | None = None) -> FollowReport:
    """Raises LockHeld when the catalog needs rebuilding and a distiller holds a fresh lock.

    With ``incremental`` (the daemon's), only the files that changed since its last pass are
    read again and only the findings they affect are recomputed."""
    passes = incremental or IncrementalStore()
    snapshot = passes.snapshot(store)
    findings = passes.check(snapshot, policy.limits)
    report = FollowReport(snapshot.root, snapshot.layout)
    report.ledger_lost = lost_ledger_lines(snapshot.root)
    if snapshot.layout is not Layout.UNMIGRATED and report.ledger_lost is None:
        reasons = stale_reasons(snapshot, findings)
        if reasons:
            report.catalog_reasons = reasons
            lock = StoreLock.from_policy(snapshot.root, owner or default_owner(), policy.lock)
            acquired = lock.acquire(0)
            if acquired.kind is AcquireKind.TOOK_OVER:
                report.takeover = acquired
            try:
                with guarded_pass(snapshot.root):
                    report.catalog_written = refresh_catalog(snapshot.root, clock()).written
            finally:
                if acquired.kind is not AcquireKind.ALREADY_HELD:  # else the caller holds it
                    try:
                        lock.release()
                    except LockLost:
                        pass  # taken over meanwhile; the write above was already complete
            snapshot = passes.snapshot(snapshot.root)
            findings = passes.check(snapshot, policy.limits)
    report.failures = [f for f in findings if f.severity == "fail"]
    report.budget = passes.budget(snapshot, policy.limits, clock().date())
    return report
