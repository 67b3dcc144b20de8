"""restore PATH (STORE-FORMAT.md 4.5): bring an archived file, or its split family, back.

The steps (passes/restore/plan.py) are journalled in the one internal format in
``data/restore-journals/`` before the first write, and carried out by engine/apply.py: per
member the ledger line first, then the byte-exact move, the stamp and the SPINE entry, each
written to disk before the next. A restore is only ever rolled forward: its ledger line stays,
so a file changed under it stops it, naming the file, until the file is as planned again.
Journals of the older JSON format (``*.json``) are still recovered: their members become the
same steps in a journal of the new format.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ....crashpoints import crashpoint
from ....store.local import RESTORE_JOURNALS_DIR
from ....store.snapshot import Snapshot
from ...apply import JournalRun, keep_previous_bytes, run_journal
from .. import Pass, Recovered
from ...context import BUDGET_CODES, PassContext
from ...executor import FileMove, LedgerAppend, Step
from ...finish import SelfChecked
from ...gate import planned_files, refuse_unless_plan_passes
from ...journal import PassJournal, new_journal, unfinished_journals
from .plan import RestoreMember, RestorePlan, RestoreRefused

PASS_NAME = "restore"


@dataclass
class RestoreOutcome(SelfChecked):
    restored: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _run(ctx: PassContext, journal: PassJournal) -> JournalRun:
    # the format's order: each write on disk, and the lock's heartbeat, before the next
    return run_journal(ctx, journal, None, rolls_back=False, interval=0, durable=True)


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


def apply_restore(ctx: PassContext, plan: RestorePlan, before: Snapshot) -> RestoreOutcome:
    """Carry out a plan made from ``before`` (read under the same lock)."""
    members, steps = plan.members, plan.steps
    planned = planned_files(before, steps, ctx.now_stamp())
    restored = {m.path for m in members}
    refuse_unless_plan_passes(ctx, before, planned, "restored", RestoreRefused, lossless=False,
                              tolerated=lambda f: f.code in BUDGET_CODES and f.path in restored,
                              advice="compare the archived files and SPINE.md with the ledger, then try again")
    keep_previous_bytes(ctx.root, steps)
    journal = new_journal(ctx.root / RESTORE_JOURNALS_DIR, PASS_NAME, ctx.now(), ctx.now_stamp(), steps)
    journal.create()
    crashpoint("journal-written")
    run = _run(ctx, journal)
    outcome = RestoreOutcome([m.path for m in members], [n for m in members for n in _member_notes(m)])
    outcome.self_check, outcome.still_over_budget = run.self_check, run.still_over_budget
    return outcome


# -- recovery ---------------------------------------------------------------------------------

def restore_journals(root: Path) -> list[PassJournal]:
    """The restores a kill left unfinished, oldest first. A journal in the JSON form of an
    unreleased earlier version is not read: it is refused, by name, rather than passed over."""
    directory = root / RESTORE_JOURNALS_DIR
    older = sorted(directory.glob("*.json")) if directory.is_dir() else []
    if older:
        raise RestoreRefused(f"{older[0]}: a restore journal of an earlier, unreleased distilld; it is not "
                             "finished by this version. Check the restore it names by hand (the ledger's last "
                             "line for the file, the file itself), then move the journal out of "
                             f"{RESTORE_JOURNALS_DIR}/")
    return unfinished_journals(directory, PASS_NAME)


def unfinished_restores(root: Path) -> list[Path]:
    return [j.path for j in restore_journals(root)]


def recover_restores(ctx: PassContext) -> RestoreOutcome:
    """Roll every interrupted restore forward, step by step, each step idempotent."""
    outcome = RestoreOutcome()
    for journal in restore_journals(ctx.root):
        outcome.restored += _restored_paths(journal.steps)
        run = _run(ctx, journal)
        outcome.self_check, outcome.still_over_budget = run.self_check, run.still_over_budget
    return outcome


def _restored_paths(steps: list[Step]) -> list[str]:
    """The tier paths a restore's steps bring back, in order."""
    found: list[str] = []
    for op in (op for step in steps for op in step.ops):
        path = op.target if isinstance(op, FileMove) else op.tier_path if isinstance(op, LedgerAppend) else op.path
        if path not in found:
            found.append(path)
    return found


def _recover(ctx: PassContext) -> Recovered:
    outcome = recover_restores(ctx)
    notes = [f"finished an interrupted restore of {', '.join(outcome.restored)}"] if outcome.restored else []
    return Recovered(notes, outcome)


PASS = Pass(PASS_NAME, unfinished_restores, _recover)
