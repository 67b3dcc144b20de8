"""migrate-store --revert (STORE-FORMAT.md 4.6): the backup put back, crash-safe.

Files changed after the backup are kept aside in kept-after-backup/ first; then a restore line
for every lifecycle move the migration made, every move reversed, the files it created removed
and the backup written over the store (the ledger excepted), each write through the one
executor and checked against the file as the revert's first look saw it; then the catalog,
and REVERTED in place of PENDING. A killed revert is run again from its start: every step
sees what is done already.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path, PurePosixPath

from ....crashpoints import crashpoint
from ....store import fs
from ....store.ledger import restore_event
from ....store.local import pending_migrations
from ....store.paths import CATALOG, LEDGER
from ....store.text import encode, sha256_hex
from ...context import PassContext
from ...executor import (
    Executor,
    FileMove,
    FileRemove,
    FileWrite,
    Op,
    Pacer,
    PlanStopped,
    append_ledger,
    take_ledger,
)
from ...finish import write_catalog
from ...journal import planned_checksums
from .apply import MigrateOutcome, MigrationRefused, knowledge_files
from .checklist import MigrationDir, migration_dirs, moved_by


def _restore_line(path: str, reason: str, observed: str | None, modified: bool, stamp: str) -> str:
    return restore_event(stamp, path, reason, observed, modified)


# -- revert -----------------------------------------------------------------------------------

def _revertible(root: Path) -> MigrationDir | None:
    """The migration to revert; None when the last one is reverted already (nothing to do)."""
    pending = pending_migrations(root)
    if pending:
        return MigrationDir(pending[0].parent)
    every = migration_dirs(root)
    done = [d for d in every if d.done.exists() and not d.reverted.exists()]
    if not done and any(d.reverted.exists() for d in every):
        return None
    if not done:
        raise MigrationRefused(f"{root}: no migration to revert (none is PENDING or DONE and not reverted)")
    return done[-1]


def _keep_aside(root: Path, directory: MigrationDir, outcome: MigrateOutcome, path: str) -> None:
    """Copy a file changed after the backup into kept-after-backup/ before the revert replaces it."""
    if path not in outcome.kept:
        outcome.kept.append(path)
    data = (root / path).read_bytes()
    kept = directory.kept / path
    number = 1
    # A copy an earlier, interrupted revert kept holds what the file held then; a file changed
    # again since holds more. Both are someone's: the newer goes beside it (x.kept-2.md, ...).
    while kept.exists():
        if kept.is_file() and kept.read_bytes() == data:
            return  # this very version is kept already
        number += 1
        name = PurePosixPath(path)
        kept = directory.kept / name.with_name(f"{name.stem}.kept-{number}{name.suffix}")
    fs.copy_exact(root / path, kept)


@dataclass
class _Undo:
    """The revert's writes, through the one executor. Each is checked against the checksum the
    revert's first look saw (``seen``); a file changed since is someone's new change, kept aside
    before the write goes on with the file as it is now."""

    ctx: PassContext
    directory: MigrationDir
    outcome: MigrateOutcome
    seen: dict[str, str]

    def __post_init__(self) -> None:
        # the format's order: each write on disk, and the lock's heartbeat, before the next
        self.executor = Executor(self.ctx.root, Pacer(self.ctx.heartbeat, interval=0, barrier=False),
                                 self.ctx.now_stamp, durable=True)

    def _current(self, path: str) -> str | None:
        there = self.ctx.root / path
        return sha256_hex(there.read_bytes()) if there.is_file() else None

    def _carry_out(self, path: str, op_for: Callable[[str | None], Op]) -> None:
        expected = self.seen.get(path, self._current(path))
        try:
            self.executor.carry_out(op_for(expected))
        except PlanStopped:
            if self._current(path) is None:
                raise
            _keep_aside(self.ctx.root, self.directory, self.outcome, path)
            self.executor.carry_out(op_for(self._current(path)))
        crashpoint("file-written")
        self.ctx.heartbeat()

    def move_back(self, archived: str, source: str) -> None:
        self._carry_out(archived, lambda sha: FileMove(archived, source, sha or ""))

    def remove(self, path: str) -> None:
        self._carry_out(path, lambda sha: FileRemove(path, sha or ""))

    def put(self, path: str, data: bytes) -> None:
        self._carry_out(path, lambda sha: FileWrite(path, sha, data))


def revert_migration(ctx: PassContext) -> MigrateOutcome:
    root = ctx.root
    directory = _revertible(root)
    if directory is None:  # as `gc --revert` says of a finished revert: nothing to do, not a refusal
        last = [d for d in migration_dirs(root) if d.reverted.exists()][-1]
        return MigrateOutcome("revert", directory=last.path,
                              notes=[f"{last.path} is already reverted; nothing to do"])
    journal = directory.load_journal()
    outcome = MigrateOutcome("revert", directory=directory.path)
    backup = directory.backup
    if not backup.is_dir():
        raise MigrationRefused(f"{backup}: no backup to revert to; nothing was changed")
    ours = planned_checksums([i.step for i in journal.items if i.step is not None])
    recorded = directory.writes()
    # 1. files changed after the backup are kept aside before anything is undone; what every
    # file holds now is what the undo below expects of it (a file changed after this look is
    # someone's new change: it is kept aside too before the backup goes over it)
    seen: dict[str, str] = {}
    for path in knowledge_files(root):
        if path == CATALOG:
            continue
        current = seen[path] = sha256_hex((root / path).read_bytes())
        copy = backup / path
        if copy.is_file() and sha256_hex(copy.read_bytes()) == current:
            continue
        if current == recorded.get(path) or current in ours.get(path, set()):
            continue
        if path == LEDGER:
            continue  # the ledger is only ever appended to, and is never replaced
        _keep_aside(root, directory, outcome, path)
    reason = f"revert {directory.ts}"
    # 2. a restore line for every lifecycle move this migration made, 3. every move reversed
    for item in reversed(journal.items):
        move = item.move
        if move is None:
            continue
        ledger = take_ledger(root)
        event = ledger.last_event_by_path.get(move.source) if ledger else None
        if event is not None and event.is_archive and event.value("sha256") == move.sha256:
            archived = root / move.target
            observed = sha256_hex(archived.read_bytes()) if archived.is_file() else None
            modified = observed is not None and observed != move.sha256
            append_ledger(ctx, partial(_restore_line, move.source, reason, observed, modified))
            crashpoint("file-written")
    # The undo goes through the one executor: each write, move and removal checked against the
    # file as the look above saw it.
    undo = _Undo(ctx, directory, outcome, seen)
    for source, target in reversed(moved_by(journal.items)):
        if (root / target).is_file() and not (root / source).exists():
            undo.move_back(target, source)
    # 4. paths the plan created go, unless changed after the backup
    for path in journal.created:
        if path not in outcome.kept and (root / path).is_file() and not (backup / path).exists():
            undo.remove(path)
    # 5. the backup over the store, the ledger excepted
    for path in knowledge_files(backup):
        if path in (LEDGER, CATALOG):
            continue
        data = (backup / path).read_bytes()
        there = root / path
        if not there.is_file() or there.read_bytes() != data:
            undo.put(path, data)
    # 6. the catalog: rebuilt only if the store had one; otherwise none, as before
    if (backup / CATALOG).is_file():
        write_catalog(ctx)  # the one finish step's catalog, in the line endings it has
    elif (root / CATALOG).is_file():
        fs.remove(root / CATALOG)
    # 7. REVERTED replaces PENDING
    fs.atomic_write(directory.reverted, encode(f"reverted {ctx.now_stamp()}\n"))
    crashpoint("reverted-written")
    if directory.pending.exists():
        fs.remove(directory.pending)
    outcome.finished = True
    ctx.heartbeat()
    return outcome

