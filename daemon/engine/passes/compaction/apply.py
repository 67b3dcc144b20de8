"""Compaction apply and recovery (STORE-FORMAT.md 4.2, 4.3): a CompactionPlan carried out, crash-safe.

Compaction is journalled in the internal format (engine/journal.py), in ``data/compact-journals/``,
and run by the one pass driver (engine/driver.py): the plan is checked first on the whole store
it would leave (engine/gate.py) and refused before anything is written if it would fail; it is
rolled back when a file changes under it or its self-check fails; its recovery is the generic
one of such passes (engine/passes/__init__.py).
A rollback that could not be made leaves the split children their SPINE pointers for the next
plan to see (plan.py: plan).
"""

from __future__ import annotations

from pathlib import Path

from ....errors import StoreRefused
from ....store.paths import SPINE
from ....store.snapshot import Snapshot
from ...apply import JournalRun
from ...context import PassContext
from ...driver import apply_journalled
from ...guard import refuse_unless_settled
from ...journal import PassJournal, unfinished_journals
from .plan import CompactionPlan

COMPACTION_JOURNALS_DIR = "data/compact-journals"
PASS_NAME = "compaction"


class CompactionRefused(StoreRefused):
    """Compaction may not run on this store now; the message says what to do first."""


def refuse_unless_compaction_allowed(snapshot: Snapshot) -> None:
    refuse_unless_settled(snapshot, CompactionRefused, "before compacting", "its compaction is part of the "
                          "migration: run `distilld migrate` (preview) and then `distilld migrate --apply`")
    if snapshot.spine is not None and not snapshot.spine.pointer_list and snapshot.tier_paths:
        # an emptied SPINE (an editor's crash, a bad merge) is not an index to compact: the pass would
        # write one that points at its split children only, and `check` would no longer say why
        # every other file lacks its pointer
        raise CompactionRefused(f"{snapshot.root / SPINE} points at no file (empty or unreadable) while the store "
                                f"has {len(snapshot.tier_paths)} tier files; nothing was changed. Give it back its "
                                "entries (from git: `git checkout -- SPINE.md`, or a backup), then compact")


def compaction_journals(root: Path) -> list[PassJournal]:
    """The compactions a kill left unfinished, oldest first."""
    return unfinished_journals(root / COMPACTION_JOURNALS_DIR, PASS_NAME)


def apply_compaction(ctx: PassContext, plan: CompactionPlan, before: Snapshot) -> JournalRun:
    """Carry out a plan made from ``before`` (taken under the same lock), once the store it would
    leave has been checked; roll it back if a file changes under it or its self-check fails."""
    return apply_journalled(ctx, PASS_NAME, COMPACTION_JOURNALS_DIR, plan, before, CompactionRefused, "compacted")
