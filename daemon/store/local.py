"""The machine-local side of a store: .lifecycle, data/ journals and migration markers.

None of this is synced; it decides what this machine may do to the shared files.
"""

from __future__ import annotations

from pathlib import Path

LIFECYCLE_FILE = ".lifecycle"
DATA_DIR = "data"
GC_MANIFESTS_DIR = "data/gc-manifests"
GC_LOG = "data/gc-log.jsonl"
MIGRATION_DIR = "data/migration"
RESTORE_JOURNALS_DIR = "data/restore-journals"


def lifecycle_enabled(root: Path) -> bool:
    """``.lifecycle`` says ``enabled`` (a leading BOM and surrounding blanks ignored)."""
    try:
        raw = (root / LIFECYCLE_FILE).read_bytes()
    except OSError:
        return False
    return raw.removeprefix(b"\xef\xbb\xbf").strip() == b"enabled"


def pending_migrations(root: Path) -> list[Path]:
    """``data/migration/*/PENDING`` markers: while one exists, nothing but migrate may write."""
    base = root / MIGRATION_DIR
    if not base.is_dir():
        return []
    return sorted(p for p in base.glob("*/PENDING") if p.is_file())
