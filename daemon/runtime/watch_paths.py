"""Which paths in the store the daemon follows, and a file's identity (inode, size, mtime).

What counts: the shared set (SPINE.md, CATALOG.md, the tier folders, evidence/, archive/, inbox/),
Markdown files and folders only. `.git/`, `data/`, `local/`, dotfiles, editor temp and swap
files are ignored. `.lock` is followed separately, to learn when a distiller releases it.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Literal

from ..store.paths import CATALOG, SPINE, TIERS

SHARED_TOPS = frozenset({*TIERS, "evidence", "archive", "inbox"})
ROOT_FILES = frozenset({SPINE, CATALOG})
LOCK_NAME = ".lock"
TEMP_SUFFIXES = ("~", ".swp", ".swo", ".swx", ".tmp", ".temp", ".part", ".crdownload", ".bak", ".orig")

Kind = Literal["content", "lock"]
Signature = tuple[int, int, int] | None  # (inode, size, mtime_ns); None: the path does not exist


def classify(rel: str, is_directory: bool) -> Kind | None:
    """What a store-relative path means to the daemon, or None when it does not matter."""
    if rel == LOCK_NAME:
        return "lock"
    if not rel or rel == "." or rel.startswith(".." + os.sep) or rel == "..":
        return None
    parts = rel.split(os.sep)
    name = parts[-1]
    if any(part.startswith(".") for part in parts):
        return None  # .git/, dotfiles, hidden editor files (.#x.md, .x.md.swp)
    if name.endswith(TEMP_SUFFIXES) or name == "4913" or (name.startswith("#") and name.endswith("#")):
        return None  # editor temp and swap files (4913 is vim's write probe)
    if len(parts) == 1:
        return "content" if name in ROOT_FILES or (is_directory and name in SHARED_TOPS) else None
    if parts[0] not in SHARED_TOPS:
        return None  # data/, local/, bin/ and anything else distilld does not sync
    return "content" if is_directory or name.endswith(".md") else None


def signature(path: Path) -> Signature:
    try:
        info = os.lstat(path)
    except OSError:
        return None
    return (info.st_ino, info.st_size, info.st_mtime_ns)


def scan_shared(root: Path) -> dict[str, Signature]:
    """Identity of every file and folder in the shared set (stat only; no content is read)."""
    found: dict[str, Signature] = {}
    for name in ROOT_FILES:
        found[name] = signature(root / name)
    pending = [top for top in SHARED_TOPS if (root / top).is_dir()]
    for top in SHARED_TOPS:
        found[top] = signature(root / top)
    while pending:
        relative = pending.pop()
        try:
            with os.scandir(root / relative) as entries:
                children = list(entries)
        except OSError:
            continue
        for entry in children:
            if entry.name.startswith("."):
                continue
            child = f"{relative}/{entry.name}"
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            found[child] = (info.st_ino, info.st_size, info.st_mtime_ns)
            if entry.is_dir(follow_symlinks=False):
                pending.append(child)
    return found
