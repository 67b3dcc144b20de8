"""One owner's writes to a store's `.lock`: created atomically, changed only by rename.

* `.lock` is created with link(2) from a complete temp file, so it is never seen half written
  (O_EXCL where the file system has no hard links, like the .ps1's CreateNew);
* an existing `.lock` is replaced by rename, so it never goes missing while someone holds it.
  Callers replace or remove it only while they hold the takeover mutex.

It also remembers the epoch this process last wrote there as this owner, so heartbeat and
release can check under the mutex that the line is still exactly ours.
"""

from __future__ import annotations

import errno
import os
import secrets
from pathlib import Path

from .files import io_error, unlink_quietly, write_new_file
from .protocol import LOCK_FILE, LockLine, read_lock

# One owner, one lock: the epoch this process last wrote is shared by every LockFile of the same
# store and owner, so a pass nested in another (the daemon's job around an action) and the outer
# holder agree on it, and the outer one can still heartbeat and release.
_EPOCHS: dict[tuple[str, str], int | None] = {}

# link(2) errors meaning "this file system has no hard links": fall back to O_EXCL, like the .ps1.
_NO_HARD_LINKS = frozenset({errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.ENOSYS})


class LockFile:
    """The `.lock` of the store at ``root``, as ``owner`` writes it; ``epoch`` is the epoch of the
    line it last wrote there (None once it knows the lock is not its own)."""

    def __init__(self, root: Path, owner: str) -> None:
        self.root = root
        self.owner = owner
        self.path = root / LOCK_FILE
        self._key = (os.path.realpath(root), owner)

    @property
    def epoch(self) -> int | None:
        return _EPOCHS.get(self._key)

    def forget(self) -> None:
        """The lock is not (or no longer) ours."""
        _EPOCHS[self._key] = None

    def read(self) -> LockLine | None:
        return read_lock(self.root)

    def is_ours(self) -> bool:
        """Is `.lock` still exactly the line we last wrote? (Exact only under the mutex.)"""
        return self.epoch is not None and self.read() == LockLine(self.owner, self.epoch)

    def create(self, epoch: int) -> bool:
        """Create `.lock` only if it does not exist, complete when visible; False if it existed."""
        data = LockLine(self.owner, epoch).encode()
        temp = self._temp_name("new")
        try:
            write_new_file(temp, data, exclusive=True)
        except OSError as error:
            raise io_error(temp, "create a temp file for the lock", error) from None
        try:
            os.link(temp, self.path)  # fails if the name exists: the atomic test-and-set
        except FileExistsError:
            return False
        except OSError as error:
            if error.errno not in _NO_HARD_LINKS:
                raise io_error(self.path, "create the lock", error) from None
            if not self._create_exclusive(data):
                return False
        finally:
            unlink_quietly(temp)
        _EPOCHS[self._key] = epoch
        return True

    def replace(self, epoch: int) -> None:
        """Under the mutex: swap in our line by rename, so `.lock` never goes missing."""
        temp = self._temp_name("swap")
        try:
            write_new_file(temp, LockLine(self.owner, epoch).encode(), exclusive=True)
        except OSError as error:
            raise io_error(temp, "create a temp file for the lock", error) from None
        try:
            os.replace(temp, self.path)
        except OSError as error:
            raise io_error(self.path, "replace the lock", error) from None
        finally:
            unlink_quietly(temp)
        _EPOCHS[self._key] = epoch

    def remove(self) -> None:
        """Under the mutex: delete `.lock` (the lock is free)."""
        try:
            os.unlink(self.path)
        except OSError as error:
            raise io_error(self.path, "remove the lock", error) from None
        self.forget()

    def _temp_name(self, kind: str) -> Path:
        return self.root / f".lock.{kind}.{os.getpid()}.{secrets.token_hex(4)}"

    def _create_exclusive(self, data: bytes) -> bool:
        """O_EXCL create for file systems without hard links (the .ps1's CreateNew)."""
        try:
            fd = os.open(
                self.path,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                0o644,
            )
        except FileExistsError:
            return False
        except OSError as error:
            raise io_error(self.path, "create the lock", error) from None
        try:
            try:
                os.write(fd, data)
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as error:
            unlink_quietly(self.path)  # ours and incomplete; readers saw it as held by "?"
            raise io_error(self.path, "write the lock", error) from None
        return True
