"""What the lock tells others: the `.status` line it writes and the `status` answer it gives.

`.status` takes the script's three forms (STORE-FORMAT.md 1.11, 2.1): `running <iso>` when the
lock is taken, `running step:N signals:M <iso>` at a checkpoint, `idle <iso>` on release.
"""

from __future__ import annotations

import enum
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from ...errors import LockUsageError
from ...policy import LockTimings
from .files import unlink_quietly, write_new_file
from .liveness import owner_liveness
from .protocol import Clock, format_iso, read_lock

STATUS_FILE = ".status"

# `.status.tmp.<pid>` is per process only, so threads of one process must not write it at once.
_STATUS_WRITE = threading.Lock()


class LockStateKind(enum.Enum):
    FREE = "free"
    HELD = "held"
    STALE = "stale"
    ABANDONED = "abandoned"  # fresh, but its owner provably no longer runs: taken over at once


@dataclass(frozen=True)
class LockState:
    """The script's `status` answer: free, or held/stale with the owner and the age in seconds;
    and distilld's one addition, abandoned: a fresh lock whose owner no longer runs.
    ``alive`` is whether the owner runs (None: it cannot be told), ``liveness`` says why."""

    kind: LockStateKind
    owner: str | None = None
    age: int | None = None
    # Not part of the script's answer, so not of equality either.
    alive: bool | None = field(default=None, compare=False)
    liveness: str | None = field(default=None, compare=False)

    def __str__(self) -> str:
        if self.kind is LockStateKind.FREE:
            return "free"
        return f"{self.kind.value} {self.owner} {self.age}s"

    @property
    def blocks(self) -> bool:
        """A holder that must be waited for: fresh, and not provably gone."""
        return self.kind is LockStateKind.HELD

    def describe(self) -> str:
        """`held, by X for N s (process N of this machine runs)`, `abandoned, by ...`, or `free`."""
        if self.kind is LockStateKind.FREE:
            return "free"
        how = {LockStateKind.HELD: "held", LockStateKind.STALE: "stale (no heartbeat for the stale period)",
               LockStateKind.ABANDONED: "abandoned"}[self.kind]
        return f"{how}, by {self.owner} for {self.age} s ({self.liveness})"


def lock_status(root: Path, stale_seconds: float | None = None, clock: Clock = time.time) -> LockState:
    """Say who holds the store's lock and whether it may be taken over; changes nothing.
    ``stale_seconds`` defaults to the policy's."""
    if stale_seconds is None:
        stale_seconds = LockTimings().stale_seconds
    line = read_lock(Path(root))
    if line is None:
        return LockState(LockStateKind.FREE)
    age = int(clock()) - line.epoch
    liveness = owner_liveness(line)
    if age >= stale_seconds:
        kind = LockStateKind.STALE
    elif liveness.alive is False:
        kind = LockStateKind.ABANDONED
    else:
        kind = LockStateKind.HELD
    return LockState(kind, line.owner, age, liveness.alive, liveness.words)


def checkpoint(step: int | None, signals: int | None) -> str | None:
    """`step:N signals:M`, or None for a plain heartbeat; both or neither must be given."""
    if step is None and signals is None:
        return None
    if step is None or signals is None:
        raise LockUsageError("a checkpoint needs both step and signals (or neither)")
    for name, value in (("step", step), ("signals", signals)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise LockUsageError(f"{name} must be a non-negative integer (got {value!r})")
    return f"step:{step} signals:{signals}"


class StatusLine:
    """The `.status` of the store at ``root``. Each write replaces it by tmp + rename; an OSError
    propagates, so the caller decides what a failed write means for the lock."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.path = root / STATUS_FILE

    def running(self, epoch: int, at_checkpoint: str | None = None) -> None:
        stamp = format_iso(epoch)
        self._write(f"running {stamp}" if at_checkpoint is None else f"running {at_checkpoint} {stamp}")

    def idle(self, epoch: int) -> None:
        self._write(f"idle {format_iso(epoch)}")

    def _write(self, text: str) -> None:
        temp = self.root / f"{STATUS_FILE}.tmp.{os.getpid()}"
        with _STATUS_WRITE:
            try:
                write_new_file(temp, f"{text}\n".encode("ascii"), exclusive=False)
                os.replace(temp, self.path)
            finally:
                unlink_quietly(temp)
