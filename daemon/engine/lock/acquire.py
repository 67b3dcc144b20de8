"""One attempt at taking a store's `.lock`, as the script's acquire does it.

A free lock is created (link(2): the atomic test-and-set); a lock of our own owner name is
refreshed (names are identities); a stale one, or one whose owner is provably gone
(liveness.py), is taken over under the mutex after re-reading it; any other is what blocks us.
Whoever takes the lock writes `running <iso>`, and gives the lock back if it cannot.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from ...errors import LockHeld, LockIOError
from ...log import get_logger
from .files import io_error
from .liveness import abandoned_owner
from .lock_file import LockFile
from .mutex import MutexBusy, TakeoverMutex
from .protocol import Clock, LockLine
from .status import StatusLine

_log = get_logger("distilld.lock")


class AcquireKind(enum.Enum):
    ACQUIRED = "acquired"
    ALREADY_HELD = "already held"
    TOOK_OVER = "took over"


@dataclass(frozen=True)
class AcquireResult:
    """How the lock was obtained; ``previous_*`` describe a stale lock that was taken over."""

    kind: AcquireKind
    epoch: int
    previous_owner: str | None = None
    previous_age: int | None = None
    abandoned: str | None = None  # why a fresh lock was taken over: its owner is provably gone

    def __str__(self) -> str:
        # The script's words, so logs read the same whichever client took the lock.
        if self.kind is AcquireKind.ALREADY_HELD:
            return "acquired (already held)"
        if self.kind is AcquireKind.TOOK_OVER and self.abandoned:
            return f"acquired (took over abandoned lock from {self.previous_owner}: {self.abandoned})"
        if self.kind is AcquireKind.TOOK_OVER:
            return f"acquired (took over stale lock from {self.previous_owner})"
        return "acquired"


def takeover_words(taken: AcquireResult, stale_seconds: float) -> str:
    """One phrase for a takeover, wherever it is told: whose lock, and why it could be taken."""
    if taken.abandoned:
        return f"took over the lock of {taken.previous_owner}: {taken.abandoned}"
    return (f"took over a stale lock from {taken.previous_owner or 'an unknown owner'} ({taken.previous_age} s "
            f"without a heartbeat; stale after {stale_seconds:g} s)")


class Acquirer:
    """Takes ``lock`` for its owner, one attempt at a time (StoreLock.acquire does the waiting)."""

    def __init__(self, lock: LockFile, status: StatusLine, mutex: TakeoverMutex, stale_seconds: float,
                 clock: Clock) -> None:
        self.lock = lock
        self.status = status
        self.mutex = mutex
        self.stale_seconds = stale_seconds
        self.clock = clock

    def try_once(self) -> AcquireResult | LockLine | None:
        """The result, or what blocks us (None: contended)."""
        line = self.lock.read()
        now = self._now()
        if line is None:
            if not self.lock.create(now):
                return self.lock.read()  # lost the race: report the winner
            self._status_after_taking(now, mutex_held=False)
            return AcquireResult(AcquireKind.ACQUIRED, now)
        if line.owner == self.lock.owner:
            return self._refresh_own(line)
        age = now - line.epoch
        abandoned = abandoned_owner(line) if age < self.stale_seconds else None
        if age < self.stale_seconds and abandoned is None:
            return line
        try:
            with self.mutex.held():
                current = self.lock.read()
                if current != line:
                    return current  # someone else changed it first (took over, released)
                now = self._now()  # the mutex wait may have taken a while
                self.lock.replace(now)
                self._status_after_taking(now, mutex_held=True)
                if abandoned is not None:
                    _log.info("lock.abandoned_taken_over", lock=str(self.lock.path), previous_owner=line.owner,
                              age_seconds=age, why=abandoned)
                return AcquireResult(AcquireKind.TOOK_OVER, now, line.owner, age, abandoned)
        except MutexBusy:
            return None

    def held_error(self, seen: LockLine | None) -> LockHeld:
        """Why the wait ran out: ``seen`` still holds a fresh lock, or the lock stayed contended."""
        if seen is not None:
            age = self._now() - seen.epoch
            if age < self.stale_seconds and seen.owner != self.lock.owner:
                return LockHeld(
                    f"{self.lock.path}: held by {seen.owner} for {age}s (stale after "
                    f"{self.stale_seconds:g}s); another distillation is running, retry later",
                    seen.owner,
                    age,
                )
        return LockHeld(
            f"{self.lock.path}: held (contended): other clients kept changing the lock; "
            "retry later",
            None,
            None,
        )

    def _now(self) -> int:
        return int(self.clock())

    def _refresh_own(self, line: LockLine) -> AcquireResult | LockLine | None:
        """Our owner name already holds it: heartbeat, as the script does (names are identities)."""
        try:
            with self.mutex.held():
                current = self.lock.read()
                if current != line:
                    return current
                now = self._now()
                self.lock.replace(now)
                return AcquireResult(AcquireKind.ALREADY_HELD, now)
        except MutexBusy:
            return None

    def _status_after_taking(self, now: int, *, mutex_held: bool) -> None:
        """Write `running <iso>`; if that fails, give the lock back (if still ours) and raise."""
        try:
            self.status.running(now)
        except OSError as error:
            dropped = self._drop_if_ours(mutex_held=mutex_held)
            self.lock.forget()
            after = (
                "the lock was dropped"
                if dropped
                else "the lock could not be dropped and goes stale"
            )
            raise io_error(self.status.path, f"write the status ({after})", error) from None

    def _drop_if_ours(self, *, mutex_held: bool) -> bool:
        if not mutex_held:
            try:
                with self.mutex.held():
                    return self._drop_if_ours(mutex_held=True)
            except (MutexBusy, LockIOError):
                return False
        if not self.lock.is_ours():
            return False
        try:
            self.lock.remove()
        except LockIOError:
            return False
        return True
