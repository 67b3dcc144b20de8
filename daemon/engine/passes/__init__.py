"""The maintenance passes, each a plugin of one interface, listed in the one table (daemon/registry.py).

A pass lives in ``engine/passes/<name>/``: ``plan.py`` (pure: a snapshot and the pass's context
in, steps out) and, where its journal is not the internal one, ``apply.py``. What the rest of
distilld needs of a pass is a ``Pass``: where its unfinished journals are, and how to recover
them. A pass journalled in the internal format (engine/journal.py) gets both from
``journalled_pass``; the others (gc's manifests, migration's PLAN.md, whose formats are fixed by
the store format) name their own ``Pass`` in the registry. The recovery at start, ``status``
(an interrupted pass) and every write pass's first step iterate over ``registered_passes``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ...registry import PASSES, PassEntry
from ..carrying import REVERSIBLE, Carrying
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


def journalled_pass(name: str, journals: str, carrying: Carrying = REVERSIBLE) -> Pass:
    """The ``Pass`` of a pass journalled in the internal format in the store folder ``journals``:
    each unfinished journal is carried on from its last finished step, the way the pass's
    ``carrying`` says (rolled back where a file changed under it, or stopped there for a pass
    rolled only forward)."""
    def unfinished(root: Path) -> list[Path]:
        from ..journal import unfinished_journals
        return [journal.path for journal in unfinished_journals(root / journals, name)]

    def recover(ctx: PassContext) -> Recovered:
        from ..apply import JournalRun, journal_before, run_journal
        from ..journal import unfinished_journals

        run = JournalRun()
        for journal in unfinished_journals(ctx.root / journals, name):
            before = journal_before(ctx.root, journal) if carrying.lossless else None
            run.absorb(run_journal(ctx, journal, before, carrying))
        if run.rolled_back is None:
            return Recovered([f"finished an interrupted {name}: {said_steps(run.steps_done)}"], run)
        return Recovered([run.rollback_note(f"an interrupted {name}")], run)
    return Pass(name, unfinished, recover)


SAID_STEPS = 3


def said_steps(titles: list[str]) -> str:
    """The steps a recovery finished, as its note says them: the first few by their titles."""
    if not titles:
        return "no step was left to do"
    more = f" and {len(titles) - SAID_STEPS} more" if len(titles) > SAID_STEPS else ""
    return "; ".join(titles[:SAID_STEPS]) + more


@cache
def _plugin(entry: PassEntry) -> Pass:
    return entry.load() if entry.plugin else journalled_pass(entry.name, entry.journals)


def registered_passes(root: Path | None = None) -> Iterator[Pass]:
    """Every registered pass, in recovery order; given ``root``, only those whose journal folder
    exists there (the others have nothing to recover, and their modules need not be loaded)."""
    for entry in PASSES:
        if root is None or (root / entry.journals).exists():
            yield _plugin(entry)
