"""Finish what a killed pass left, before any new pass plans: restores, gc (and reverts),
compactions. Every write pass calls this first, under the lock, so no pass ever plans from a
half-written store and every recovery is said in the report."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..errors import DistilldError
from ..store.local import pending_migrations
from .passes.compaction.apply import CompactOutcome, recover_compaction, unfinished_journals
from .context import PassContext
from .passes.gc.apply import GcOutcome, recover_gc
from .passes.gc.manifest import unfinished_manifests
from .passes.restore.apply import RestoreOutcome, recover_restores, unfinished_restores


@dataclass
class Resumed:
    restores: RestoreOutcome
    gc: GcOutcome | None = None
    compaction: CompactOutcome | None = None
    notes: list[str] = field(default_factory=list)  # restores and compactions finished

    @property
    def gc_notes(self) -> list[str]:
        """The gc recovery in words, for reports that do not show the gc outcome itself."""
        if self.gc is None:
            return []
        return ([f"finished an interrupted gc pass: archived {p}" for p in self.gc.recovered]
                + [f"finished an interrupted revert: restored {p}" for p in self.gc.reverted]
                + [f"recorded a gc move that never completed: {p}" for p in self.gc.abandoned])

    @property
    def all_notes(self) -> list[str]:
        return self.notes + self.gc_notes


def finish_interrupted(ctx: PassContext) -> Resumed:
    resumed = Resumed(recover_restores(ctx))
    if resumed.restores.restored:
        resumed.notes.append(f"finished an interrupted restore of {', '.join(resumed.restores.restored)}")
    if unfinished_manifests(ctx.root):
        resumed.gc = recover_gc(ctx)
    if unfinished_journals(ctx.root):  # a killed compaction's planned writes go first too
        resumed.compaction = recover_compaction(ctx)
        if resumed.compaction.rolled_back is None:
            resumed.notes.append(f"finished an interrupted compaction ({len(resumed.compaction.steps_done)} steps)")
        else:
            resumed.notes.append(resumed.compaction.rollback_note("an interrupted compaction"))
    return resumed


def interrupted_passes(root: Path) -> list[str]:
    """Every pass left unfinished in the store (its journal, relative to the store): while one is
    there the store is mid-pass, so nothing of it is committed and status shows it as stuck."""
    try:
        found = [j.path for j in unfinished_journals(root)] + [m.path for m in unfinished_manifests(root)]
        found += [j.path for j in unfinished_restores(root)] + [p.parent for p in pending_migrations(root)]
    except (DistilldError, OSError, ValueError) as error:
        return [f"an unreadable journal: {error}"]
    return [path.relative_to(root).as_posix() if path.is_relative_to(root) else str(path) for path in found]
