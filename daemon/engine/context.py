"""What every write pass carries: the store root, the held lock, the clock, the caps."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from ..store.caps import DEFAULT_CAPS, Caps
from ..store.findings import Finding
from ..store.invariants import check_store
from ..store.lossless import check_c4
from ..store.snapshot import Snapshot, take_snapshot
from ..store.stamps import format_utc
from .lock import StoreLock


@dataclass
class PassContext:
    root: Path
    lock: StoreLock
    clock: Callable[[], datetime]
    caps: Caps = DEFAULT_CAPS
    entry_target_bytes: int = 200

    def now(self) -> datetime:
        return self.clock()

    def now_stamp(self) -> str:
        return format_utc(self.clock())

    def heartbeat(self) -> None:
        """Refresh the lock after a write; raises LockLost so the pass stops before its next write."""
        self.lock.heartbeat()

    def self_check(self, before: Snapshot | None = None) -> list[Finding]:
        """Failing findings of C1-C3 (and C4 against ``before``) on the store as it is now."""
        after = take_snapshot(self.root)
        found = check_store(after, self.caps)
        if before is not None:
            found += check_c4(before, after)
        return [f for f in found if f.severity == "fail"]
