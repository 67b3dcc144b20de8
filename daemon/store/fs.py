"""The only module that writes the store: atomic writes that keep line endings.

Every write lands in a temporary file in the same directory, is flushed to disk, and then
renamed over its target, so a reader (or a crash) sees the old bytes or the new ones, never
a torn file. An append (the ledger, a journal) is all or nothing: a write that fails part-way
is cut back to the old length, and a final line without a line break is a write that never
finished, which the next append takes back and no reader builds on.

No write goes through a symbolic link. While a pass runs, its store root is registered
(``confined_to``); every path under it is reached from the root one component at a time with
``O_NOFOLLOW | O_DIRECTORY`` and the ``dir_fd`` forms, so a folder swapped for a link (even
after the pass's own checks) makes the write fail with UnsafeStore instead of landing outside
the store. The file itself is opened with ``O_NOFOLLOW`` and a link in its place is refused.

Temporary files are named ``.<name>.distilld-tmp.<pid>.<hex>`` (``temp_name``), so a sweep can
tell ours, and whose, from anything else.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from collections.abc import Callable
from pathlib import Path

from .confine import (  # noqa: F401 - confined_to and link_refusal are fs's to offer
    _exists,
    _open_file,
    _parent,
    _refuse_link_in_place,
    confined_to,
    link_refusal,
)
from .text import encode, whole_lines

# distilld's temp files: `.<name>.distilld-tmp.<pid>.<hex>`; group 1 is the writer's pid.
TEMP_RE = re.compile(r"^\..*\.distilld-tmp\.([0-9]+)\.[0-9a-f]+$")

__all__ = ["TEMP_RE", "HardLinked", "append_bytes", "append_line", "appended", "atomic_write", "confined_to",
           "copy_exact", "drop_torn_tail", "finish_interrupted_move", "fsync_file", "line_ending_of",
           "link_refusal", "move_exact", "patch_in_place", "remove", "sync_barrier", "temp_name",
           "whole_lines", "with_line_ending", "write_text_keeping_endings"]


def temp_name(name: str) -> str:
    """The temp name for a file called ``name``: hidden, marked as distilld's, with our pid."""
    import secrets  # here: `check` imports this module but never writes

    return f".{name}.distilld-tmp.{os.getpid()}.{secrets.token_hex(4)}"



def _write_some(fd: int, data: memoryview) -> int:
    """The one low-level write of every store write (tests put a full disk here)."""
    return os.write(fd, data)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[_write_some(fd, view):]


def _named(error: OSError, path: Path | str, what: str) -> OSError:
    """``error`` naming the file and what became of the write (os.write's own error names none)."""
    reason = error.strerror or str(error)
    return OSError(error.errno, f"{reason}; {what}", str(path))


def _write_file(name: str, dir_fd: int, flags: int, data: bytes, durable: bool, mode: int | None = None) -> None:
    """Open ``name`` in ``dir_fd`` (never through a link), write ``data`` whole, sync, close."""
    fd = _open_file(name, dir_fd, flags)
    try:
        _write_all(fd, data)
        if durable:
            os.fsync(fd)
        if mode is not None:
            os.fchmod(fd, mode)
    finally:
        os.close(fd)


def _read_existing(path: Path) -> bytes | None:
    """The file's bytes, never through a link; None when it does not exist."""
    try:
        with _parent(path) as (dir_fd, name):
            _refuse_link_in_place(path, name, dir_fd)
            fd = _open_file(name, dir_fd, os.O_RDONLY)
    except FileNotFoundError:
        return None
    with os.fdopen(fd, "rb") as handle:
        return handle.read()


def line_ending_of(raw: bytes) -> bytes:
    """CRLF when every line break of ``raw`` is CRLF, else LF."""
    breaks = raw.count(b"\n")
    return b"\r\n" if breaks and raw.count(b"\r\n") == breaks else b"\n"


def with_line_ending(text_lf: bytes, ending: bytes) -> bytes:
    return text_lf if ending == b"\n" else text_lf.replace(b"\n", ending)


class ChangedMeanwhile(Exception):
    """The file was no longer as the writer last saw it when its new bytes were ready: nothing
    was replaced (see ``atomic_write``'s ``unchanged``)."""


def atomic_write(path: Path, data: bytes, durable: bool = True, mode: int | None = None,
                 unchanged: Callable[[], bool] | None = None) -> None:
    """Replace ``path`` with ``data`` atomically and durably (with permission bits ``mode``
    when given: the status file and service units are written this way too).

    ``durable=False`` leaves the flush to a later ``sync_barrier``: for a plan whose journal
    already holds these exact bytes, so a write lost to a power cut is simply done again.
    ``unchanged`` is asked once the new bytes are on disk, right before they replace the file:
    a program that does not take the store's lock may append to the file while they are being
    flushed (tens of milliseconds), and the rename would then drop its lines with the old inode.
    When it says no, nothing is replaced and ChangedMeanwhile is raised.
    """
    with _parent(path, create=True) as (dir_fd, name):
        _refuse_link_in_place(path, name, dir_fd)
        temporary = temp_name(name)
        try:
            _write_file(temporary, dir_fd, os.O_WRONLY | os.O_CREAT | os.O_EXCL, data, durable, mode)
            if unchanged is not None and not unchanged():
                raise ChangedMeanwhile(str(path))
            os.replace(temporary, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except OSError as error:
            if error.filename is not None:
                raise
            raise _named(error, path, "nothing of it was written, the file is as it was") from None
        finally:
            if _exists(temporary, dir_fd):
                os.unlink(temporary, dir_fd=dir_fd)
        if durable:
            os.fsync(dir_fd)


def _whole_length(fd: int, size: int) -> int:
    """The length of the file's whole lines: up to and with its last line break. A final line
    without one is a write that never finished (a full disk, a power cut), never a line."""
    end = size
    while end > 0:
        start = max(0, end - 4096)
        block = os.pread(fd, end - start, start)
        found = block.rfind(b"\n")
        if found >= 0:
            return start + found + 1
        end = start
    return 0


class HardLinked(OSError):
    """A file appended in place has another name: its bytes would change outside the store."""


def _refuse_hard_link(path: Path, fd: int) -> None:
    links = os.fstat(fd).st_nlink
    if links > 1:
        raise HardLinked(errno.EMLINK, f"it has {links} hard links, so appending to it in place would change "
                         f"the same bytes under its other name{'s' if links > 2 else ''} too; nothing was "
                         f"written. Find the other name with `find / -xdev -samefile {path}`, then make "
                         "this file a copy of its own (`cp -p FILE FILE.new && mv FILE.new FILE`) and run "
                         "the command again", str(path))


def _append(path: Path, chunk: bytes, durable: bool, header: bytes = b"") -> bool:
    """Append ``chunk`` all or nothing; True when the file was created by this call.

    A torn final line (no line break) is taken back first, so nothing is ever built on it; a
    new file starts with ``header``. When any part of the write fails (a full disk, a short
    write), the file is cut back to its old length and synced, and the error names the file.
    """
    with _parent(path, create=True) as (dir_fd, name):
        _refuse_link_in_place(path, name, dir_fd)
        created = not _exists(name, dir_fd)
        # O_APPEND: the bytes land at the end even if another client appended meanwhile.
        fd = _open_file(name, dir_fd, os.O_RDWR | os.O_APPEND | os.O_CREAT)
        try:
            _refuse_hard_link(path, fd)
            size = os.fstat(fd).st_size
            keep = _whole_length(fd, size)
            # A new file, or one whose only line was torn, starts with the header.
            data = (header if created or (keep == 0 and size > 0) else b"") + chunk
            try:
                if keep != size:
                    os.ftruncate(fd, keep)
                _write_all(fd, data)
                if durable:
                    os.fsync(fd)
            except OSError as error:
                _take_back(fd, keep)
                if created:
                    os.unlink(name, dir_fd=dir_fd)
                raise _named(error, path, "the append was taken back, so the file is as it was (free "
                             "space or fix the cause, then run the command again)") from None
        finally:
            os.close(fd)
        if created:
            if durable:
                os.fsync(dir_fd)
    return created


def _take_back(fd: int, length: int) -> None:
    """Cut a failed append back to ``length``. Cutting needs no free space; if even that fails,
    the torn tail has no line break, and every reader and the next append drop it."""
    try:
        os.ftruncate(fd, length)
        os.fsync(fd)
    except OSError:
        pass


def append_bytes(path: Path, data: bytes, durable: bool = True) -> None:
    """Append whole lines to a file this program writes itself (a journal): no read of the
    file's body first, so appending stays cheap however long it grows."""
    _append(path, data, durable)


def drop_torn_tail(path: Path) -> bytes:
    """Cut a final line without a line break off ``path`` (a write that never finished) and
    return its bytes; b"" when the file ends whole or does not exist. The caller holds the lock."""
    # Looked at read-only first: a file opened for writing is reported by the watch as written
    # (inotify's close-after-write) even when nothing was cut, and the daemon would follow its own
    # look at the ledger again and again.
    for mode in (os.O_RDONLY, os.O_RDWR):
        try:
            with _parent(path) as (dir_fd, name):
                _refuse_link_in_place(path, name, dir_fd)
                fd = _open_file(name, dir_fd, mode)
        except FileNotFoundError:
            return b""
        try:
            size = os.fstat(fd).st_size
            keep = _whole_length(fd, size)
            if keep == size:
                return b""
            if mode == os.O_RDWR:
                torn = os.pread(fd, size - keep, keep)
                os.ftruncate(fd, keep)
                os.fsync(fd)
                return torn
        finally:
            os.close(fd)
    return b""  # not reached: the second look either finds the file whole or cuts it


def remove(path: Path) -> None:
    """Delete a file durably (a revert removing what a migration created)."""
    with _parent(path) as (dir_fd, name):
        os.unlink(name, dir_fd=dir_fd)
        os.fsync(dir_fd)


def sync_barrier() -> None:
    """Everything written so far reaches the disk (one sync instead of an fsync per file)."""
    os.sync()


def write_text_keeping_endings(path: Path, text_lf: str) -> bytes:
    """Write LF text, converted to the line ending the existing file uses; returns the bytes."""
    existing = _read_existing(path)
    ending = line_ending_of(existing) if existing is not None else b"\n"
    data = with_line_ending(encode(text_lf), ending)
    atomic_write(path, data)
    return data


def fsync_file(path: Path) -> None:
    with _parent(path) as (dir_fd, name):
        fd = _open_file(name, dir_fd, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def append_line(path: Path, line: str, header: str = "", durable: bool = True) -> None:
    """Append one line durably and all or nothing; a new file starts with ``header``.

    A torn final line (no line break) is a write that never finished: it is taken back, never
    finished or built on. The line takes the file's own ending. ``durable=False`` skips the
    fsync, for journal lines that only speed a resume up (every step they record is
    idempotent). A line holding a line break is refused: it would become two lines, and a
    ledger can never be mended.
    """
    if "\n" in line or "\r" in line:
        raise ValueError(f"{path}: refusing to append a line holding a line break: {line[:70]!r}")
    existing = _read_existing(path)
    ending = line_ending_of(whole_lines(existing)) if existing else b"\n"
    _append(path, encode(line) + ending, durable, with_line_ending(encode(header), ending))


def appended(existing: bytes | None, line: str, header: str) -> bytes:
    """The whole file ``append_line`` leaves from one holding ``existing`` (None: no file yet)."""
    kept = whole_lines(existing) if existing else b""
    ending = line_ending_of(kept) if kept else b"\n"
    starts = existing is None or (existing != b"" and kept == b"")
    return (with_line_ending(encode(header), ending) if starts else kept) + encode(line) + ending


def move_exact(source: Path, target: Path) -> None:
    """Move a file byte for byte (a rename: the bytes are never rewritten); never overwrite."""
    with _parent(source) as (source_fd, source_name), _parent(target, create=True) as (target_fd, target_name):
        _refuse_link_in_place(source, source_name, source_fd)
        if _exists(target_name, target_fd):
            raise FileExistsError(f"{target} already exists; refusing to overwrite it")
        try:
            # link() fails if the name exists, where rename() would silently replace a file an
            # old client wrote in the meantime; the unlink then completes the move.
            os.link(source_name, target_name, src_dir_fd=source_fd, dst_dir_fd=target_fd,
                    follow_symlinks=False)
            os.unlink(source_name, dir_fd=source_fd)
        except FileExistsError:
            raise FileExistsError(f"{target} appeared meanwhile; refusing to overwrite it") from None
        except OSError as error:
            if error.errno not in (errno.EPERM, errno.ENOTSUP, errno.EXDEV, errno.EMLINK):
                raise
            # a file system without hard links: the checked rename
            os.rename(source_name, target_name, src_dir_fd=source_fd, dst_dir_fd=target_fd)
        os.fsync(target_fd)
        if os.path.abspath(source.parent) != os.path.abspath(target.parent):
            os.fsync(source_fd)


def finish_interrupted_move(source: Path, target: Path) -> None:
    """A move killed between its link and its unlink leaves one file under two names: drop the
    old name. Any other pair of files is left for the caller to judge."""
    try:
        with _parent(source) as (source_fd, source_name), _parent(target) as (target_fd, target_name):
            first = os.stat(source_name, dir_fd=source_fd, follow_symlinks=False)
            second = os.stat(target_name, dir_fd=target_fd, follow_symlinks=False)
            if (first.st_dev, first.st_ino) == (second.st_dev, second.st_ino) and stat.S_ISREG(first.st_mode):
                os.unlink(source_name, dir_fd=source_fd)
                os.fsync(source_fd)
    except FileNotFoundError:
        pass


def copy_exact(source: Path, target: Path, durable: bool = True) -> None:
    """Copy a file's bytes to a new path (a legacy restore is a copy, never a move).

    ``durable=False`` leaves the flush to a ``sync_barrier`` (a backup of many files).
    """
    with _parent(target, create=True) as (dir_fd, name):
        if _exists(name, dir_fd):
            raise FileExistsError(f"{target} already exists; refusing to overwrite it")
        data = _read_existing(source)
        if data is None:
            raise FileNotFoundError(errno.ENOENT, "no such file", str(source))
        _write_file(name, dir_fd, os.O_WRONLY | os.O_CREAT | os.O_EXCL, data, durable)
        if durable:
            os.fsync(dir_fd)


def patch_in_place(path: Path, offset: int, old: bytes, new: bytes, durable: bool = True) -> None:
    """Overwrite ``old`` at ``offset`` with ``new`` of the same length (a checklist tick): one
    small write that cannot tear a line. Refuses when the bytes there are not ``old``."""
    if len(old) != len(new):
        raise ValueError("patch_in_place keeps the file's length: old and new must be as long")
    with _parent(path) as (dir_fd, name):
        fd = _open_file(name, dir_fd, os.O_RDWR)
    with os.fdopen(fd, "r+b") as handle:
        handle.seek(offset)
        if handle.read(len(old)) != old:
            raise ValueError(f"{path}: unexpected bytes at offset {offset}; not patched")
        handle.seek(offset)
        handle.write(new)
        handle.flush()
        if durable:
            os.fsync(handle.fileno())
