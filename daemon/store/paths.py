"""Store layout, sync classes and D10 containment (STORE-FORMAT.md 1.1, 1.9, 1.10)."""

from __future__ import annotations

from enum import Enum
from functools import lru_cache
from typing import Literal

TIERS: tuple[str, ...] = ("craft", "ops", "profile", "projects", "feedback")
SPINE = "SPINE.md"
CATALOG = "CATALOG.md"
LEDGER = "archive/LEDGER.md"
LOCAL_SPINE = "local/SPINE.md"
ARCHIVE_PREFIX = "archive/"
LEGACY_PREFIX = "archive/legacy/"
EVIDENCE_PREFIX = "evidence/"

PathKind = Literal["tier", "archived", "spine", "local", "store"]


class Layout(str, Enum):
    """Which generation of the format a store is in."""

    FILES_ONLY = "1.2"  # has CATALOG.md
    UNMIGRATED = "pre-1.2"  # knowledge files but no catalog
    NEW = "new"  # nothing yet; treated as files-only


def contained(path: str, kind: PathKind) -> bool:
    """D10: may a path read from a synced file be followed at all?"""
    if not path or path[0] in "/~" or "\\" in path or ":" in path:
        return False
    wrapped = "/" + path + "/"
    if "/../" in wrapped or "/./" in wrapped or "//" in wrapped:
        return False
    first, slash, rest = path.partition("/")
    is_tier = bool(slash) and first in TIERS
    if kind == "tier":
        return is_tier
    if kind == "archived":
        return path.startswith(ARCHIVE_PREFIX) and contained(path[len(ARCHIVE_PREFIX):], "tier")
    if kind == "spine":
        return path == CATALOG or is_tier
    if kind == "local":
        return first == "local" and bool(slash)
    # store: archive/... or evidence/... with something after the slash, or a tier path
    return (first in ("archive", "evidence") and bool(rest)) or is_tier


def is_legacy(archive_path: str) -> bool:
    """The structural rule: ``archive/legacy/...`` and flat ``archive/x.md`` are legacy."""
    rest = archive_path[len(ARCHIVE_PREFIX):] if archive_path.startswith(ARCHIVE_PREFIX) else archive_path
    return rest.startswith("legacy/") or "/" not in rest


def is_nested_archive(tier_relative: str) -> bool:
    """A file under ``<tier>/**/archive/**`` is a pre-1.2 archive, not a tier file."""
    return "/archive/" in tier_relative


def evidence_twin(tier_path: str) -> str:
    return EVIDENCE_PREFIX + tier_path


def archived_path(tier_path: str) -> str:
    return ARCHIVE_PREFIX + tier_path


def strip_archive(path: str) -> str:
    return path[len(ARCHIVE_PREFIX):] if path.startswith(ARCHIVE_PREFIX) else path


# -- sync classes (STORE-FORMAT.md 1.1): what may cross machines ----------------------------

SHARED_DIRS: tuple[str, ...] = (*TIERS, "evidence", "archive", "inbox")
LOCAL_DIRS: tuple[str, ...] = ("data", "local", "bin")
UPDATER_FILES: tuple[str, ...] = ("distill-process.md", "distill-monitor.md")

SyncClass = Literal["shared", "local", "other"]

# Top-level folders the user chose to sync as they are (the setting git.extra_folders): their
# Markdown files are shared in git, and nothing else about them changes (never maintained).
_extra_synced: tuple[str, ...] = ()


def set_extra_synced_folders(names: tuple[str, ...]) -> None:
    global _extra_synced
    _extra_synced = tuple(names)


def extra_synced_folders() -> tuple[str, ...]:
    return _extra_synced


def sync_class(path: str) -> SyncClass:
    """``shared``: tracked and synced; ``local``: never leaves this machine; ``other``: not a
    store file at all (a README the user tracks, the repository's own .gitignore).

    Only Markdown files are shared: a swap file or a stray binary in a tier folder is not
    knowledge. Every dotfile anywhere is local (locks, status, editors' temporary files).
    """
    return _sync_class(path, _extra_synced)


@lru_cache(maxsize=65536)  # asked of every path of every tree a sync or merge reads
def _sync_class(path: str, extra_synced: tuple[str, ...]) -> SyncClass:
    parts = path.split("/")
    if any(part.startswith(".") for part in parts) or path in UPDATER_FILES:
        return "local"
    if parts[0] in LOCAL_DIRS:
        return "local"
    if path in (SPINE, CATALOG):
        return "shared"
    if len(parts) > 1 and (parts[0] in SHARED_DIRS or parts[0] in extra_synced) and path.endswith(".md") \
            and all(parts):
        return "shared"
    return "other"
