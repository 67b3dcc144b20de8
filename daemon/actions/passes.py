"""Running a write pass under the store lock: take it, check the store may be written
(engine/guard.py), build the context, always release it."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from ..engine.context import PassContext
from ..engine.guard import guarded_pass
from ..engine.lock import AcquireKind, StoreLock, default_owner
from ..errors import LockHeld, LockLost
from ..policy import Policy


@contextmanager
def locked_pass(store: Path, policy: Policy, clock: Callable[[], datetime],
                wait: float = 0, owner: str | None = None) -> Iterator[PassContext]:
    """Hold the store's .lock for the duration of a pass (never breaking a fresh one)."""
    root = store.expanduser().resolve()
    lock = StoreLock.from_policy(root, owner or default_owner(), policy.lock)
    try:
        taken = lock.acquire(wait)
    except LockHeld as held:
        who = f"{held.owner} for {held.age} s" if held.owner else "contended"
        raise LockHeld(f"{root}/.lock is held ({who}): a distillation is running; nothing was changed. "
                       "Try again later, or pass --wait SECONDS.", held.owner, held.age) from None
    try:
        with guarded_pass(root):
            context = PassContext(root, lock, clock, policy.caps, policy.spine.entry_target_bytes)
            context.take_baseline()
            yield context
    finally:
        # Already held by this owner means an outer pass (the daemon's) holds it: that pass
        # releases it, not this nested one.
        if taken.kind is not AcquireKind.ALREADY_HELD:
            try:
                lock.release()
            except LockLost:
                pass  # taken over as stale meanwhile: the pass already stopped at its heartbeat
