"""Compaction apply and recovery (STORE-FORMAT.md 4.2, 4.3): a CompactPlan carried out, crash-safe.

The plan is checked first on the whole store it would leave (C1-C4, ``planned_snapshot``);
a plan that would fail is refused before anything is written. The journal
``data/compact-journals/<UTC-compact>.jsonl`` is written before the first write: its first line
holds every planned write (the bytes it writes, the bytes it replaces and their checksums), then
one line is appended per finished step, one with the catalog's write, and a last line once the
pass is finished or rolled back. Recovery carries the unfinished steps out again; each write is
idempotent (see writes.py).

One rule for a file that changed under the pass (another program edited SPINE.md, say, or a tier
file the plan still had to write): the pass is rolled back. Each write of this pass whose file
still holds exactly what the pass wrote (its after-checksum) is undone to the journalled bytes it
replaced; a file that changed since is kept as it is, with the foreign edit. The journal is then
closed as rolled back, and the compaction plans again from the store as it now is. A pass is
finished instead wherever every file it still has to write is as the plan expects (a crash, not
an edit). A self-check that fails after writing rolls the pass back the same way. A rollback that
would lose a line now on disk (an edit to a file whose content this pass moved elsewhere), or that
cannot know a file's bytes (a journal of an older version), is not made: the writes stay as they
are, the journal is closed, and the next plan gives the split children they left their SPINE
pointers (actions/compact.py: plan_for).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import DistilldError
from ..store import fs
from ..store.catalog import render_catalog
from ..store.findings import Finding, fail
from ..store.invariants import check_store
from ..store.local import pending_migrations
from ..store.lossless import check_c4
from ..store.paths import CATALOG, Layout
from ..store.snapshot import Snapshot, planned_snapshot, take_snapshot
from ..store.text import encode, sha256_hex
from .compact_plan import CompactPlan
from .context import PassContext
from .crash import crashpoint
from .journal import compact_utc
from .writes import FileWrite, Pacer, PlanStopped, Step, op_from_json, op_to_json, run_step, step_from_json, step_to_json

COMPACT_JOURNALS_DIR = "data/compact-journals"


class CompactRefused(DistilldError):
    """Compaction may not run on this store now; the message says what to do first."""


def refuse_unless_compaction_allowed(snapshot: Snapshot) -> None:
    snapshot.require_readable()
    pending = pending_migrations(snapshot.root)
    if pending:
        raise CompactRefused(f"{pending[0]}: a store migration is PENDING; finish or revert it "
                             "(distilld migrate --finish / --revert) before compacting")
    if snapshot.layout is Layout.UNMIGRATED:
        raise CompactRefused(f"{snapshot.root}: pre-1.2 store (no CATALOG.md); its compaction is part of "
                             "the migration: run `distilld migrate` (preview) and then `distilld migrate --apply`")


@dataclass
class CompactJournal:
    path: Path
    ts: str
    today: str
    steps: list[Step]
    finished: bool = False
    catalog: FileWrite | None = None  # the catalog rebuilt at the end, once journalled
    rolling_back: str | None = None  # why the pass is being rolled back
    rolled_back: bool = False

    @property
    def name(self) -> str:
        return self.path.name

    def create(self) -> None:
        head = {"ts": self.ts, "today": self.today, "steps": [step_to_json(s) for s in self.steps]}
        fs.atomic_write(self.path, (json.dumps(head, ensure_ascii=True) + "\n").encode())

    def mark(self, index: int) -> None:
        self.steps[index].done = True
        fs.append_line(self.path, json.dumps({"done": index}), durable=False)  # a lost mark: redone

    def record_catalog(self, write: FileWrite) -> None:
        self.catalog = write
        fs.append_line(self.path, json.dumps({"catalog": op_to_json(write)}, ensure_ascii=True))

    def start_rollback(self, reason: str) -> None:
        self.rolling_back = reason
        fs.append_line(self.path, json.dumps({"rolling_back": reason}, ensure_ascii=True))

    def finish(self, rolled_back: bool = False) -> None:
        self.finished, self.rolled_back = True, rolled_back
        fs.append_line(self.path, json.dumps({"finished": True, "rolled_back": True} if rolled_back
                                             else {"finished": True}))

    def writes(self) -> list[FileWrite]:
        """Every write of the pass in the order it is made, the catalog's last."""
        found = [op for step in self.steps for op in step.ops if isinstance(op, FileWrite)]
        return found + ([self.catalog] if self.catalog is not None else [])


def load_journal(path: Path) -> CompactJournal:
    try:
        lines = path.read_text("utf-8").splitlines()
        head: dict[str, Any] = json.loads(lines[0])
        journal = CompactJournal(path, str(head["ts"]), str(head["today"]),
                                 [step_from_json(s) for s in head["steps"]])
        for line in lines[1:]:
            if not line.strip():
                continue
            event = json.loads(line)
            if "done" in event:
                journal.steps[int(event["done"])].done = True
            elif "catalog" in event:
                write = op_from_json(event["catalog"])
                journal.catalog = write if isinstance(write, FileWrite) else None
            elif "rolling_back" in event:
                journal.rolling_back = str(event["rolling_back"])
            elif event.get("finished"):
                journal.finished, journal.rolled_back = True, bool(event.get("rolled_back"))
        return journal
    except (OSError, ValueError, KeyError, TypeError, IndexError) as error:
        raise CompactRefused(f"{path}: not a readable compaction journal ({error}); move it out of "
                             f"{COMPACT_JOURNALS_DIR}/ after checking the store, then run compact again") from None


def unfinished_journals(root: Path) -> list[CompactJournal]:
    directory = root / COMPACT_JOURNALS_DIR
    if not directory.is_dir():
        return []
    journals = [load_journal(p) for p in sorted(directory.glob("*.jsonl"))]
    return [j for j in journals if not j.finished]


@dataclass
class CompactOutcome:
    journal: Path | None = None
    steps_done: list[str] = field(default_factory=list)
    written: list[tuple[str, str]] = field(default_factory=list)
    self_check: list[Finding] = field(default_factory=list)
    still_over_budget: list[Finding] = field(default_factory=list)
    rolled_back: str | None = None  # why the pass was rolled back, if it was
    restored: list[str] = field(default_factory=list)  # files the rollback gave their bytes back
    kept: list[str] = field(default_factory=list)  # files changed under the pass, kept as they are
    interrupted: bool = False  # a file changed under the pass: plan again

    @property
    def ok(self) -> bool:
        return not self.self_check

    def rollback_note(self, what: str) -> str:
        kept = f"; kept as changed since: {', '.join(self.kept)}" if self.kept else ""
        return (f"{what} was rolled back ({self.rolled_back}): {len(self.restored)} files given back their "
                f"bytes{kept}")


def _new_journal(ctx: PassContext, steps: list[Step]) -> CompactJournal:
    directory = ctx.root / COMPACT_JOURNALS_DIR
    stem = compact_utc(ctx.now())
    path = directory / f"{stem}.jsonl"
    counter = 2
    while path.exists():
        path = directory / f"{stem}-{counter}.jsonl"
        counter += 1
    return CompactJournal(path, ctx.now_stamp(), ctx.now().date().isoformat(), steps)


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _keep_previous_bytes(root: Path, steps: list[Step]) -> None:
    """Give every planned write the bytes it replaces, so the journal can undo it."""
    current: dict[str, bytes | None] = {}
    for op in (op for step in steps for op in step.ops):
        if isinstance(op, FileWrite):
            if op.path not in current:
                current[op.path] = _read(root / op.path)
            op.previous = current[op.path]
            current[op.path] = op.data


def _carry_out(ctx: PassContext, journal: CompactJournal, outcome: CompactOutcome) -> None:
    """Every unfinished step, then the catalog (journalled with the bytes it replaces)."""
    pacer = Pacer(ctx.heartbeat)
    for index, step in enumerate(journal.steps):
        if step.done:
            continue
        outcome.written += run_step(ctx.root, step, pacer)
        journal.mark(index)
        crashpoint("step-marked")
        outcome.steps_done.append(step.title)
    pacer.flush()  # every planned write on disk before the catalog and the finished line
    path = ctx.root / CATALOG
    new = encode(render_catalog(take_snapshot(ctx.root), ctx.now()))
    if journal.catalog is None:
        old = _read(path)
        journal.record_catalog(FileWrite(CATALOG, None if old is None else sha256_hex(old), new, old))
    elif journal.catalog.data != new:  # rebuilt again on resume: it still replaces the original
        journal.record_catalog(FileWrite(CATALOG, journal.catalog.before, new, journal.catalog.previous))
    fs.atomic_write(path, new)
    crashpoint("catalog-written")
    ctx.heartbeat()


def _undo_plan(root: Path, journal: CompactJournal) -> tuple[dict[str, bytes | None], list[str]]:
    """What undoing the pass's own writes gives each file (None: removed), and the files that
    changed since the pass wrote them (kept)."""
    current: dict[str, bytes | None] = {}
    kept: list[str] = []
    for op in reversed(journal.writes()):
        if op.path not in current:
            current[op.path] = _read(root / op.path)
        now = current[op.path]
        if op.path in kept or now is None and op.before is None:
            continue
        checksum = None if now is None else sha256_hex(now)
        if checksum == op.before:
            continue  # not written yet, or undone already
        if checksum != op.after or op.before is not None and op.previous is None:
            kept.append(op.path)  # changed since (or an older journal without the bytes): keep it
            continue
        current[op.path] = op.previous
    undo = {path: data for path, data in current.items() if path not in kept and data != _read(root / path)}
    return undo, kept


def _undo_loses_lines(root: Path, journal: CompactJournal, undo: dict[str, bytes | None],
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


def _roll_back(ctx: PassContext, journal: CompactJournal, outcome: CompactOutcome, reason: str) -> None:
    """Undo this pass's own writes to files untouched since; keep every file changed since."""
    if journal.rolling_back is None:
        journal.start_rollback(reason)
        crashpoint("rollback-started")
    outcome.rolled_back = journal.rolling_back
    undo, outcome.kept = _undo_plan(ctx.root, journal)
    lost = _undo_loses_lines(ctx.root, journal, undo, outcome.kept) if undo else []
    if lost:
        outcome.kept = sorted(set(outcome.kept) | set(undo))
        outcome.rolled_back = (f"{journal.rolling_back}; not undone, because undoing would lose lines written "
                               f"since: {lost[0].message}")
        journal.finish()
        return
    for path, data in undo.items():
        if data is None:
            fs.remove(ctx.root / path)
        else:
            fs.atomic_write(ctx.root / path, data)
        outcome.restored.append(path)
        crashpoint("file-restored")
        ctx.heartbeat()
    journal.finish(rolled_back=True)


def refuse_unless_lossless(ctx: PassContext, plan: CompactPlan, before: Snapshot) -> None:
    """Check the whole store the plan would leave before writing any of it: a plan that would
    make C1-C3 fail where the store passes now (a pointer lost, an entry over its cap) or lose
    anything (C4) is refused, and nothing is written."""
    files = dict(plan.files)
    files[CATALOG] = encode(render_catalog(planned_snapshot(before, files), ctx.now()))
    known = {(f.code, f.message) for f in check_store(before, ctx.limits) if f.severity == "fail"}
    new, _ = ctx.split_failures(planned_snapshot(before, files), before)
    new = [f for f in new if (f.code, f.message) not in known]
    if new:
        shown = "; ".join(f"[{f.group}] {f.message}" for f in new[:5])
        more = f" (and {len(new) - 5} more)" if len(new) > 5 else ""
        raise CompactRefused(f"the compacted store would fail its self-check: {shown}{more}. Nothing was "
                             "changed; reword or merge that entry by hand, or report the case")


def _listing(findings: list[Finding]) -> str:
    return "; ".join(f"[{f.group}] {f.message}" for f in findings[:3])


def _finish_or_roll_back(ctx: PassContext, journal: CompactJournal, outcome: CompactOutcome,
                         before: Snapshot | None) -> None:
    """Carry the journal out and check the store; a file changed under the pass, or a failing
    self-check, rolls it back."""
    if journal.rolling_back is not None:
        _roll_back(ctx, journal, outcome, journal.rolling_back)
        outcome.interrupted = True
        return
    try:
        _carry_out(ctx, journal, outcome)
    except PlanStopped as stopped:
        _roll_back(ctx, journal, outcome, f"a file changed under the compaction: {stopped.args[0].split(';')[0]}")
        outcome.interrupted = True
        return
    outcome.self_check = ctx.self_check(before)
    outcome.still_over_budget = ctx.still_over_budget
    if outcome.self_check:
        _roll_back(ctx, journal, outcome, f"self-check failed after writing: {_listing(outcome.self_check)}")
    else:
        journal.finish()


def apply_compaction(ctx: PassContext, plan: CompactPlan, before: Snapshot) -> CompactOutcome:
    """Carry out a plan made from ``before`` (taken under the same lock), once the store it would
    leave has been checked; roll it back if a file changes under it or its self-check fails."""
    outcome = CompactOutcome()
    if not plan.steps:
        return outcome
    refuse_unless_lossless(ctx, plan, before)
    _keep_previous_bytes(ctx.root, plan.steps)
    journal = _new_journal(ctx, plan.steps)
    journal.create()
    crashpoint("journal-written")
    outcome.journal = journal.path
    _finish_or_roll_back(ctx, journal, outcome, before)
    return outcome


def recover_compaction(ctx: PassContext) -> CompactOutcome:
    """Finish every interrupted compaction, or roll it back where a file changed under it."""
    outcome = CompactOutcome()
    for journal in unfinished_journals(ctx.root):
        outcome.journal = journal.path
        _finish_or_roll_back(ctx, journal, outcome, None)
    return outcome
