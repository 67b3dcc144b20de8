"""Running a write pass under the store lock: take it, check the store may be written
(engine/guard.py), build the context, always release it."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path

from ..engine.context import PassContext
from ..engine.guard import guarded_pass
from ..engine.lock import AcquireKind, StoreLock, default_owner
from ..errors import LockHeld, LockIOError, LockLost, StoreError, StoreRefused
from ..policy import Policy
from ..log import ActivityLog
from ..settings import InstancePaths
from ..store import fs
from ..store.conflicts import marked_files
from ..store.paths import LEDGER, SPINE
from ..store.text import shown
from ..store.readable import unreadable_reason
from ..store.root_access import is_a_file_line, require_writable


def require_store_folder(root: Path) -> None:
    """A missing store, or a path that is a file, is said as such (not as a lock file error)."""
    if not root.exists():
        raise StoreError(f"{root}: no such store (`distilld new {root}` creates an empty one); nothing was changed")
    if not root.is_dir():
        raise StoreError(is_a_file_line(root))


def restore_advice(root: Path, name: str) -> str:
    """How to get ``name`` back: from git only where the store is a git repository."""
    if os.path.lexists(root / ".git"):
        return f"restore it (`git -C {root} checkout -- {name}`, or from a backup)"
    return f"restore it from a backup ({root} is not a git repository, so git cannot give it back)"


def refuse_unreadable_text(root: Path) -> None:
    """A write pass parses and edits SPINE.md and appends to the ledger: one it cannot read as
    text is refused, naming the file, before anything is written."""
    for name in (SPINE, LEDGER):
        why = unreadable_reason(root / name)
        if why:
            error = StoreRefused(f"{root / name} cannot be read as text: {why}. Nothing was changed; "
                                 f"{restore_advice(root, name)} and try again")
            error.file = str(root / name)
            raise error


def take_back_torn_ledger(root: Path) -> str | None:
    """A ledger ending in a line without a line break holds an append that never finished (a
    full disk, a power cut): a line that was never written. It is cut off under the lock before
    anything reads the ledger, and the activity log keeps its bytes; the note says so."""
    torn = fs.drop_torn_tail(root / LEDGER)
    if not torn:
        return None
    note = (f"{LEDGER} ended in a torn line (no line break: an append that never finished, e.g. on a full "
            f"disk); it was taken back, since that line was never written. Its {len(torn)} bytes: {shown(torn)}")
    try:
        ActivityLog(InstancePaths.for_store(root).activity_log, echo=False).write(note)
    except OSError:
        pass  # the note is in the pass's report too
    return note


def refuse_conflict_markers(root: Path) -> None:
    """Conflict-marker lines are never knowledge: a pass would read them as entry text and move
    them on (into Index detail, where no check sees them again). Refused before anything is written."""
    marked = marked_files(root)
    if marked:
        where = ", ".join(f"{path} (line {line})" for path, line in marked[:5])
        more = f" and {len(marked) - 5} more" if len(marked) > 5 else ""
        error = StoreRefused(f"{root}: git conflict markers in {where}{more}. Nothing was changed; resolve "
                             "the conflict by hand (keep the lines you mean, delete the <<<<<<<, ======= "
                             "and >>>>>>> lines), then run the pass again")
        error.file = str(root / marked[0][0])
        raise error


@contextmanager
def store_lock_held(root: Path, policy: Policy, wait: float = 0, owner: str | None = None) -> Iterator[StoreLock]:
    """Hold the store's .lock (never breaking a fresh one), waiting ``wait`` s for a distiller.
    Already held by this owner means an outer pass holds it: that pass releases it, not this one."""
    require_writable(root)  # a read-only store is said as such, not as a lock that was lost
    lock = StoreLock.from_policy(root, owner or default_owner(), policy.lock)
    try:
        taken = lock.acquire(wait)
    except LockHeld as held:
        who = f"{held.owner} for {held.age} s" if held.owner else "contended"
        raise LockHeld(f"{root}/.lock is held ({who}): a distillation is running; nothing was changed. "
                       "Try again later, or pass --wait SECONDS.", held.owner, held.age) from None
    try:
        yield lock
    except BaseException:
        if taken.kind is not AcquireKind.ALREADY_HELD:
            # The pass's own error says what failed (a full disk names the file it could not
            # write); a release that fails after it, on the same full disk, must not hide it.
            try:
                lock.release()
            except (LockLost, LockIOError):
                pass
        raise
    if taken.kind is not AcquireKind.ALREADY_HELD:
        try:
            lock.release()
        except LockLost:
            pass  # taken over as stale meanwhile: the pass already stopped at its heartbeat


@contextmanager
def locked_pass(store: Path, policy: Policy, clock: Callable[[], datetime],
                wait: float = 0, owner: str | None = None) -> Iterator[PassContext]:
    """Hold the store's .lock for the duration of a pass (never breaking a fresh one)."""
    root = store.expanduser().resolve()
    require_store_folder(root)
    with store_lock_held(root, policy, wait, owner) as lock, guarded_pass(root):
        refuse_unreadable_text(root)  # first: binary junk is refused as it is, never cut as a torn line
        torn = take_back_torn_ledger(root)
        refuse_conflict_markers(root)
        context = PassContext(root, lock, clock, policy.limits, notes=[torn] if torn else [])
        context.take_baseline()
        yield context
