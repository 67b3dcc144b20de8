"""The takeover mutex `.lock.takeover`: a persistent file held with flock(2), as the script does.

The file is never deleted, truncated or written: the OS lock is the whole mutex, and the kernel
drops it when a holder dies, so a killed holder cannot block anyone.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

from ...errors import UnsafeStore
from .files import io_error
from .protocol import MUTEX_FILE


class MutexBusy(Exception):
    """The `.lock.takeover` mutex stayed held for the whole takeover wait."""


class TakeoverMutex:
    """`.lock.takeover` of the store at ``root``, tried every ``poll_seconds`` for up to
    ``wait_seconds`` (waits use the monotonic clock, so a frozen test clock cannot make one endless)."""

    def __init__(self, root: Path, wait_seconds: float, poll_seconds: float) -> None:
        self.path = root / MUTEX_FILE
        self.wait_seconds = wait_seconds
        self.poll_seconds = poll_seconds

    def refuse_link(self) -> None:
        """A link in the mutex's place can never be opened (O_NOFOLLOW): refused before the lock
        is taken, so a pass leaves no `.lock` it could not give back."""
        try:
            target = os.readlink(self.path)
        except OSError:
            return  # not a link (or absent: created on first use)
        raise UnsafeStore(f"{self.path} is a symbolic link (to {target}): distilld never opens the lock's "
                          "takeover mutex through a link, so nothing was written and no lock was taken. "
                          f"Remove the link (`rm {self.path}`; a plain file is made in its place), then run "
                          "the command again.")

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Hold the mutex for the body; raises MutexBusy when the wait runs out."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        except OSError as error:
            raise io_error(self.path, "open the takeover mutex", error) from None
        try:
            self._lock(fd)
            try:
                yield
            finally:
                with contextlib.suppress(OSError):  # closing the fd below unlocks anyway
                    fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def _lock(self, fd: int) -> None:
        deadline = time.monotonic() + self.wait_seconds
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise MutexBusy() from None
                time.sleep(min(self.poll_seconds, remaining))
            except OSError as error:
                raise io_error(self.path, "lock the takeover mutex", error) from None
