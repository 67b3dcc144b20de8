"""The only module that writes the store: atomic writes that keep line endings.

Every write lands in a temporary file in the same directory, is flushed to disk, and then
renamed over its target, so a reader (or a crash) sees the old bytes or the new ones, never
a torn file.
"""

from __future__ import annotations

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


def atomic_write(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically and durably."""
    directory = path.parent
    directory.mkdir(parents=True, exist_ok=True)
    temporary = directory / f".{path.name}.distilld-tmp.{os.getpid()}.{secrets.token_hex(4)}"
    try:
        with open(temporary, "xb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, path)
    finally:
        if temporary.exists():
            temporary.unlink()
    _fsync_directory(directory)


def write_text_keeping_endings(path: Path, text_lf: str) -> bytes:
    """Write LF text, converted to the line ending the existing file uses; returns the bytes."""
    try:
        ending = line_ending_of(path.read_bytes())
    except FileNotFoundError:
        ending = b"\n"
    data = with_line_ending(encode(text_lf), ending)
    atomic_write(path, data)
    return data
