"""restore PATH (STORE-FORMAT.md 4.5): bring an archived file, or its split family, back.

The steps (passes/restore/plan.py) are journalled in the one internal format in
``data/restore-journals/`` before the first write, and carried out by the one pass driver
(engine/driver.py): per member the ledger line first, then the byte-exact move, the stamp and
the SPINE entry, each written to disk before the next. A restore is only ever rolled forward:
its ledger line stays, so a file changed under it stops it, naming the file, until the file is
as planned again. Its recovery is the generic one, with the same carrying.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ....store.local import RESTORE_JOURNALS_DIR
from .. import journalled_pass
from ...carrying import Carrying
from ...apply import JournalRun
from ...driver import Driven
from ...journal import JournalUnreadable, load_journal, planned_checksums
from ...finish import SelfChecked
from .plan import RestoreMember, RestorePlan

PASS_NAME = "restore"

# Rolled only forward, each write on disk before the next, and held to C1-C3 only: a restore
# takes a file out of the archive on purpose (its ledger line says so), which C4 would call a loss.
RESTORE_CARRYING = Carrying(rolls_back=False, durable=True, lossless=False,
                            advice="compare the archived files and SPINE.md with the ledger, then try again")

PASS = journalled_pass(PASS_NAME, RESTORE_JOURNALS_DIR, RESTORE_CARRYING)


@dataclass
class RestoreOutcome(SelfChecked):
    restored: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def restore_outcome(driven: Driven[RestorePlan]) -> RestoreOutcome:
    """What the report of a driven restore says. A file found back already that the recovery of
    an interrupted restore just moved back is reported as restored: that was this restore."""
    plan, run = driven.plan, driven.outcome
    notes = driven.notes + [note for member in plan.members for note in _member_notes(member)]
    restored = [m.path for m in plan.members]
    recovered = driven.recovery is not None and _journal_names(driven.recovery, plan.back)
    if plan.done and recovered:
        restored = [plan.back]
    elif plan.done:
        notes.append(plan.done)
    outcome = RestoreOutcome(restored, notes)
    outcome.self_check, outcome.still_over_budget = run.self_check, run.still_over_budget
    return outcome


def _journal_names(recovery: JournalRun, path: str) -> bool:
    """The interrupted restore the recovery finished was this one: its journal writes ``path``,
    whether the kill came before that step or after it (then the recovery wrote only the rest)."""
    if any(written == path for written, _ in recovery.written):
        return True
    if recovery.journal is None:
        return False
    try:
        journal = load_journal(recovery.journal, "restore")
    except (OSError, JournalUnreadable):
        return False
    return path in planned_checksums(journal.steps)


def _member_notes(member: RestoreMember) -> list[str]:
    notes = []
    if member.drift:
        notes.append(f"{member.path}: differed from its ledger checksum only by recall_count; "
                     "the recall_count line was removed")
    if member.event == "restore (modified)":
        notes.append(f"{member.path}: archived bytes differ from the ledger checksum; "
                     "restored anyway as 'restore (modified)'")
    if member.index_detail:
        notes.append(f"{member.path}: its saved SPINE entry was over the cap; a short entry was "
                     "written and the whole hook appended under Index detail")
    return notes
