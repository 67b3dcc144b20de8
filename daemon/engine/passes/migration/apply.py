"""migrate-store (STORE-FORMAT.md 4.6): preview, apply, finish and revert, crash-safe.

Apply: the plan is written (PLAN.md, plan.json), the knowledge tree is copied to backup/ and
the copy verified byte for byte, PENDING is written, and only then is the store edited, item
by item, each item ticked in PLAN.md and every file written or moved recorded under
``## Writes``. The last item is the self-check against the backup; only when it passes does
DONE replace PENDING. Finish carries on at the first unticked item (every write is idempotent).
Revert puts the backup back, keeping files changed after the backup in kept-after-backup/.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from ....crashpoints import crashpoint
from ....errors import StoreRefused
from ....policy import Policy
from ....store import fs
from ....store.findings import Finding
from ....store.invariants import check_store
from ....store.local import pending_migrations
from ....store.lossless import check_c4
from ....store.paths import CATALOG, SPINE, TIERS
from ....store.snapshot import take_snapshot
from ....store.text import encode, sha256_hex
from ...context import PassContext, PlanInputs, PreviewInputs
from .checklist import (
    ITEM_ARCHIVE,
    ITEM_BACKUP,
    ITEM_CATALOG,
    ITEM_CHECK,
    Item,
    MigrationDir,
    MigrationJournal,
    items_of,
    new_dir,
    render_plan_md,
)
from .plan import MigrationPlan
from .plan import plan as migration_planner
from ..compaction.advice import CapFailure, cap_failures
from ..gc.model import Move
from ...progress import report as report_progress
from ...executor import Executor, FileMove, LedgerAppend, Pacer, Step
from ...finish import SelfChecked, write_catalog

KNOWLEDGE_TOPS: tuple[str, ...] = (*TIERS, "evidence", "archive")


class MigrationRefused(StoreRefused):
    """The migration cannot run, or cannot run now; nothing was changed."""


@dataclass
class MigrateOutcome(SelfChecked):
    mode: str
    plan: MigrationPlan | None = None
    directory: Path | None = None
    items_done: list[str] = field(default_factory=list)
    written: int = 0
    finished: bool = False  # DONE written (or REVERTED, for a revert)
    kept: list[str] = field(default_factory=list)  # files a revert found changed after the backup
    notes: list[str] = field(default_factory=list)
    over_caps: list[CapFailure] = field(default_factory=list)  # the caps a failed self-check names, and why


def knowledge_files(root: Path) -> list[str]:
    """SPINE.md, CATALOG.md and every regular file under the tiers, evidence/ and archive/."""
    found = [name for name in (SPINE, CATALOG) if (root / name).is_file()]
    for top in KNOWLEDGE_TOPS:
        base = root / top
        if not base.is_dir():
            continue
        for directory, _, names in os.walk(base):
            for name in names:
                path = Path(directory) / name
                if path.is_file() and not path.is_symlink():
                    found.append(path.relative_to(root).as_posix())
    return sorted(found)


def _refusal_message(plan: MigrationPlan) -> str:
    lines = ["migration refused; nothing was changed:"] + [f"  - {r}" for r in plan.refusal]
    if plan.suggestions:
        lines.append("what could be done by hand:")
        lines += [f"  - {s}" for s in plan.suggestions[:30]]
    return "\n".join(lines)


def _make_plan(root: Path, ctx: PlanInputs) -> MigrationPlan:
    report_progress("reading the store", 0, 2)
    snapshot = take_snapshot(root)
    snapshot.require_readable()
    report_progress("planning the migration", 1, 2)
    made = migration_planner(snapshot, ctx)
    report_progress("planning the migration", 2, 2)
    return made


# -- preview ----------------------------------------------------------------------------------

def preview_migration(root: Path, policy: Policy, now: datetime, write_plan: bool = True) -> MigrateOutcome:
    """Write data/migration/<UTC>/PLAN.md; change nothing else. A store already migrated gets no
    PLAN.md (there is nothing to plan: each preview left another one), nor does one this user
    may not write (``write_plan`` False: the preview is printed only)."""
    plan = _make_plan(root, PreviewInputs(policy.limits, lambda: now))
    outcome = MigrateOutcome("preview", plan)
    if write_plan and not plan.is_noop:
        directory = new_dir(root, plan.ts)
        status = "refused (see below): nothing will be changed" if plan.refused else "preview: nothing changed"
        fs.atomic_write(directory.plan_md, encode(render_plan_md(plan, root, items_of(plan), status)))
        outcome.directory = directory.path
    elif not plan.is_noop:
        outcome.notes.append(f"no PLAN.md written: this user may not write {root}")
    if pending_migrations(root):
        outcome.notes.append(f"a migration is PENDING ({pending_migrations(root)[0]}): finish or revert it first")
    return outcome


# -- apply and finish -------------------------------------------------------------------------

def apply_migration(ctx: PassContext, policy: Policy) -> MigrateOutcome:
    root = ctx.root
    pending = pending_migrations(root)
    if pending:
        raise MigrationRefused(f"{pending[0]}: another migration is PENDING; run `distilld migrate --finish` "
                               "or `--revert` first")
    plan = _make_plan(root, ctx)
    if plan.is_noop:
        return MigrateOutcome("apply", plan, notes=["the store is already in the 1.2 layout: nothing to migrate"])
    if plan.refused:
        raise MigrationRefused(_refusal_message(plan))
    directory = new_dir(root, plan.ts)
    items = items_of(plan)
    journal = MigrationJournal(plan.ts, plan.now, plan.today, plan.kind, items, plan.created, plan.moved,
                             plan.budget_before, plan.budget_after)
    directory.save_journal(journal)
    fs.atomic_write(directory.plan_md, encode(render_plan_md(plan, root, items, "applying")))
    crashpoint("plan-written")
    _backup(root, directory)
    directory.mark(1)
    fs.atomic_write(directory.pending, encode(directory.relative_plan(root) + "\n"))
    crashpoint("pending-written")
    ctx.heartbeat()
    outcome = MigrateOutcome("apply", plan, directory.path)
    _continue(ctx, directory, journal, outcome)
    return outcome


def _backup(root: Path, directory: MigrationDir) -> None:
    """Copy the knowledge tree into backup/ byte for byte, then verify the copy."""
    files = knowledge_files(root)
    for number, path in enumerate(files, 1):
        report_progress("backing up", number, len(files))
        target = directory.backup / path
        if target.exists():
            fs.remove(target)  # a backup interrupted before PENDING: start it again
        fs.copy_exact(root / path, target, durable=False)
    fs.sync_barrier()  # the whole copy on disk before PENDING says the store may change
    copied = knowledge_files(directory.backup)
    if copied != files or any((root / p).read_bytes() != (directory.backup / p).read_bytes() for p in files):
        raise MigrationRefused(f"{directory.backup}: the backup differs from the store; nothing was changed "
                               "(check the disk, then run migrate --apply again)")


def _continue(ctx: PassContext, directory: MigrationDir, journal: MigrationJournal, outcome: MigrateOutcome) -> None:
    marks = directory.marks()
    pacer = Pacer(ctx.heartbeat)
    executor = Executor(ctx.root, pacer, ctx.now_stamp, on_write=directory.journal_write)
    for number, item in enumerate(journal.items, 1):
        report_progress("migrating", number, len(journal.items))
        if marks.get(item.number):
            continue
        if item.kind == ITEM_CHECK:
            pacer.flush()  # every write on disk before it is checked and DONE is written
            outcome.self_check = _self_check(ctx, directory)
            if outcome.self_check:
                outcome.over_caps = cap_failures(take_snapshot(ctx.root), ctx.limits)
                outcome.notes.append(f"{directory.pending} stays: fix what the self-check names, then run "
                                     "`distilld migrate --finish`, or undo it all with `--revert`")
                return
        else:
            outcome.written += _run_item(ctx, directory, item, executor)
        directory.mark(item.number)
        crashpoint("item-marked")
        outcome.items_done.append(item.title)
        pacer.tick()
    _write_done(ctx, directory, journal)
    outcome.finished = True


def _run_item(ctx: PassContext, directory: MigrationDir, item: Item, executor: Executor) -> int:
    if item.kind == ITEM_BACKUP:
        return 0  # done before PENDING existed
    if item.kind == ITEM_CATALOG:
        write_catalog(ctx)
        directory.journal_write(CATALOG, sha256_hex((ctx.root / CATALOG).read_bytes()))
        return 1
    if item.kind == ITEM_ARCHIVE and item.move is not None:
        return len(executor.run(_archive_step(item.move)))
    assert item.step is not None
    return len(executor.run(item.step))


def _archive_step(move: Move) -> Step:
    """A lifecycle move: the ledger line first, then the byte-exact move (gc Apply rules)."""
    return Step(f"lifecycle: archive {move.source}", [
        LedgerAppend(move.source, "archive", move.sha256, move.reason, move.sha256_norm, move.spine_entry),
        FileMove(move.source, move.target, move.sha256)])


def _self_check(ctx: PassContext, directory: MigrationDir) -> list[Finding]:
    after = take_snapshot(ctx.root)
    found = check_store(after, ctx.limits) + check_c4(take_snapshot(directory.backup), after)
    return [f for f in found if f.severity == "fail"]


def _write_done(ctx: PassContext, directory: MigrationDir, journal: MigrationJournal) -> None:
    before, after = journal.budget_before, journal.budget_after
    numbers = [f"done {ctx.now_stamp()}", f"plan {directory.relative_plan(ctx.root)}"]
    numbers += [f"{key}: {before.get(key)} -> {after.get(key)}" for key in before]
    fs.atomic_write(directory.done, encode("\n".join(numbers) + "\n"))
    crashpoint("done-written")
    if directory.pending.exists():
        fs.remove(directory.pending)
    ctx.heartbeat()


def pending_dir(root: Path) -> MigrationDir:
    pending = pending_migrations(root)
    if not pending:
        raise MigrationRefused(f"{root}: no migration is PENDING; nothing to finish "
                               "(`distilld migrate` previews one)")
    return MigrationDir(pending[0].parent)


def finish_migration(ctx: PassContext) -> MigrateOutcome:
    directory = pending_dir(ctx.root)
    journal = directory.load_journal()
    outcome = MigrateOutcome("finish", directory=directory.path)
    _continue(ctx, directory, journal, outcome)
    return outcome
