"""What a write pass must refuse before it writes: symbolic links where the store keeps its
own folders, and file names that the ledger or the catalog cannot hold unchanged.

Both are read without following any link (``os.scandir`` and ``lstat``), so the check itself
never looks outside the store.
"""

from __future__ import annotations

import os
import re
import stat
from pathlib import Path
from typing import NamedTuple

from .paths import CATALOG, LEDGER, SPINE, TIERS
from .text import shown

# The folders distilld writes into, and everything under them.
MANAGED_DIRS: tuple[str, ...] = (*TIERS, "archive", "evidence", "inbox", "data", "local", "backup")
# Folders wholly distilld's: a linked file in them is refused as well (a move's destination,
# a journal). In the tier folders a linked file is only reported by check (C2).
NO_LINKED_FILES: tuple[str, ...] = ("archive", "data")
MANAGED_FILES: tuple[str, ...] = (SPINE, CATALOG, LEDGER)


class StoreLink(NamedTuple):
    path: str  # relative to the store root
    target: str

    def __str__(self) -> str:
        return f"{self.path} -> {self.target}"


def _link_target(path: Path) -> str:
    try:
        return os.readlink(path)
    except OSError as error:
        return f"(unreadable: {error.strerror or error})"


def _is_link(path: Path) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(path).st_mode)
    except FileNotFoundError:
        return False


def _links_under(root: Path, top: str, files_too: bool, found: list[StoreLink]) -> None:
    """Links below ``top``, a folder in sorted order, depth first. A directory entry knows
    whether it is a link without a stat; a link is never descended into."""
    pending = [top]
    while pending:
        relative = pending.pop()
        try:
            with os.scandir(root / relative) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError:  # gone meanwhile, or unreadable: no pass can write through it either
            continue
        below: list[str] = []
        for entry in entries:
            path = f"{relative}/{entry.name}"
            if entry.is_symlink():
                # In a tier folder a linked file is check's to report (C2); a linked folder is ours.
                if (files_too or entry.is_dir()) and path not in MANAGED_FILES:
                    found.append(StoreLink(path, _link_target(root / path)))
            elif entry.is_dir(follow_symlinks=False):
                below.append(path)
        pending.extend(reversed(below))


def store_links(root: Path) -> list[StoreLink]:
    """Every symbolic link a write pass could be sent through: a managed folder (or a folder
    under one), a linked file in archive/ or data/, and SPINE.md, CATALOG.md, the ledger."""
    found: list[StoreLink] = []
    for name in MANAGED_FILES:
        if _is_link(root / name):
            found.append(StoreLink(name, _link_target(root / name)))
    for top in MANAGED_DIRS:
        base = root / top
        if _is_link(base):
            found.append(StoreLink(top, _link_target(base)))
            continue
        _links_under(root, top, top in NO_LINKED_FILES, found)
    return found


# -- names --------------------------------------------------------------------------------------

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
_WINDOWS_ILLEGAL = re.compile(r'[<>:"|?*]')
_RESERVED = frozenset({"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)),
                       *(f"LPT{i}" for i in range(1, 10))})


# A byte of a name that is not UTF-8, as os.fsdecode gives it (surrogate-escaped).
_NOT_UTF8 = re.compile("[\udc80-\udcff]")


def unsafe_name_reason(path: str) -> str | None:
    """Why ``path`` (relative, ``/``-separated) cannot be written into the ledger or the catalog
    unchanged, or None. Non-ASCII UTF-8 names are fine; a name that is not UTF-8 is not."""
    if " | " in path:
        return "it holds ' | ', the field separator of the ledger and the catalog"
    bad = _NOT_UTF8.search(path)
    if bad:
        return (f"it is not valid UTF-8 (the byte {shown(bad.group())}): the ledger and the catalog are UTF-8 "
                "text, and a line of the append-only ledger can never be mended; rename it to UTF-8")
    for part in path.split("/"):
        control = _CONTROL.search(part)
        if control:
            char = control.group()
            why = ("a line break would split a ledger line" if char in "\n\r" else
                   "the ledger and the catalog keep names as plain text, and a terminal would act on it")
            return f"it holds the control character {shown(char)} ({why})"
        illegal = _WINDOWS_ILLEGAL.search(part)
        if illegal:
            return f"it holds {illegal.group()!r}, which Windows does not allow in a file name"
        if part.startswith("-"):
            return "a part of it starts with '-', which reads as a list item or an option"
        if part.endswith((".", " ")) and part not in (".", ".."):  # those two are D10's to refuse
            return "a part of it ends with a dot or a space, which Windows drops"
        if part.split(".", 1)[0].upper() in _RESERVED:
            return f"{part!r} is a reserved device name on Windows"
    return None


def breaks_a_row(path: str) -> bool:
    """A name that cannot stand in a catalog or ledger row at all: a control character (a line
    break splits the row) or the field separator."""
    return " | " in path or _CONTROL.search(path) is not None or _NOT_UTF8.search(path) is not None


class UnsafeName(NamedTuple):
    path: str
    reason: str

    def __str__(self) -> str:
        return f"'{shown(self.path)}': {self.reason}"


def unsafe_names(paths: list[str]) -> list[UnsafeName]:
    return [UnsafeName(p, why) for p in paths if (why := unsafe_name_reason(p)) is not None]


def store_unsafe_names(root: Path) -> list[UnsafeName]:
    """The knowledge files (``*.md`` under the tier folders, archive/, evidence/, inbox/) whose
    names a pass would refuse to record; read without following links."""
    paths: list[str] = []
    for top in (*TIERS, "archive", "evidence", "inbox"):
        for directory, dirnames, filenames in os.walk(root / top, followlinks=False):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            here = Path(directory).relative_to(root).as_posix()
            paths += [f"{here}/{name}" for name in filenames if name.endswith(".md") and not name.startswith(".")]
    return unsafe_names(sorted(paths))
