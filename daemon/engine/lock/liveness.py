"""Whether a lock's owner is provably gone: the one addition distilld makes to the script's rules.

A lock whose owner names a distilld process of this machine that no longer runs, or whose pid now
belongs to a process started after the lock was written, is taken over at once (under the mutex,
exactly as a stale one); any other owner's lock keeps the stale period.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

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


def _is_zombie(pid: int) -> bool:
    """A zombie has exited: its parent (a supervisor slow to reap it) keeps only its pid, and the
    lock and files it left are as dead as it is."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().rsplit(b")", 1)[-1].split()[0] == b"Z"
    except (OSError, IndexError):
        return False  # no /proc (macOS) or the process just went: kill(0) already answered


def pid_alive(pid: int) -> bool:
    """Does process ``pid`` of this machine run (someone else's counts; a zombie does not)? A pid
    below 1 is never judged dead."""
    if pid <= 0:
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return not _is_zombie(pid)


@dataclass(frozen=True)
class OwnerLiveness:
    """Whether a lock's owner runs: True or False when this machine can tell, None when it
    cannot (an owner of another machine, or not a distilld process); ``words`` say why."""

    alive: bool | None
    words: str


def owner_liveness(line: LockLine) -> OwnerLiveness:
    """The one liveness decision every path takes (acquire, follow, commit, the jobs, status):
    an owner named ``distilld.<this host>.<pid>`` is alive while that pid runs and was started
    before the lock was last written (a reused pid cannot have written it); any other owner's
    liveness cannot be told here, so its lock keeps the stale period."""
    prefix = default_owner().rsplit(".", 1)[0] + "."
    if not line.owner.startswith(prefix):
        where = "another machine's distilld" if line.owner.startswith("distilld.") else "not a distilld process"
        return OwnerLiveness(None, f"{where}: whether it runs cannot be told from here")
    pid_text = line.owner[len(prefix):]
    if DIGITS.fullmatch(pid_text.encode()) is None:
        return OwnerLiveness(None, "no process id in its name: whether it runs cannot be told")
    pid = int(pid_text)
    if pid == os.getpid():
        return OwnerLiveness(True, "this process")
    if pid <= 0:
        return OwnerLiveness(None, "no process id in its name: whether it runs cannot be told")
    if not pid_alive(pid):
        return OwnerLiveness(False, f"its owner, process {pid} of this machine, no longer runs")
    started = _process_start_epoch(pid)
    if started is not None and started > line.epoch + _START_TIME_SLACK_SECONDS:
        return OwnerLiveness(False, f"process {pid} of this machine started after the lock was written "
                                    "(a reused pid)")
    return OwnerLiveness(True, f"process {pid} of this machine runs")


def abandoned_owner(line: LockLine) -> str | None:
    """Why a lock is provably abandoned (its owner no longer runs), or None."""
    liveness = owner_liveness(line)
    return liveness.words if liveness.alive is False else None
