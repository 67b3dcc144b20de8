"""Folders in a store that distilld does not manage (``topics/``, ``private/`` beside the five
tiers): never moved, cataloged or archived, and not synced unless the setting
``git.extra_folders`` names them. Said by init, status and check, so nothing is silently left
behind on one machine."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import NamedTuple

from .paths import LOCAL_DIRS, SHARED_DIRS

_FOLDER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


class UnmanagedFolder(NamedTuple):
    name: str
    files: int
    synced: bool  # named in git.extra_folders: tracked and synced, still never maintained

    def describe(self) -> str:
        count = f"{self.files} file{'s' if self.files != 1 else ''}"
        if self.synced:
            return f"synced as it is (git.extra_folders), not maintained: {self.name}/ ({count})"
        return f"not synced: {self.name}/ ({count}); add it to git.extra_folders to sync it"


def check_extra_folder(name: str) -> str:
    """A valid git.extra_folders entry: one top-level folder that is not the store's own."""
    if not _FOLDER_NAME.fullmatch(name) or name in SHARED_DIRS or name in LOCAL_DIRS:
        raise ValueError(f"{name!r} cannot be an extra folder: give the name of one top-level folder of the "
                         f"store that is not {', '.join((*SHARED_DIRS, *LOCAL_DIRS))} and not a dotfile")
    return name


def _count_files(folder: Path) -> int:
    count = 0
    for _, dirs, files in os.walk(folder):
        dirs[:] = [d for d in dirs if not d.startswith(".")]
        count += sum(1 for f in files if not f.startswith("."))
    return count


def unmanaged_folders(root: Path, extra: tuple[str, ...] = ()) -> list[UnmanagedFolder]:
    """Every top-level folder of ``root`` that is not a shared or local store folder."""
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return []
    found = []
    for entry in entries:
        if entry.name.startswith(".") or entry.name in SHARED_DIRS or entry.name in LOCAL_DIRS:
            continue
        if entry.is_dir(follow_symlinks=False):
            found.append(UnmanagedFolder(entry.name, _count_files(Path(entry.path)), entry.name in extra))
    return found
