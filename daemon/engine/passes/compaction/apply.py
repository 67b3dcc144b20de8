"""Compaction apply and recovery (STORE-FORMAT.md 4.2, 4.3): a CompactionPlan carried out, crash-safe.

The plan is checked first on the whole store it would leave (engine/gate.py); a plan that would
fail is refused before anything is written. Its journal (the one internal format, engine/journal.py)
is written in ``data/compact-journals/`` before the first write, and carried out by
engine/apply.py, which also rolls it back when a file changes under it or its self-check fails.
A rollback that could not be made leaves the split children their SPINE pointers for the next
plan to see (actions/compaction.py: plan_for).
"""

from __future__ import annotations

from pathlib import Path

from ....errors import DistilldError
from ....store.snapshot import Snapshot
from ...apply import JournalRun, journal_before, keep_previous_bytes, run_journal
from ...context import PassContext
from ...crash import crashpoint
from ...gate import refuse_unless_plan_passes
from ...guard import refuse_unless_settled
from ...journal import PassJournal, new_journal, unfinished_journals
from .plan import CompactionPlan

COMPACTION_JOURNALS_DIR = "data/compact-journals"
PASS_NAME = "compaction"


class CompactionRefused(DistilldError):
    """Compaction may not run on this store now; the message says what to do first."""


def refuse_unless_compaction_allowed(snapshot: Snapshot) -> None:
    refuse_unless_settled(snapshot, CompactionRefused, "before compacting", "its compaction is part of the "
                          "migration: run `distilld migrate` (preview) and then `distilld migrate --apply`")


def compaction_journals(root: Path) -> list[PassJournal]:
    """The compactions a kill left unfinished, oldest first."""
    return unfinished_journals(root / COMPACTION_JOURNALS_DIR, PASS_NAME)


def apply_compaction(ctx: PassContext, plan: CompactionPlan, before: Snapshot) -> JournalRun:
    """Carry out a plan made from ``before`` (taken under the same lock), once the store it would
    leave has been checked; roll it back if a file changes under it or its self-check fails."""
    if not plan.steps:
        return JournalRun()
    # a plan that would break C1-C3 where the store passes now, or lose anything (C4), is refused
    refuse_unless_plan_passes(ctx, before, dict(plan.files), "compacted", CompactionRefused)
    keep_previous_bytes(ctx.root, plan.steps)
    journal = new_journal(ctx.root / COMPACTION_JOURNALS_DIR, PASS_NAME, ctx.now(), ctx.now_stamp(), plan.steps)
    journal.create()
    crashpoint("journal-written")
    return run_journal(ctx, journal, before)


def recover_compaction(ctx: PassContext) -> JournalRun:
    """Finish every interrupted compaction, or roll it back where a file changed under it."""
    run = JournalRun()
    for journal in compaction_journals(ctx.root):
        run.absorb(run_journal(ctx, journal, journal_before(ctx.root, journal)))
    return run
