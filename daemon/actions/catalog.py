"""`distilld catalog`: print or write the canonical CATALOG.md."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from ..engine.finish import stale_reasons
from ..errors import DistilldError
from ..policy import Policy
from ..store import fs
from ..store.catalog import Catalog, render_catalog
from ..store.local import pending_migrations
from ..store.paths import CATALOG, Layout
from ..store.snapshot import Snapshot, take_snapshot
from ..store.text import encode
from .passes import locked_pass

@dataclass(frozen=True)
class CatalogWrite:
    path: Path
    written: bool
    reason: str


def print_catalog(store: Path, now: datetime) -> str:
    return render_catalog(take_snapshot(store), now)


def run_catalog_write(store: Path, policy: Policy, clock: Callable[[], datetime], wait: float = 0) -> CatalogWrite:
    """`catalog --write`: decided without the lock, written under it (re-checked there), never
    during a pending migration. A catalog that is current costs no lock at all."""
    looked = _needs_write(take_snapshot(store), clock())
    if isinstance(looked, CatalogWrite):
        return looked
    with locked_pass(store, policy, clock, wait) as ctx:
        pending = pending_migrations(ctx.root)
        if pending:
            raise DistilldError(f"{pending[0]}: a store migration is PENDING; finish or revert it first "
                                "(it rebuilds the catalog itself)")
        return refresh_catalog(ctx.root, ctx.now())


def _needs_write(snapshot: Snapshot, now: datetime) -> CatalogWrite | str:
    """The text to write, or the reason (as a CatalogWrite) that nothing is written."""
    target = snapshot.root / CATALOG
    if snapshot.layout is Layout.UNMIGRATED:
        raise DistilldError(
            f"{snapshot.root}: pre-1.2 store (no CATALOG.md); writing a catalog would mark it as "
            "migrated. Migrate the store first; `distilld catalog --print` shows the catalog meanwhile."
        )
    snapshot.require_readable()
    text = render_catalog(snapshot, now)
    if snapshot.catalog_raw is not None:
        unchanged = Catalog(snapshot.catalog_raw).stamp_masked() == Catalog(encode(text)).stamp_masked()
        if unchanged and not stale_reasons(snapshot):
            return CatalogWrite(target, False, "catalog is current; only the rebuilt stamp would change")
    return text


def refresh_catalog(store: Path, now: datetime) -> CatalogWrite:
    """Rebuild CATALOG.md atomically; leave it alone when only the stamp would change.
    The caller holds the store's lock (run_catalog_write, or a pass that already has it)."""
    snapshot = take_snapshot(store)
    looked = _needs_write(snapshot, now)
    if isinstance(looked, CatalogWrite):
        return looked
    fs.write_text_keeping_endings(snapshot.root / CATALOG, looked)
    return CatalogWrite(snapshot.root / CATALOG, True, "catalog rebuilt")
