"""Carrying out a pass from its journal, and rolling it back: the same code for a pass's first
run and for the recovery of a killed one.

A journal is carried out step by step through the executor (each operation idempotent), then
the finish step rebuilds the catalog (journalled with the bytes it replaces) and self-checks.

One rule for a file that changed under the pass (another program edited SPINE.md, say, or a
tier file the plan still had to write), for a pass that can roll back (``rolls_back``): each
write of this pass whose file still holds exactly what the pass wrote is undone to the bytes it
replaced; a file that changed since is kept as it is, with the foreign change; the journal is
closed as rolled back, and the caller plans again from the store as it now is. A self-check
that fails after writing rolls the pass back the same way. A rollback that would lose a line
now on disk (an edit to a file whose content this pass moved elsewhere), or that cannot know a
file's bytes (a journal of an older version), is not made: the writes stay, the journal is
closed, and the next plan sees them. A pass that cannot roll back (a restore: its ledger line
stays) stops instead, naming the file, and is finished once the file is as planned again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..crashpoints import crashpoint
from ..errors import StoreRefused
from ..store.findings import Finding, fail
from ..store.lossless import check_c4
from ..store.snapshot import Snapshot, planned_snapshot, take_snapshot
from ..store.text import sha256_hex
from .cancel import PassStopped, checkpoint, stop_asked
from .carrying import REVERSIBLE, Carrying
from .context import PassContext
from .executor import Executor, FileRemove, FileWrite, Pacer, PlanStopped, Step
from .finish import SelfChecked, finish_pass
from .journal import Journal, PassJournal


@dataclass
class JournalRun(SelfChecked):
    """What carrying out (or rolling back) a journal did."""

    journal: Path | None = None
    steps_done: list[str] = field(default_factory=list)
    written: list[tuple[str, str]] = field(default_factory=list)
    rolled_back: str | None = None  # why the pass was rolled back, if it was
    restored: list[str] = field(default_factory=list)  # files the rollback gave their bytes back
    kept: list[str] = field(default_factory=list)  # files changed under the pass, kept as they are
    interrupted: bool = False  # a file changed under the pass: plan again
    undo_refused: bool = False  # undoing would have lost lines written since: the writes stay

    def absorb(self, other: JournalRun) -> None:
        """Take in the run of a later journal (a recovery that finished several)."""
        self.journal = other.journal
        self.steps_done += other.steps_done
        self.written += other.written
        self.self_check, self.still_over_budget = other.self_check, other.still_over_budget
        self.rolled_back = other.rolled_back or self.rolled_back
        self.restored += other.restored
        self.kept += other.kept
        self.interrupted = self.interrupted or other.interrupted
        self.undo_refused = self.undo_refused or other.undo_refused

    def rollback_note(self, what: str) -> str:
        kept = f"; kept as changed since: {', '.join(self.kept)}" if self.kept else ""
        return (f"{what} was rolled back ({self.rolled_back}): {len(self.restored)} files given back their "
                f"bytes{kept}")


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def keep_previous_bytes(root: Path, steps: list[Step]) -> None:
    """Give every planned write the bytes it replaces, so the journal can undo it. A planned
    removal is refused: the journal keeps no bytes of the file it takes, so a rollback could not
    give it back (and would still undo the writes that held its lines elsewhere)."""
    current: dict[str, bytes | None] = {}
    for op in (op for step in steps for op in step.ops):
        if isinstance(op, FileRemove):
            raise StoreRefused(f"{root / op.path}: the plan removes this file, which only a rollback may do (the "
                               "journal keeps no bytes to give it back); nothing was changed. Report the case")
        if isinstance(op, FileWrite):
            if op.path not in current:
                current[op.path] = _read(root / op.path)
            op.previous = current[op.path]
            current[op.path] = op.data


def _journal_catalog(journal: PassJournal) -> Callable[[FileWrite], FileWrite]:
    def journal_it(write: FileWrite) -> FileWrite:
        if journal.catalog is None:
            journal.record_catalog(write)
        elif journal.catalog.data != write.data:  # rebuilt again on resume: it still replaces the original
            journal.record_catalog(FileWrite(write.path, journal.catalog.before, write.data,
                                             journal.catalog.previous))
        else:
            return journal.catalog
        return write
    return journal_it


def carry_out_steps(executor: Executor, journal: Journal, stoppable: bool = False) -> list[tuple[str, str]]:
    """Every step of any pass's journal not yet done, through the one executor, each marked in
    the journal once done (the file and checksum of every write). A ``stoppable`` pass ends
    before its next step once a stop is asked for (engine/cancel.py): its caller rolls it back."""
    written: list[tuple[str, str]] = []
    for index, step in enumerate(journal.steps):
        if step.done:
            continue
        if stoppable:
            checkpoint()
        written += executor.run(step)
        journal.mark(index)
    return written


def _carry_out(ctx: PassContext, journal: PassJournal, run: JournalRun, interval: float,
               durable: bool, stoppable: bool) -> None:
    pacer = Pacer(ctx.heartbeat, interval, barrier=not durable)
    done_before = {i for i, step in enumerate(journal.steps) if step.done}
    try:
        run.written += carry_out_steps(Executor(ctx.root, pacer, ctx.now_stamp, durable), journal, stoppable)
    finally:
        run.steps_done += [step.title for i, step in enumerate(journal.steps)
                           if step.done and i not in done_before]
        pacer.flush()  # every planned write on disk before the catalog and the finished line (or the undo)


def journal_before(root: Path, journal: PassJournal) -> Snapshot | None:
    """The store as it was before the pass, from the bytes its journal keeps of every file it
    writes (None when it cannot be known: an operation that keeps no bytes, or an older journal),
    so a resumed pass is checked for loss (C4) as its first run was."""
    writes = journal.writes()
    if len(writes) != sum(len(step.ops) for step in journal.steps) + (journal.catalog is not None):
        return None
    now = take_snapshot(root)
    files = now.file_contents()
    for op in reversed(writes):  # the first write of a path holds the bytes it had before the pass
        if op.before is not None and op.previous is None:
            return None
        if op.previous is None:
            files.pop(op.path, None)
        else:
            files[op.path] = op.previous
    return planned_snapshot(now, files)


@dataclass
class _Undo:
    """What undoing the pass's own writes gives each file (None: removed), the checksum each
    file had when that was decided (what the undo's writes are checked against), and the files
    changed since the pass wrote them (kept)."""

    give: dict[str, bytes | None]
    seen: dict[str, str | None]
    kept: list[str]


def _undo_plan(root: Path, journal: PassJournal) -> _Undo:
    writes = journal.writes()
    original: dict[str, str | None] = {}  # each path's checksum before the pass first wrote it
    # what each write's path held at some point before it (its first bytes, or an earlier write's):
    # a file in one of those states is not written that far yet (a path written three times, such
    # as a chained compaction's SPINE, may hold the first write's bytes when the second is undone)
    earlier: list[set[str | None]] = []
    states: dict[str, set[str | None]] = {}
    for op in writes:
        original.setdefault(op.path, op.before)
        earlier.append(set(states.setdefault(op.path, {op.before})))
        states[op.path].add(op.after)
    current: dict[str, bytes | None] = {}
    seen: dict[str, str | None] = {}
    settled: set[str] = set()
    kept: list[str] = []
    for index, op in reversed(list(enumerate(writes))):
        if op.path not in current:
            current[op.path] = _read(root / op.path)
            seen[op.path] = None if current[op.path] is None else sha256_hex(current[op.path] or b"")
            if seen[op.path] == original[op.path]:
                settled.add(op.path)  # as before the pass: never written, or undone already (a resumed rollback)
        now = current[op.path]
        if op.path in kept or op.path in settled or now is None and op.before is None:
            continue
        checksum = None if now is None else sha256_hex(now)
        if checksum == op.before or checksum in earlier[index]:
            continue  # not written yet, or undone already
        if checksum != op.after or op.before is not None and op.previous is None:
            kept.append(op.path)  # changed since (or an older journal without the bytes): keep it
            continue
        current[op.path] = op.previous
    give = {path: data for path, data in current.items() if path not in kept
            and (None if data is None else sha256_hex(data)) != seen[path]}
    return _Undo(give, seen, kept)


def _undo_loses_lines(root: Path, journal: PassJournal, undo: dict[str, bytes | None],
                      kept: list[str]) -> list[Finding]:
    """A kept file this pass had written (a split parent edited since, say) may hold only part of
    what it held before the pass; undoing the rest (removing the child) must not lose the other
    part: C4 between the store before the pass and the store once undone."""
    done = {op.path for step in journal.steps if step.done for op in step.ops if isinstance(op, FileWrite)}
    written_then_kept = [p for p in kept if p in done]
    if not written_then_kept:
        return []  # every kept file is one this pass never wrote: undoing is exact
    first = {op.path: op for op in reversed(journal.writes())}
    unknown = [p for p in written_then_kept if first[p].before is not None and first[p].previous is None]
    if unknown:  # a journal of an older version keeps no bytes: what it replaced cannot be known
        return [fail("C4", "undo-unknown", unknown[0], f"{unknown[0]}: the bytes it had before the pass "
                     "are not in the journal")]
    now = take_snapshot(root)
    undone = now.file_contents()
    for path, data in undo.items():
        if data is None:
            undone.pop(path, None)
        else:
            undone[path] = data
    before_pass = dict(undone)
    for path in written_then_kept:
        previous = first[path].previous
        if previous is not None:
            before_pass[path] = previous
    found = check_c4(planned_snapshot(now, before_pass), planned_snapshot(now, undone))
    return [f for f in found if f.severity == "fail"]


UNDO_ATTEMPTS = 3  # a file changed while the undo ran: the undo is planned again from the files as they are


def roll_back(ctx: PassContext, journal: PassJournal, run: JournalRun, reason: str) -> None:
    """Undo this pass's own writes to files untouched since; keep every file changed since."""
    if journal.rolling_back is None:
        journal.start_rollback(reason)
        crashpoint("rollback-started")
    run.rolled_back = journal.rolling_back
    # The undo goes through the one executor, each write or removal checked against the file as
    # the undo's plan read it: a file changed after that is someone else's change, and the undo
    # is planned again (with the check that undoing loses no line) rather than written over it.
    executor = Executor(ctx.root, Pacer(ctx.heartbeat, interval=0, barrier=False), ctx.now_stamp, durable=True)
    for attempt in range(UNDO_ATTEMPTS):
        undo = _undo_plan(ctx.root, journal)
        run.kept = sorted(set(run.kept) | set(undo.kept))
        lost = _undo_loses_lines(ctx.root, journal, undo.give, undo.kept) if undo.give else []
        if lost:
            run.kept = sorted(set(run.kept) | set(undo.give))
            run.rolled_back = (f"{journal.rolling_back}; not undone, because undoing would lose lines written "
                               f"since: {lost[0].message}")
            run.undo_refused = True
            journal.finish()
            return
        # Every file given back its bytes before any file the pass made is removed: a split parent
        # holds again what moved to its child before the child goes, so an undo stopped midway
        # (a file changed under it) leaves lines twice at worst, never nowhere.
        steps = sorted(undo.give.items(), key=lambda item: item[1] is None)
        order = [path for path, _ in steps]
        stopped: int | None = None
        for index, (path, data) in enumerate(steps):
            before = undo.seen[path]
            op: FileWrite | FileRemove = FileRemove(path, before or "") if data is None else FileWrite(path, before, data)
            if data is None and before is None:
                continue
            try:
                executor.carry_out(op)
            except PlanStopped:
                # The rest of this undo was planned (and checked for lost lines) with that file as
                # it was: undoing on would remove a split child whose parent is now kept. Plan again.
                stopped = index
                break
            run.restored.append(path)
            crashpoint("file-restored")
            ctx.heartbeat()
        if stopped is None:
            break
        if attempt + 1 == UNDO_ATTEMPTS:
            run.kept = sorted(set(run.kept) | set(order[stopped:]))
    journal.finish(rolled_back=True)


def _listing(findings: list[Finding]) -> str:
    return "; ".join(f"[{f.group}] {f.message}" for f in findings[:3])


def run_journal(ctx: PassContext, journal: PassJournal, before: Snapshot | None,
                carrying: Carrying = REVERSIBLE) -> JournalRun:
    """Carry the journal out and finish the pass (catalog, self-check). Where the pass
    ``rolls_back``, a file changed under it or a failing self-check rolls it back."""
    rolls_back = carrying.rolls_back
    before = before if carrying.lossless else None
    run = JournalRun(journal.path)
    if journal.rolling_back is not None:
        roll_back(ctx, journal, run, journal.rolling_back)
        run.interrupted = True
        return run
    try:
        _carry_out(ctx, journal, run, carrying.heartbeat_interval, carrying.durable, stoppable=rolls_back)
        if rolls_back:
            checkpoint()  # a stop asked for during the last step: before the catalog and the self-check
    except PassStopped:
        raise _stopped(ctx, journal, run) from None
    except PlanStopped as stopped:
        if not rolls_back:
            raise
        roll_back(ctx, journal, run, f"a file changed under the {journal.pass_name}: {stopped.args[0].split(';')[0]}")
        run.interrupted = True
        return run
    close = None if rolls_back else journal.finish
    run.self_check = finish_pass(ctx, before, close, _journal_catalog(journal))
    run.still_over_budget = ctx.still_over_budget
    if not rolls_back:
        return run
    if run.self_check:
        roll_back(ctx, journal, run, f"self-check failed after writing: {_listing(run.self_check)}")
    elif stop_asked():  # during the catalog rebuild or the self-check: the pass is not finished yet
        raise _stopped(ctx, journal, run)
    else:
        journal.finish()
    return run


def _stopped(ctx: PassContext, journal: PassJournal, run: JournalRun) -> PassStopped:
    """A stop was asked for (SIGTERM, Ctrl-C): what this pass wrote is undone, and the message
    says whether the store is as it was or which files changed since were kept as they are."""
    roll_back(ctx, journal, run, "a stop was asked for (SIGTERM or Ctrl-C) before it finished")
    name = journal.pass_name
    kept = f"{', '.join(run.kept[:5])}{f' and {len(run.kept) - 5} more' if len(run.kept) > 5 else ''}"
    if run.undo_refused:
        return PassStopped(f"the {name} was stopped before it finished and {len(run.restored)} files were given "
                           f"back their bytes; the rest is not undone ({run.rolled_back}), so these stay as the "
                           f"{name} and others left them: {kept}. No line is lost, and the next compaction plans "
                           "from the store as it is (`distilld check` says what is left)")
    if not run.kept:
        return PassStopped(f"the {name} was stopped before it finished and rolled back ({len(run.restored)} "
                           "files given back their bytes): the store is as it was")
    return PassStopped(f"the {name} was stopped before it finished and rolled back as far as it could: "
                       f"{len(run.restored)} files given back their bytes; kept as they are, changed since "
                       f"the {name} wrote them: {kept} ({run.rolled_back}); no line is lost, and `distilld "
                       "check` says what is left")
