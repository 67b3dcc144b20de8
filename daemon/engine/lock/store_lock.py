"""StoreLock: one owner's acquire, heartbeat and release of a store's `.lock`.

Every change to an existing `.lock` happens under the takeover mutex, after re-reading it:
heartbeat and release re-check that the line is still exactly the one this owner wrote (owner
and epoch), so a stale holder that was taken over learns it (LockLost) and writes nothing, not
even its checkpoint. Taking the lock is acquire.py's; a takeover is told to ``takeover_hook``,
and a wait for a holder, once, to ``waiting_hook``.

Wall-clock time (the `.lock` epoch, the ISO stamps, staleness) comes from the injected ``clock``;
waits and polls use the monotonic clock, so a frozen test clock cannot make a wait endless.
A StoreLock is not thread-safe: use one per thread of control.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ...errors import LockLost, LockUsageError
from ...policy import LockTimings
from .acquire import AcquireKind, Acquirer, AcquireResult, takeover_words
from .files import io_error
from .lock_file import LockFile
from .mutex import MutexBusy, TakeoverMutex
from .protocol import Clock, LockLine, check_owner
from .status import StatusLine, checkpoint

# Told of every takeover (the store, the new owner, and the phrase saying whose lock it was and
# why it could be taken), so the command line can put it in the activity log; the daemon logs
# its own takeovers itself.
TakeoverHook = Callable[[Path, str, str], None]
# (store root, the holder's owner or None when contended, its age in seconds, how long we wait)
WaitingHook = Callable[[Path, "str | None", "int | None", float], None]


class StoreLock:
    """One owner's handle on a store's `.lock`.

    ``acquire`` takes the lock (or refreshes it when this owner already holds it, or takes over a
    stale one), ``heartbeat`` refreshes it after every file written, ``release`` gives it back.
    ``epoch`` is the epoch this owner last wrote into `.lock` (None once it knows it does not
    hold the lock). Its timings are ``timings`` (the policy's defaults when not given), with any
    of the three seconds given here in their place.
    """

    def __init__(
        self,
        root: Path | str,
        owner: str,
        stale_seconds: float | None = None,
        poll_seconds: float | None = None,
        takeover_wait_seconds: float | None = None,
        clock: Clock = time.time,
        *,
        timings: LockTimings | None = None,
    ) -> None:
        self.root = Path(root)
        self.owner = check_owner(owner)
        given = {"stale_seconds": stale_seconds, "poll_seconds": poll_seconds,
                 "takeover_wait_seconds": takeover_wait_seconds}
        changes: dict[str, Any] = {name: value for name, value in given.items() if value is not None}
        self.timings = dataclasses.replace(timings or LockTimings(), **changes)
        self._clock = clock
        self._file = LockFile(self.root, self.owner)
        self._status = StatusLine(self.root)
        self._mutex = TakeoverMutex(self.root, self.timings.takeover_wait_seconds, self.timings.mutex_poll_seconds)
        self._acquirer = Acquirer(self._file, self._status, self._mutex, self.timings.stale_seconds, clock)

    @classmethod
    def from_policy(
        cls, root: Path | str, owner: str, policy: LockTimings, clock: Clock = time.time
    ) -> StoreLock:
        return cls(root, owner, clock=clock, timings=policy)

    @property
    def stale_seconds(self) -> float:
        return self.timings.stale_seconds

    @property
    def poll_seconds(self) -> float:
        return self.timings.poll_seconds

    @property
    def takeover_wait_seconds(self) -> float:
        return self.timings.takeover_wait_seconds

    @property
    def epoch(self) -> int | None:
        return self._file.epoch

    @property
    def lock_path(self) -> Path:
        return self._file.path

    def __repr__(self) -> str:
        return f"StoreLock({str(self.root)!r}, {self.owner!r}, epoch={self.epoch})"

    def acquire(self, wait: float = 0) -> AcquireResult:
        """Take the lock, polling every ``poll_seconds`` for up to ``wait`` seconds.

        Raises LockHeld when another owner still holds a fresh lock (or the lock stayed
        contended) at the deadline, LockIOError when the lock files cannot be written.
        """
        if not wait >= 0:
            raise LockUsageError(f"wait must be >= 0 seconds (got {wait!r})")
        self._mutex.refuse_link()
        deadline = time.monotonic() + wait
        told_waiting = False
        while True:
            outcome = self._acquirer.try_once()
            if isinstance(outcome, AcquireResult):
                if outcome.kind is AcquireKind.TOOK_OVER:
                    self._tell_takeover(outcome)
                return outcome
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._acquirer.held_error(outcome)
            if not told_waiting:
                told_waiting = True
                self._tell_waiting(outcome, wait)
            time.sleep(min(self.poll_seconds, remaining))

    def heartbeat(self, step: int | None = None, signals: int | None = None) -> None:
        """Refresh the lock's epoch; with ``step`` and ``signals`` also record a checkpoint.

        Raises LockLost when the lock is not (or no longer) exactly ours; in that case neither
        `.lock` nor `.status` is touched.
        """
        at_checkpoint = checkpoint(step, signals)
        self._check_named_owner(missing="lock not held", other="held by")
        with self._while_ours(
            changed="lock lost: taken over or changed since our last heartbeat; stop writing and acquire again",
            contended=f"lock contended (mutex busy for {self.takeover_wait_seconds}s); treat the lock as lost",
        ):
            now = int(self._clock())
            self._file.replace(now)
            if at_checkpoint is not None:
                # Inside the mutex after the re-check: a lost owner never writes its checkpoint.
                self._status.running(now, at_checkpoint)

    def release(self) -> None:
        """Give the lock back and set `.status` to `idle`.

        Raises LockLost when the lock is not exactly ours (then nothing is changed), LockIOError
        when `.lock` or `.status` cannot be written.
        """
        self._check_named_owner(missing="not held", other="not owner: held by")
        status_error: OSError | None = None
        with self._while_ours(
            changed="not owner: lock changed during release; nothing was released",
            contended=f"not owner: lock contended during release (mutex busy for "
                      f"{self.takeover_wait_seconds}s); nothing was released",
        ):
            # `idle` goes first, while `.lock` is still ours: written after the unlink, it
            # could overwrite the `running` of whoever takes the free lock next.
            try:
                self._status.idle(int(self._clock()))
            except OSError as error:
                status_error = error
            self._file.remove()
        if status_error is not None:
            raise io_error(self._status.path, "write idle (the lock was released)", status_error)

    @contextlib.contextmanager
    def _while_ours(self, *, changed: str, contended: str) -> Iterator[None]:
        """Hold the mutex while `.lock` is exactly our line; else LockLost, having changed nothing."""
        try:
            with self._mutex.held():
                if not self._file.is_ours():
                    self._file.forget()
                    raise LockLost(f"{self.lock_path}: {changed}")
                yield
        except MutexBusy:
            raise LockLost(f"{self._mutex.path}: {contended}") from None

    def _tell_takeover(self, taken: AcquireResult) -> None:
        # Read at call time: the command line sets it on the package (`lock.takeover_hook = ...`).
        from . import takeover_hook

        if takeover_hook is not None:
            takeover_hook(self.root, self.owner, takeover_words(taken, self.stale_seconds))

    def _tell_waiting(self, holder: LockLine | None, wait: float) -> None:
        # Said once per acquire, so that a command told to --wait does not look hung.
        from . import waiting_hook

        if waiting_hook is not None:
            age = None if holder is None else max(0, int(self._clock()) - holder.epoch)
            waiting_hook(self.root, None if holder is None else holder.owner, age, wait)

    def _check_named_owner(self, *, missing: str, other: str) -> None:
        # The cheap check outside the mutex, for the script's messages; the exact one is inside.
        line = self._file.read()
        if line is None:
            self._file.forget()
            raise LockLost(f"{self.lock_path}: {missing}; stop writing and acquire again")
        if line.owner != self.owner:
            self._file.forget()
            raise LockLost(
                f"{self.lock_path}: {other} {line.owner}; stop writing and acquire again"
            )
