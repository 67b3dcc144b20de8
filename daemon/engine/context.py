"""What every write pass carries: the store root, the held lock, the clock, the limits."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Protocol

from ..store.findings import Finding
from ..store.invariants import check_c1, check_c3, check_store
from ..store.limits import Limits
from ..store.lossless import check_c4
from ..store.safety import unsafe_name_reason
from ..store.snapshot import Snapshot, take_snapshot
from ..store.stamps import format_utc
from .lock import StoreLock

class PlanInputs(Protocol):
    """What every pass's planner, ``plan(snapshot, ctx)``, takes from its context besides the
    snapshot: the limits and the time. A ``PassContext`` is one (a pass under the lock); a
    preview, which holds no lock, plans with ``PreviewInputs``."""

    @property
    def limits(self) -> Limits: ...

    def now(self) -> datetime: ...


@dataclass(frozen=True)
class PreviewInputs:
    """The limits and the clock a preview plans with (no lock is held, nothing is written)."""

    limits: Limits
    clock: Callable[[], datetime]

    def now(self) -> datetime:
        return self.clock()


# Budget breaches a pass may find and leave: gc and restore do not compact, so a store that was
# over a cap before the pass is not failed by it, as long as the pass made no breach of its own.
BUDGET_CODES = frozenset({"spine-lines", "spine-bytes", "entry-bytes", "file-lines", "file-bytes"})


def _budget_keys(snapshot: Snapshot, found: list[Finding], limits: Limits) -> list[tuple[str, str]]:
    """A key per finding that survives the pass's own edits: an over-cap entry is known by its
    hook (removing a pointer from a merged line changes the line, not the hook)."""
    over = [e.hook for e in (snapshot.spine.entries if snapshot.spine else []) if e.byte_len > limits.spine.entry_max_bytes]
    hooks = iter(over)
    keys = []
    for finding in found:
        if finding.code == "entry-bytes":
            keys.append((finding.code, next(hooks, finding.message)))
        elif finding.code in ("file-lines", "file-bytes"):
            keys.append((finding.code, _family_head(snapshot, finding.path)))
        else:
            keys.append((finding.code, finding.path))
    return keys


def _family_head(snapshot: Snapshot, path: str) -> str:
    """The file a split child was cut from (its family's first file): a child still over a cap
    carries the breach its parent had, it does not add one."""
    seen = {path}
    while path in snapshot.files and (parent := snapshot.knowledge(path).split_from) and parent not in seen:
        seen.add(parent)
        path = parent
    return path


@dataclass
class PassContext:
    root: Path
    lock: StoreLock
    clock: Callable[[], datetime]
    limits: Limits
    baseline_budget: set[tuple[str, str]] = field(default_factory=set)
    still_over_budget: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what was mended before the pass (a torn ledger line)
    # the store as the baseline read it, until a pass has taken it (one read of every file fewer)
    _unread: Snapshot | None = None

    def take_baseline(self) -> None:
        """Remember the budget breaches the store has before the pass writes anything."""
        snapshot = self._unread = take_snapshot(self.root)
        found = check_c1(snapshot, self.limits) + check_c3(snapshot, self.limits)
        self.baseline_budget = {
            key for key, f in zip(_budget_keys(snapshot, found, self.limits), found, strict=True) if f.code in BUDGET_CODES
        }

    def now(self) -> datetime:
        return self.clock()

    def now_stamp(self) -> str:
        return format_utc(self.clock())

    def snapshot(self) -> Snapshot:
        """The store as it is: the baseline's read when nothing was written since (the lock is
        held, and a lockless edit meanwhile is caught by each step's checksum), else a new read."""
        found, self._unread = self._unread, None
        return found if found is not None else take_snapshot(self.root)

    def wrote(self) -> None:
        """The pass (or a recovery) changed the store: the next snapshot is read anew."""
        self._unread = None

    def heartbeat(self) -> None:
        """Refresh the lock after a write; raises LockLost so the pass stops before its next write."""
        self.lock.heartbeat()

    def self_check(self, before: Snapshot | None = None) -> list[Finding]:
        """Failing findings of C1-C3 (and C4 against ``before``) on the store as it is now,
        less the budget breaches that were there before the pass (kept in still_over_budget)
        and less what ``before`` failed already (a symlink, a broken pointer): the same rule as
        the check of the planned store before the first write (gate.py), so a pass that did
        what it planned is not rolled back for what it found."""
        new, self.still_over_budget = self.split_failures(take_snapshot(self.root), before)
        if new and before is not None:  # read only when it matters: a full check of the old store
            known = {(f.code, f.message) for f in check_store(before, self.limits) if f.severity == "fail"}
            new = [f for f in new if (f.code, f.message) not in known]
        return new

    def split_failures(self, after: Snapshot, before: Snapshot | None = None) -> tuple[list[Finding], list[Finding]]:
        """The failing findings of C1-C3 (and C4 against ``before``) on ``after``: those this
        pass would cause, and the budget breaches the store already had."""
        found = check_store(after, self.limits)
        if before is not None:
            found += check_c4(before, after)
        # A file whose name no pass records was left where it is, unpointed and uncatalogued:
        # check reports it (a note); it is not this pass's failure.
        failing = [f for f in found if f.severity == "fail" and unsafe_name_reason(f.path) is None]
        keys = _budget_keys(after, failing, self.limits)
        known = [key in self.baseline_budget and f.code in BUDGET_CODES for key, f in zip(keys, failing, strict=True)]
        return ([f for f, old in zip(failing, known, strict=True) if not old],
                [f for f, old in zip(failing, known, strict=True) if old])
