"""A file's stamp: its stat data as git compares it, to tell a changed file from an unchanged one
without reading it. A leaf of its own so that the index code (gitstore/index_entry.py) uses it
without loading the whole-store reader (snapshot.py) and the parsers it brings."""

from __future__ import annotations

import os

FileStamp = tuple[int, int, int, int]


def stamp_of(info: os.stat_result) -> FileStamp:
    """What tells a changed file from an unchanged one without reading it (git's own test)."""
    return (info.st_mtime_ns, info.st_ctime_ns, info.st_size, info.st_ino)
