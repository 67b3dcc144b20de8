"""Compaction apply and recovery (STORE-FORMAT.md 4.2, 4.3): a CompactPlan carried out, crash-safe.

The journal ``data/compact-journals/<UTC-compact>.jsonl`` is written before the first write:
its first line holds every planned write (bytes and the checksum each replaces), then one line
is appended per finished step, and a last line once the catalog is rebuilt. Recovery carries
the unfinished steps out again; each write is idempotent (see writes.py).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import DistilldError
from ..store import fs
from ..store.catalog import render_catalog
from ..store.findings import Finding
from ..store.invariants import check_c2
from ..store.local import pending_migrations
from ..store.lossless import check_c4
from ..store.paths import CATALOG, Layout
from ..store.snapshot import Snapshot, snapshot_from_files, take_snapshot
from ..store.text import encode
from .compact_plan import CompactPlan
from .context import PassContext
from .crash import crashpoint
from .journal import compact_utc
from .writes import Pacer, Step, run_step, step_from_json, step_to_json

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

    @property
    def name(self) -> str:
        return self.path.name

    def create(self) -> None:
        head = {"ts": self.ts, "today": self.today, "steps": [step_to_json(s) for s in self.steps]}
        fs.atomic_write(self.path, (json.dumps(head, ensure_ascii=True) + "\n").encode())

    def mark(self, index: int) -> None:
        self.steps[index].done = True
        fs.append_line(self.path, json.dumps({"done": index}), durable=False)  # a lost mark: redone

    def finish(self) -> None:
        self.finished = True
        fs.append_line(self.path, json.dumps({"finished": True}))


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
            elif event.get("finished"):
                journal.finished = True
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

    @property
    def ok(self) -> bool:
        return not self.self_check


def _new_journal(ctx: PassContext, steps: list[Step]) -> CompactJournal:
    directory = ctx.root / COMPACT_JOURNALS_DIR
    stem = compact_utc(ctx.now())
    path = directory / f"{stem}.jsonl"
    counter = 2
    while path.exists():
        path = directory / f"{stem}-{counter}.jsonl"
        counter += 1
    return CompactJournal(path, ctx.now_stamp(), ctx.now().date().isoformat(), steps)


def _carry_out(ctx: PassContext, journal: CompactJournal, outcome: CompactOutcome) -> None:
    pacer = Pacer(ctx.heartbeat)
    for index, step in enumerate(journal.steps):
        if step.done:
            continue
        outcome.written += run_step(ctx.root, step, pacer)
        journal.mark(index)
        crashpoint("step-marked")
        outcome.steps_done.append(step.title)
    pacer.flush()  # every planned write on disk before the catalog and the finished line
    snapshot = take_snapshot(ctx.root)
    fs.atomic_write(ctx.root / CATALOG, encode(render_catalog(snapshot, ctx.now())))
    crashpoint("catalog-written")
    journal.finish()
    ctx.heartbeat()


def refuse_unless_lossless(ctx: PassContext, plan: CompactPlan, before: Snapshot) -> None:
    """Check the store the plan would leave before writing any of it: a plan that would add a
    C2 failure (a pointer lost, say) or lose anything (C4) is refused, and nothing is written."""
    ghost = ctx.root / ".distilld-prediction-never-on-disk"  # existence checks must see only `files`
    files = dict(plan.files)
    files[CATALOG] = encode(render_catalog(snapshot_from_files(ghost, files), ctx.now()))
    after = snapshot_from_files(ghost, files)
    known = {(f.code, f.message) for f in check_c2(before) if f.severity == "fail"}
    new = [f for f in check_c2(after) + check_c4(before, after)
           if f.severity == "fail" and (f.code, f.message) not in known]
    if new:
        shown = "; ".join(f"[{f.group}] {f.message}" for f in new[:5])
        more = f" (and {len(new) - 5} more)" if len(new) > 5 else ""
        raise CompactRefused(f"the compacted store would fail its self-check: {shown}{more}. Nothing was "
                             "changed; reword or merge that entry by hand, or report the case")


def apply_compaction(ctx: PassContext, plan: CompactPlan, before: Snapshot) -> CompactOutcome:
    """Carry out a plan made from ``before`` (taken under the same lock), once the store it would
    leave has been checked."""
    outcome = CompactOutcome()
    if not plan.steps:
        return outcome
    refuse_unless_lossless(ctx, plan, before)
    journal = _new_journal(ctx, plan.steps)
    journal.create()
    crashpoint("journal-written")
    outcome.journal = journal.path
    _carry_out(ctx, journal, outcome)
    outcome.self_check = ctx.self_check(before)
    outcome.still_over_budget = ctx.still_over_budget
    return outcome


def recover_compaction(ctx: PassContext) -> CompactOutcome:
    """Finish every interrupted compaction, step by step, or stop at a file that changed."""
    outcome = CompactOutcome()
    for journal in unfinished_journals(ctx.root):
        outcome.journal = journal.path
        _carry_out(ctx, journal, outcome)
    if outcome.journal is not None:
        outcome.self_check = ctx.self_check()
        outcome.still_over_budget = ctx.still_over_budget
    return outcome
