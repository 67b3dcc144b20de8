"""The store lock: the distiller's owner-checked `.lock` protocol and its `.status` line.

distilld and the distiller's own bin/distill-lock.sh / .ps1 take turns on one store, so this
package follows that script step by step (STORE-FORMAT.md 2.2): the same file names, the same
`.lock` line, the same persistent flock mutex `.lock.takeover`, the same staleness rule and the
same three `.status` forms (STORE-FORMAT.md 1.11, 2.1). Its parts:

* protocol.py   the `.lock` line: file names, owner names, parsing, the ISO stamp
* liveness.py   whether an owner runs: the one liveness decision every path uses
* lock_file.py  creating and replacing `.lock` (link(2) from a complete temp file, rename)
* mutex.py      the `.lock.takeover` flock mutex
* status.py     the `.status` line and the `status` answer
* acquire.py    one attempt at taking the lock: create, refresh, or take over a stale one
* store_lock.py StoreLock: acquire (waiting), heartbeat, release

Its timings come from the policy's [lock] table (policy.LockTimings). These are the lock
protocol's own files; nothing here writes store knowledge.
"""

from __future__ import annotations

from ...errors import LockHeld, LockIOError, LockLost, LockUsageError
from .acquire import AcquireKind, AcquireResult, takeover_words
from .liveness import OwnerLiveness, abandoned_owner, owner_liveness, pid_alive
from .mutex import MutexBusy, TakeoverMutex
from .protocol import (
    LOCK_FILE,
    MUTEX_FILE,
    Clock,
    LockLine,
    check_owner,
    default_owner,
    format_iso,
    read_lock,
)
from .status import STATUS_FILE, LockState, LockStateKind, StatusLine, lock_status
from .store_lock import StoreLock, TakeoverHook, WaitingHook

# Set by the command line (`lock.takeover_hook = ...`); StoreLock reads it at each takeover.
takeover_hook: TakeoverHook | None = None
# Set by the command line too; StoreLock calls it once when an acquire starts waiting for a holder.
waiting_hook: WaitingHook | None = None

__all__ = [
    "LOCK_FILE",
    "MUTEX_FILE",
    "STATUS_FILE",
    "AcquireKind",
    "AcquireResult",
    "Clock",
    "LockHeld",
    "LockIOError",
    "LockLine",
    "LockLost",
    "LockState",
    "LockStateKind",
    "LockUsageError",
    "MutexBusy",
    "OwnerLiveness",
    "StatusLine",
    "StoreLock",
    "TakeoverHook",
    "TakeoverMutex",
    "abandoned_owner",
    "check_owner",
    "default_owner",
    "format_iso",
    "lock_status",
    "owner_liveness",
    "pid_alive",
    "read_lock",
    "takeover_hook",
    "takeover_words",
    "waiting_hook",
    "WaitingHook",
]
