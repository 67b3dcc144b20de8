"""Whether a path can be a store for this user: one phrasing per fault, whichever command meets it.

A file given as the store, a store this user may not read, and one it may not write are said
the same way by every command (issue 27: five phrasings of one fault, and a read-only store
reported as a lost lock). Only stat calls: nothing is read or written here.
"""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import StoreError


def is_a_file_line(root: Path) -> str:
    return f"{root} is a file, not a folder: pass the store's folder (or, for `distilld new`, a new path)"


def unreadable_line(root: Path) -> str:
    return (f"{root}: this user may not read the store (permission denied); give it read access "
            f"(`ls -ld {root}`), or pass another store; nothing was changed")


def unwritable_line(root: Path) -> str:
    return (f"{root}: this user may not write the store (permission denied); the command only reads "
            f"it then: give write access (`ls -ld {root}`), or run a preview; nothing was changed")


def check_store_shape(root: Path) -> None:
    """A path that exists must be a folder this user may list: said before any command reads it.
    A missing path is left to the command (`new` creates it, the daemon waits for it)."""
    try:
        if not root.exists():
            return
        is_dir = root.is_dir()
    except PermissionError:
        raise StoreError(unreadable_line(root)) from None
    if not is_dir:
        error = StoreError(is_a_file_line(root))
        error.file = str(root)
        raise error
    if not os.access(root, os.R_OK | os.X_OK):
        error = StoreError(unreadable_line(root))
        error.file = str(root)
        raise error


def require_writable(root: Path) -> None:
    """A command that writes the store says so before it takes the lock or makes a temp file."""
    check_store_shape(root)
    if root.is_dir() and not os.access(root, os.W_OK):
        error = StoreError(unwritable_line(root))
        error.file = str(root)
        raise error
