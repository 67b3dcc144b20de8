"""The maintenance passes, each a plugin of one interface, registered in one table.

A pass lives in ``engine/passes/<name>/``: ``plan.py`` (pure: a snapshot, the limits and now
in, a plan out) and ``apply.py`` (the plan journalled and carried out by the one executor).
What the rest of distilld needs of a pass is a ``Pass``: where its unfinished journals are,
and how to recover them. The recovery at start, ``status`` (an interrupted pass) and every
write pass's first step iterate over ``PASSES``, so adding a pass means adding it here
(docs/adding-a-pass.md walks through one).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..context import PassContext


@dataclass(frozen=True)
class Pass:
    name: str
    # the journals a kill left unfinished (their paths), oldest first
    unfinished: Callable[[Path], list[Path]]
    # finish (or roll back) them: the sentences the report says, and the pass's own outcome.
    # None: a person finishes the pass (a PENDING migration: `distilld migrate --finish`).
    recover: Callable[[PassContext], Recovered] | None


@dataclass(frozen=True)
class Recovered:
    notes: list[str]
    outcome: object


def _restore() -> Pass:
    from .restore.apply import recover_restores, unfinished_restores

    def recover(ctx: PassContext) -> Recovered:
        outcome = recover_restores(ctx)
        notes = [f"finished an interrupted restore of {', '.join(outcome.restored)}"] if outcome.restored else []
        return Recovered(notes, outcome)
    return Pass("restore", unfinished_restores, recover)


def _gc() -> Pass:
    from .gc.apply import recover_gc
    from .gc.manifest import unfinished_manifests

    def recover(ctx: PassContext) -> Recovered:
        outcome = recover_gc(ctx)
        return Recovered([f"finished an interrupted gc pass: archived {p}" for p in outcome.recovered]
                + [f"finished an interrupted revert: restored {p}" for p in outcome.reverted]
                         + [f"recorded a gc move that never completed: {p}" for p in outcome.abandoned], outcome)
    return Pass("gc", lambda root: [m.path for m in unfinished_manifests(root)], recover)


def _compaction() -> Pass:
    from .compaction.apply import compaction_journals, recover_compaction

    def recover(ctx: PassContext) -> Recovered:
        run = recover_compaction(ctx)
        if run.rolled_back is None:
            return Recovered([f"finished an interrupted compaction ({len(run.steps_done)} steps)"], run)
        return Recovered([run.rollback_note("an interrupted compaction")], run)
    return Pass("compaction", lambda root: [j.path for j in compaction_journals(root)], recover)


def _migration() -> Pass:
    from ...store.local import pending_migrations
    return Pass("migration", lambda root: [p.parent for p in pending_migrations(root)], None)


# In recovery order: a restore and a gc pass first (their ledger lines are written), then a
# compaction's planned writes; a migration waits for a person.
PASSES: tuple[Pass, ...] = (_restore(), _gc(), _compaction(), _migration())
