"""The only module that writes the store: atomic writes that keep line endings.

Every write lands in a temporary file in the same directory, is flushed to disk, and then
renamed over its target, so a reader (or a crash) sees the old bytes or the new ones, never
a torn file.
"""

from __future__ import annotations

import errno
import os
import secrets
from pathlib import Path

from .text import encode


def line_ending_of(raw: bytes) -> bytes:
    """CRLF when every line break of ``raw`` is CRLF, else LF."""
    breaks = raw.count(b"\n")
    return b"\r\n" if breaks and raw.count(b"\r\n") == breaks else b"\n"


def with_line_ending(text_lf: bytes, ending: bytes) -> bytes:
    return text_lf if ending == b"\n" else text_lf.replace(b"\n", ending)


def _fsync_directory(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, data: bytes, durable: bool = True, mode: int | None = None) -> None:
    """Replace ``path`` with ``data`` atomically and durably (with permission bits ``mode``
    when given: the status file and service units are written this way too).

    ``durable=False`` leaves the flush to a later ``sync_barrier``: for a plan whose journal
    already holds these exact bytes, so a write lost to a power cut is simply done again.
    """
    directory = path.parent
    directory.mkdir(parents=True, exist_ok=True)
    temporary = directory / f".{path.name}.distilld-tmp.{os.getpid()}.{secrets.token_hex(4)}"
    try:
        with open(temporary, "xb") as handle:
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(temporary, mode)
        os.replace(temporary, path)
    finally:
        if temporary.exists():
            temporary.unlink()
    if durable:
        _fsync_directory(directory)


def append_bytes(path: Path, data: bytes, durable: bool = True) -> None:
    """Append bytes to a file this program writes itself (a journal it knows ends with a line
    break): no read of the file first, so appending stays cheap however long it grows."""
    with open(path, "ab") as handle:
        handle.write(data)
        handle.flush()
        if durable:
            os.fsync(handle.fileno())


def remove(path: Path) -> None:
    """Delete a file durably (a revert removing what a migration created)."""
    path.unlink()
    _fsync_directory(path.parent)


def sync_barrier() -> None:
    """Everything written so far reaches the disk (one sync instead of an fsync per file)."""
    os.sync()


def write_text_keeping_endings(path: Path, text_lf: str) -> bytes:
    """Write LF text, converted to the line ending the existing file uses; returns the bytes."""
    try:
        ending = line_ending_of(path.read_bytes())
    except FileNotFoundError:
        ending = b"\n"
    data = with_line_ending(encode(text_lf), ending)
    atomic_write(path, data)
    return data


def fsync_file(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def append_line(path: Path, line: str, header: str = "", durable: bool = True) -> None:
    """Append one line durably; a new file starts with ``header``.

    A file without a final newline gets one first, so the line never joins its neighbour; the
    line takes the file's own ending. ``durable=False`` skips the fsync, for journal lines that
    only speed a resume up (every step they record is idempotent).
    """
    try:
        existing = path.read_bytes()
    except FileNotFoundError:
        existing = None
    ending = line_ending_of(existing) if existing else b"\n"
    chunk = b""
    if existing is None:
        chunk += with_line_ending(encode(header), ending)
    elif existing and not existing.endswith(b"\n"):
        chunk += ending
    chunk += encode(line) + ending
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "ab") as handle:
        handle.write(chunk)
        handle.flush()
        if durable:
            os.fsync(handle.fileno())
    if existing is None and durable:
        _fsync_directory(path.parent)


def move_exact(source: Path, target: Path) -> None:
    """Move a file byte for byte (a rename: the bytes are never rewritten); never overwrite."""
    if target.exists() or target.is_symlink():
        raise FileExistsError(f"{target} already exists; refusing to overwrite it")
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        # link() fails if the name exists, where rename() would silently replace a file an
        # old client wrote in the meantime; the unlink then completes the move.
        os.link(source, target)
        os.unlink(source)
    except FileExistsError:
        raise FileExistsError(f"{target} appeared meanwhile; refusing to overwrite it") from None
    except OSError as error:
        if error.errno not in (errno.EPERM, errno.ENOTSUP, errno.EXDEV, errno.EMLINK):
            raise
        os.rename(source, target)  # a file system without hard links: the checked rename
    _fsync_directory(target.parent)
    if source.parent != target.parent:
        _fsync_directory(source.parent)


def finish_interrupted_move(source: Path, target: Path) -> None:
    """A move killed between its link and its unlink leaves one file under two names: drop the
    old name. Any other pair of files is left for the caller to judge."""
    try:
        if os.path.samefile(source, target):
            os.unlink(source)
            _fsync_directory(source.parent)
    except FileNotFoundError:
        pass


def copy_exact(source: Path, target: Path, durable: bool = True) -> None:
    """Copy a file's bytes to a new path (a legacy restore is a copy, never a move).

    ``durable=False`` leaves the flush to a ``sync_barrier`` (a backup of many files).
    """
    if target.exists() or target.is_symlink():
        raise FileExistsError(f"{target} already exists; refusing to overwrite it")
    data = source.read_bytes()
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "xb") as handle:
        handle.write(data)
        handle.flush()
        if durable:
            os.fsync(handle.fileno())
    if durable:
        _fsync_directory(target.parent)


def patch_in_place(path: Path, offset: int, old: bytes, new: bytes, durable: bool = True) -> None:
    """Overwrite ``old`` at ``offset`` with ``new`` of the same length (a checklist tick): one
    small write that cannot tear a line. Refuses when the bytes there are not ``old``."""
    if len(old) != len(new):
        raise ValueError("patch_in_place keeps the file's length: old and new must be as long")
    with open(path, "r+b") as handle:
        handle.seek(offset)
        if handle.read(len(old)) != old:
            raise ValueError(f"{path}: unexpected bytes at offset {offset}; not patched")
        handle.seek(offset)
        handle.write(new)
        handle.flush()
        if durable:
            os.fsync(handle.fileno())
