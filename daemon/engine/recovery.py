"""Finish what a killed pass left, before any new pass plans: restores, gc (and reverts),
compactions. Every write pass calls this first, under the lock, so no pass ever plans from a
half-written store and every recovery is said in the report."""

from __future__ import annotations

from dataclasses import dataclass, field

from .compact import CompactOutcome, recover_compaction, unfinished_journals
from .context import PassContext
from .gc import GcOutcome, recover_gc
from .journal import unfinished_manifests
from .restore import RestoreOutcome, recover_restores


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
