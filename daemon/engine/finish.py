"""The one finish step of every pass and every recovery: rebuild the catalog, then self-check.

The catalog keeps the line endings it has (a CRLF catalog stays CRLF), whichever pass rebuilt it.
The self-check runs C1-C3 on the store as it now is, and C4 against the store before the pass
where the pass has it; breaches the store had before the pass are reported, not failed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..crashpoints import crashpoint
from ..store import fs
from ..store.catalog import render_catalog
from ..store.findings import Finding
from ..store.paths import CATALOG
from ..store.snapshot import Snapshot, take_snapshot
from ..store.text import encode, sha256_hex
from .context import PassContext
from .executor import FileWrite

# The C2 findings that make a catalog stale (STORE-FORMAT.md 1.8): a row for a missing file, a
# file without a row, or a ledger event newer than the rebuilt stamp. A rebuild mends them.
STALE_CODES = frozenset({"not-in-catalog", "catalog-missing-target", "catalog-stale", "catalog-no-stamp"})


def stale_reasons(snapshot: Snapshot, findings: list[Finding] | None = None) -> list[str]:
    """Why the catalog is stale; ``findings`` (C2 or all of C1-C3) when they are at hand already."""
    from ..store.invariants import check_c2

    if snapshot.catalog_raw is None:
        return ["CATALOG.md missing"]
    found = check_c2(snapshot) if findings is None else findings
    return [f.message for f in found if f.group == "C2" and f.code in STALE_CODES]


@dataclass(kw_only=True)
class SelfChecked:
    """What a pass's outcome says of its self-check: the failures it caused, and the budget
    breaches the store already had (reported, not failed)."""

    self_check: list[Finding] = field(default_factory=list)
    still_over_budget: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.self_check


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def rebuilt_catalog(ctx: PassContext) -> FileWrite:
    """The catalog rebuilt from the store as it is now, as a write that keeps the bytes it replaces."""
    old = _read(ctx.root / CATALOG)
    ending = fs.line_ending_of(old) if old is not None else b"\n"
    new = fs.with_line_ending(encode(render_catalog(take_snapshot(ctx.root), ctx.now())), ending)
    return FileWrite(CATALOG, None if old is None else sha256_hex(old), new, old)


def write_catalog(ctx: PassContext, journal_it: Callable[[FileWrite], FileWrite] | None = None) -> None:
    """Rebuild and write the catalog; ``journal_it`` records the write first (and may say what it
    replaces, when a resumed pass rebuilds it again) so a rollback can give the old one back."""
    write = rebuilt_catalog(ctx)
    if journal_it is not None:
        write = journal_it(write)
    fs.atomic_write(ctx.root / CATALOG, write.data)
    crashpoint("catalog-written")
    ctx.heartbeat()


def finish_pass(ctx: PassContext, before: Snapshot | None, close: Callable[[], None] | None = None,
                journal_it: Callable[[FileWrite], FileWrite] | None = None) -> list[Finding]:
    """The catalog rebuilt, the journal closed (``close``), then the self-check's new failures."""
    write_catalog(ctx, journal_it)
    if close is not None:
        close()
        ctx.heartbeat()
    return ctx.self_check(before)
