"""Whether a lock's owner is provably gone: the one addition distilld makes to the script's rules.

A lock whose owner names a distilld process of this machine that no longer runs, or whose pid now
belongs to a process started after the lock was written, is taken over at once (under the mutex,
exactly as a stale one); any other owner's lock keeps the stale period.
"""

from __future__ import annotations

import os

from .protocol import DIGITS, LockLine, default_owner

# /proc gives a process's start in clock ticks since boot, so it can read up to ~1 s late.
_START_TIME_SLACK_SECONDS = 2


def _process_start_epoch(pid: int) -> float | None:
    """When process ``pid`` started (wall clock), from /proc; None where that cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
        with open("/proc/stat", "rb") as handle:
            boot = next(int(line.split()[1]) for line in handle if line.startswith(b"btime "))
        return boot + int(fields[19]) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError, StopIteration):
        return None


def pid_alive(pid: int) -> bool:
    """Does process ``pid`` of this machine run (someone else's counts)? A pid below 1 is never
    judged dead."""
    if pid <= 0:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def abandoned_owner(line: LockLine) -> str | None:
    """Why a lock is provably abandoned, or None: its owner names a distilld process of this
    machine (``distilld.<host>.<pid>``) and that process is gone, or the pid now belongs to a
    process started after the lock was last written (a reused pid cannot have written it)."""
    prefix = default_owner().rsplit(".", 1)[0] + "."
    if not line.owner.startswith(prefix):
        return None
    pid_text = line.owner[len(prefix):]
    if DIGITS.fullmatch(pid_text.encode()) is None:
        return None
    pid = int(pid_text)
    if pid == os.getpid() or pid <= 0:
        return None
    if not pid_alive(pid):
        return f"its owner, process {pid} of this machine, no longer runs"
    started = _process_start_epoch(pid)
    if started is not None and started > line.epoch + _START_TIME_SLACK_SECONDS:
        return f"process {pid} of this machine started after the lock was written (a reused pid)"
    return None
