"""What the daemon's jobs share, as they run on the worker thread: the store's lock, status.json,
the activity log, the store's git, and what the last pass saw.

The jobs themselves: runtime/follow_job.py (follow, reconcile, the commit of agents' changes)
and runtime/scheduled_jobs.py (sync, compaction, lifecycle, report); runtime/job_runner.py runs
one and reports it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..engine.lock import (AcquireKind, AcquireResult, LockState, LockStateKind, StoreLock, lock_status,
                           takeover_words)
from ..errors import LockHeld, LockLost
from ..log import ActivityLog, StatusFile, utc_stamp
from ..policy import Policy
from ..settings import Settings
from ..store.incremental import IncrementalStore
from .scheduler import Schedule, Worker
from .store_git import StoreGit
from .watch_paths import scan_shared
from .watcher import StoreWatcher

class Stopping(Exception):
    """The daemon is shutting down: the job ends after the step it was in."""


@dataclass
class PassResult:
    ok: bool
    summary: str
    details: dict[str, Any] = field(default_factory=dict)


@dataclass
class JobEnv:
    """What the jobs share. Only the worker thread runs jobs, so most of it needs no locking."""

    settings: Settings
    policy: Policy
    store: Path
    owner: str
    status: StatusFile
    activity: ActivityLog
    stop: threading.Event
    lock_changed: threading.Event
    git: StoreGit
    watcher: StoreWatcher | None = None
    worker: Worker | None = None
    schedule: Schedule | None = None
    block_on_lock: bool = False  # --once: a follow waits for the lock instead of coming back later
    lock_wait_seconds: float | None = None  # --once --wait: give up on a held lock after this long
    say: Callable[[str], None] | None = None  # --once: what it waits for, said on stderr too
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)
    incremental: IncrementalStore = field(default_factory=IncrementalStore)  # the last pass's snapshot
    wants_release: bool = False  # a follow is waiting for a distiller to release the lock
    _waiting_for: str | None = None
    _failures: set[str] = field(default_factory=set)
    _breaches: set[str] = field(default_factory=set)
    _lifecycle_state: bool | None = None
    _commit_notes: set[str] = field(default_factory=set)
    _sync_blocked: str | None = None
    unpushed: bool = False  # a commit was made since the last sync: the cycle must push it
    outside_edits: set[str] = field(default_factory=set)  # changed with no lock and no distillation

    def check_stop(self) -> None:
        if self.stop.is_set():
            raise Stopping()

    # -- waiting for a distiller ----------------------------------------------------------

    def note_waiting(self, state: LockState, job: str) -> None:
        owner = state.owner or "?"
        if self._waiting_for != owner:  # one line per wait, not one per poll
            self._waiting_for = owner
            age = f" for {state.age} s" if state.age is not None else ""
            alive = f"; {state.liveness}" if state.liveness else ""
            self.activity.write(f"waiting: lock held by {owner}{age} ({job} runs once it is released{alive})")
            if self.say is not None:
                self.say(f"waiting for {self.store}/.lock, held by {owner}{age}{alive}: {job} runs once it is "
                         f"released, {self._gives_up()}")
        self.status.update(state="waiting", waiting={
            "for": "lock", "owner": owner, "age_seconds": state.age, "job": job, "since": utc_stamp()})

    def clear_waiting(self) -> None:
        if self.status.get("waiting") is not None:
            self.status.update(waiting=None)
        self._waiting_for = None

    def _gives_up(self) -> str:
        if self.lock_wait_seconds is not None:
            return f"or this gives up after {self.lock_wait_seconds:g} s (--wait)"
        return (f"or once it has gone {self.policy.lock.stale_seconds:g} s without a heartbeat (--wait SECONDS "
                "gives up sooner)")

    def lock_state(self) -> LockState:
        return lock_status(self.store, self.policy.lock.stale_seconds)

    def take_lock(self, job: str) -> StoreLock:
        """Take the store's lock for a pass, waiting (and saying for whom) while a distiller holds
        a fresh one. A stale lock is taken over as the protocol allows, and the takeover logged.
        With ``lock_wait_seconds`` set, LockHeld once that long has passed."""
        give_up = None if self.lock_wait_seconds is None else time.monotonic() + self.lock_wait_seconds
        while True:
            self.check_stop()
            lock = StoreLock.from_policy(self.store, self.owner, self.policy.lock)
            try:
                result = lock.acquire(0)
            except LockHeld as held:
                state = self.lock_state()
                if state.owner != held.owner:  # released or changed since: say whom we saw
                    state = LockState(LockStateKind.HELD, held.owner or "(contended)", held.age)
                self.note_waiting(state, job)
                if give_up is not None and time.monotonic() >= give_up:
                    raise
                # Woken by the watcher when .lock changes; the timeout is the fallback look.
                timings = self.policy.lock
                deadline = time.monotonic() + min(timings.poll_seconds * 5, timings.waiting_recheck_seconds)
                if give_up is not None:
                    deadline = min(deadline, give_up)
                while time.monotonic() < deadline and not self.stop.is_set():
                    if self.lock_changed.wait(0.5):
                        break
                self.lock_changed.clear()
                continue
            self.clear_waiting()
            self._tell_taken(result, job)
            return lock

    def try_lock(self, job: str) -> StoreLock | None:
        """One attempt at the store's lock (a dead owner's is taken over); None while it is held."""
        lock = StoreLock.from_policy(self.store, self.owner, self.policy.lock)
        try:
            result = lock.acquire(0)
        except LockHeld:
            return None
        self._tell_taken(result, job)
        return lock

    def _tell_taken(self, result: AcquireResult, job: str) -> None:
        if result.kind is AcquireKind.TOOK_OVER:
            self.activity.write(f"{takeover_words(result, self.policy.lock.stale_seconds)}, for {job}")

    @contextmanager
    def exclusive(self, job: str) -> Iterator[None]:
        """Hold the store's lock around a pass that writes; what changed while it was held is
        distilld's own doing, and the watcher is told so (it must not start a pass again)."""
        lock = self.take_lock(job)
        try:
            before = scan_shared(self.store) if self.watcher is not None else {}
            started = time.time()
            foreign = False
            try:
                yield
            except LockHeld:
                foreign = True
                raise
            finally:
                ended = time.time()
                # The pass hands the lock back itself at its end (same owner); if a distiller got
                # it during the pass, what changed may be theirs: then claim nothing.
                state = self.lock_state()
                foreign = foreign or (state.blocks and state.owner != self.owner)
                if self.watcher is not None and not foreign:
                    self.watcher.record_own(before, scan_shared(self.store), started, ended)
        finally:
            release_lock(lock)


def release_lock(lock: StoreLock | None) -> None:
    if lock is None:
        return
    try:
        lock.release()
    except LockLost:
        pass  # the pass released it already (it took the lock as its own, same owner)


# -- follow / reconcile ------------------------------------------------------------------------


def plural(count: int, word: str) -> str:
    return f"{count} {word}" + ("" if count == 1 else "s")


def listing(items: list[str], limit: int = 3) -> str:
    shown = "; ".join(items[:limit])
    return shown + (f"; and {len(items) - limit} more" if len(items) > limit else "")


def no_store(env: JobEnv) -> PassResult | None:
    """A store that does not exist yet is waited for, not failed on (a fresh install runs first)."""
    if env.store.is_dir():
        return None
    return PassResult(True, f"waiting: no store at {env.store} (`distilld new` creates one)")
