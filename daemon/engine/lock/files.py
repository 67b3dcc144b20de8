"""How the lock writes its own small files: complete and synced before they get a public name.

These are the lock protocol's own files (`.lock`, `.status` and their temp files); nothing here
writes store knowledge, so they do not go through store/fs.py.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

from ...errors import LockIOError


def unlink_quietly(path: Path) -> None:
    with contextlib.suppress(OSError):  # cleanup must not hide the error that got us here
        os.unlink(path)


def write_new_file(path: Path, data: bytes, *, exclusive: bool) -> None:
    """Create ``path`` holding ``data``, synced; removed again if writing fails."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
    flags |= os.O_EXCL if exclusive else os.O_TRUNC
    fd = os.open(path, flags, 0o644)
    try:
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)  # complete on disk before it gets its public name
        finally:
            os.close(fd)
    except BaseException:
        unlink_quietly(path)  # we created it, so a failed write leaves nothing behind
        raise


def io_error(path: Path, doing: str, error: OSError) -> LockIOError:
    return LockIOError(
        f"{path}: cannot {doing} ({error.strerror or error}); treat the lock as lost, "
        "and check the store directory's permissions and free space"
    )
