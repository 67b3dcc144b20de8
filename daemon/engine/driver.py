"""The one pass driver for a pass journalled in the internal format: under a lock already held
(actions/passes.py `locked_pass`: lock, guard, context), it recovers, snapshots once, plans,
gates, journals, executes, finishes, and plans again when a rollback kept a foreign change.

A pass gives it a planner, ``plan(snapshot, ctx) -> plan`` where the plan has the ``steps`` to
carry out and, optionally, the ``files`` they leave (the gate derives them from the steps when
the plan does not say) and a ``tolerates(finding)`` for failures the pass reports rather than
refuses (a restored file over its caps: the person asked for it back as it was). The pass's
``Carrying`` (engine/carrying.py) says whether it rolls back or only forward, how durably it
writes, and whether it is held to C4. The same call serves the command line and the daemon's
job, so both do exactly the same pass; what they print or commit is theirs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from ..crashpoints import crashpoint
from ..errors import DistilldError
from ..store.snapshot import Snapshot, take_snapshot
from .apply import JournalRun, keep_previous_bytes, run_journal
from .carrying import REVERSIBLE, Carrying
from .context import PassContext
from .executor import Step
from .finish import stale_reasons, write_catalog
from .gate import planned_files, refuse_unless_plan_passes
from .journal import PassJournal, new_journal
from .recovery import Resumed, finish_interrupted

# A file changed under the first attempt (a writer's file kept by a rollback): plan once more
# from the store as it is, so that a pass never ends with its catalog or SPINE behind the tree.
PLAN_ATTEMPTS = 2


class Planned(Protocol):
    @property
    def steps(self) -> list[Step]: ...


PlanT = TypeVar("PlanT", bound=Planned)


@dataclass
class Driven(Generic[PlanT]):
    """What one driven pass did: its last plan, what carrying it out did, what the recovery of
    its own earlier journals did, and the notes for its report."""

    plan: PlanT
    outcome: JournalRun
    recovery: JournalRun | None = None
    notes: list[str] = field(default_factory=list)
    rolled_back: bool = False  # some attempt was rolled back
    before: Snapshot | None = None  # what the last plan was made from
    resumed: Resumed = field(default_factory=Resumed)  # what the recovery before the plan finished, by pass

    @property
    def wrote(self) -> bool:
        """Did the pass change the store (or give files back their bytes)?"""
        outcome = self.outcome
        return (bool(outcome.written) or self.rolled_back or outcome.rolled_back is not None
                or bool(outcome.interrupted))


class InternalFormat:
    """The internal journal (engine/journal.py): every step with the bytes each write puts and
    the bytes it replaces, written before the first write."""

    def refuse(self, ctx: PassContext, made: Planned) -> None:
        return None  # any steps of the one executor can be journalled

    def start(self, ctx: PassContext, name: str, journals: str, made: Planned) -> PassJournal:
        keep_previous_bytes(ctx.root, made.steps)
        journal = new_journal(ctx.root / journals, name, ctx.now(), ctx.now_stamp(), made.steps)
        journal.create()
        crashpoint("journal-written")
        return journal

    def carry(self, ctx: PassContext, journal: PassJournal, before: Snapshot, carrying: Carrying) -> JournalRun:
        return run_journal(ctx, journal, before, carrying)


INTERNAL_FORMAT = InternalFormat()


def apply_journalled(ctx: PassContext, name: str, journals: str, made: Planned, before: Snapshot,
                     refused_as: type[DistilldError], what: str, carrying: Carrying = REVERSIBLE) -> JournalRun:
    """Carry out the plan ``made`` from ``before`` (taken under the same lock), once the store it
    would leave passes C1-C4 (C1-C3 for a pass not held to C4) where ``before`` did; rolled back
    (or stopped, for a pass rolled only forward) if a file changes under the pass or its
    self-check fails. The journal goes in the store folder ``journals``."""
    steps = made.steps
    if not steps:
        return JournalRun()
    journal_format = carrying.journal_format or INTERNAL_FORMAT
    journal_format.refuse(ctx, made)
    files: dict[str, bytes] | None = getattr(made, "files", None)
    planned = files if files is not None else planned_files(before, steps, ctx.now_stamp())
    refuse_unless_plan_passes(ctx, before, planned, what, refused_as, carrying.lossless,
                              getattr(made, "tolerates", None), carrying.advice)
    journal = journal_format.start(ctx, name, journals, made)
    return journal_format.carry(ctx, journal, before, carrying)


def drive(ctx: PassContext, name: str, journals: str, plan: Callable[[Snapshot, PassContext], PlanT], *,
          refuse: Callable[[Snapshot], None] | None = None, refused_as: type[DistilldError] = DistilldError,
          what: str | None = None, carrying: Carrying = REVERSIBLE) -> Driven[PlanT]:
    """The pass ``name``, start to finish, under the lock ``ctx`` holds. ``refuse`` raises when
    the store may not take this pass now (a pending migration, say)."""
    allowed = ctx.snapshot()
    if refuse is not None:
        refuse(allowed)
    resumed = finish_interrupted(ctx)
    notes = list(resumed.all_notes)
    recovered = resumed.outcome(name, JournalRun)
    recovery = recovered if recovered is not None and recovered.journal is not None else None
    if recovery is not None and recovery.rolled_back:
        ctx.take_baseline()
    # Nothing was recovered: the store is as just read, and the first plan starts from that read
    # (one read of every file fewer; a big store pays seconds for each).
    unchanged: Snapshot | None = None if resumed.outcomes else allowed
    rolled_back = False
    for attempt in range(PLAN_ATTEMPTS):
        before, unchanged = unchanged or ctx.snapshot(), None
        made = plan(before, ctx)
        outcome = apply_journalled(ctx, name, journals, made, before, refused_as, what or name, carrying)
        if outcome.rolled_back:
            rolled_back = True
            notes.append(outcome.rollback_note(f"the {name}"))
        # A rollback that kept a foreign change leaves a store the plan never saw: plan again.
        again = outcome.interrupted or (outcome.rolled_back is not None
                                        and take_snapshot(ctx.root).file_contents() != before.file_contents())
        if not again or attempt + 1 == PLAN_ATTEMPTS:
            break
        ctx.take_baseline()  # planned again from the store as it now is, the foreign edit in it
    if rolled_back and stale_reasons(take_snapshot(ctx.root)):
        # a later plan that had nothing to do (or rolled back too) rebuilt no catalog: the files
        # written meanwhile still get their rows
        write_catalog(ctx)
        notes.append("the catalog was rebuilt after the rollback, for files written meanwhile")
    return Driven(made, outcome, recovery, notes, rolled_back, before, resumed)
