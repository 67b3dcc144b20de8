"""One daemon per store: an flock on a file in the runtime directory, held for the process's life.

The kernel drops the lock when the process dies, however it dies, so there is no stale pid
file to clean up; the pid written into the file is only there to name the holder.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from ..errors import AlreadyRunning


class InstanceLock:
    def __init__(self, path: Path) -> None:
        self.path = path
        self._fd: int | None = None

    def acquire(self, store: Path) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            pid = holder_pid(self.path)
            who = f" (pid {pid})" if pid else ""
            raise AlreadyRunning(f"another distilld already follows {store}{who}; "
                                 "`distilld status` shows what it is doing") from None
        os.ftruncate(fd, 0)
        os.write(fd, f"{os.getpid()}\n".encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing drops the flock
            self._fd = None


def holder_pid(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None


def running_pid(path: Path) -> int | None:
    """The pid of the daemon holding ``path``, or None when nobody holds it (probe, then let go)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return holder_pid(path) or -1
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)
