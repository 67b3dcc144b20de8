"""Telling another store at the same path from the same store with a shrunken ledger.

The state folder is keyed on the store's path (locations.instance_key), so a new store made
where an earlier one stood met the earlier one's ledger copy and was refused with "the ledger
lost lines" (issue 27). Beside the copy, the identity of the folder it was kept for (device and
inode) is kept: another folder whose ledger shares no line with the copy (an empty one, say) is
another store. A shrunken or edited ledger keeps lines the copy holds, so it is still refused;
a store that is a git repository is also held to its last commit's ledger, whatever this says.
"""

from __future__ import annotations

import os
from pathlib import Path

IDENTITY_SUFFIX = ".identity"


def _entry_lines(raw: bytes) -> set[bytes]:
    return {line.rstrip(b"\r") for line in raw.split(b"\n") if line.startswith(b"- ")}


def _folder(root: Path) -> str:
    info = os.stat(root)
    return f"{info.st_dev}:{info.st_ino}"


def identity_path(copy: Path) -> Path:
    return copy.with_name(copy.name + IDENTITY_SUFFIX)


def identity_text(root: Path) -> bytes:
    return _folder(root).encode("ascii") + b"\n"


def is_another_store(root: Path, copy: Path, seen: bytes, current: bytes) -> bool:
    """Does the ledger copy at ``copy`` belong to a store that stood at this path before? Only
    if the store is another folder than the one the copy was kept for, and its ledger shares no
    line with the copy: a ledger edited in place, or one that lost lines, keeps the others."""
    try:
        recorded = identity_path(copy).read_bytes().decode("ascii", "replace").strip()
        folder_now = _folder(root)
    except OSError:
        return False  # no identity kept (an older distilld): the copy counts as this store's
    return recorded != folder_now and not (_entry_lines(current) & _entry_lines(seen))
