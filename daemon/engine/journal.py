"""The one journal: what a pass will write, written before its first write.

The executor carries any ``Journal`` out, and the one recovery finishes or rolls back any pass a
kill interrupted. ``PassJournal`` is the internal format, used by compaction, restore and every
pass the driver runs (engine/driver.py): ``data/<pass>-journals/<UTC-compact>.jsonl``.
Its first line holds every planned step with its operations (a write keeps the bytes it writes
and the bytes it replaces, with their checksums); then one line is appended per finished step,
one for the catalog's write, and a last line once the pass is finished or rolled back. Two
passes keep journals whose format STORE-FORMAT.md fixes, because the distiller may have to
finish what distilld started. The gc manifest (passes/gc/manifest.py) is an adapter of
``Journal``. The migration's PLAN.md checklist (passes/migration/checklist.py) is not: its
items are numbered from 1 for people, and not all of them are executor steps (the backup, the
catalog and the self-check are items too); its item steps go through the same executor.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from ..crashpoints import crashpoint
from ..errors import DistilldError
from ..store import fs
from ..store.text import whole_lines
from .executor import FileMove, FileWrite, Step, TwinAppend
from .step_json import op_from_json, op_to_json, step_from_json, step_to_json


class JournalUnreadable(DistilldError):
    """A journal cannot be read; the pass stops until a person has looked at it."""


class Journal(Protocol):
    """What the executor and the recovery need of any pass's journal."""

    path: Path

    @property
    def steps(self) -> list[Step]: ...

    @property
    def unfinished(self) -> bool: ...

    def mark(self, index: int) -> None:
        """Record that step ``index`` is carried out."""


def compact_utc(moment: datetime) -> str:
    return moment.strftime("%Y%m%dT%H%M%SZ")


def unique_journal_path(directory: Path, moment: datetime, suffix: str = ".json") -> Path:
    """``<UTC-compact><suffix>`` in ``directory``, or ``-2``, ``-3``… when a pass in the same
    second already took the name (``journal_order`` sorts them back into time order)."""
    stem = compact_utc(moment)
    path = directory / f"{stem}{suffix}"
    counter = 2
    while path.exists():
        path = directory / f"{stem}-{counter}{suffix}"
        counter += 1
    return path


def journal_order(path: Path) -> tuple[str, int]:
    # "<stamp>.json" comes before "<stamp>-2.json", though "-" sorts before "." as text.
    stamp, _, counter = path.stem.partition("-")
    return stamp, int(counter) if counter.isdigit() else 1


@dataclass
class PassJournal:
    path: Path
    pass_name: str
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

    @property
    def unfinished(self) -> bool:
        return not self.finished

    def create(self) -> None:
        head = {"pass": self.pass_name, "ts": self.ts, "today": self.today,
                "steps": [step_to_json(s) for s in self.steps]}
        fs.atomic_write(self.path, (json.dumps(head, ensure_ascii=True) + "\n").encode())

    def mark(self, index: int) -> None:
        self.steps[index].done = True
        fs.append_line(self.path, json.dumps({"done": index}), durable=False)  # a lost mark: redone
        crashpoint("step-marked")

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
        """Every exact write of the pass in the order it is made, the catalog's last."""
        found = [op for step in self.steps for op in step.ops if isinstance(op, FileWrite)]
        return found + ([self.catalog] if self.catalog is not None else [])


def new_journal(directory: Path, pass_name: str, moment: datetime, ts: str, steps: list[Step]) -> PassJournal:
    return PassJournal(unique_journal_path(directory, moment, ".jsonl"), pass_name, ts,
                       moment.date().isoformat(), steps)


def load_journal(path: Path, pass_name: str) -> PassJournal:
    try:
        # A torn final line (no line break: a full disk cut the append) never happened; the
        # next append takes it back (store/fs.py), and the pass resumes from the lines before.
        lines = whole_lines(path.read_bytes()).decode("utf-8").splitlines()
        head: dict[str, Any] = json.loads(lines[0])
        journal = PassJournal(path, str(head.get("pass", pass_name)), str(head["ts"]), str(head["today"]),
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
        raise JournalUnreadable(f"{path}: not a readable {pass_name} journal ({error}); move it out of "
                                f"{path.parent.name}/ after checking the store, then run the pass again") from None


# A journal's finished line is its last and is short: this much of its tail holds it whole.
_TAIL_BYTES = 256


def closed(path: Path) -> bool:
    """Does the journal end with its finished line? Read from its tail only: a finished journal's
    first line holds every byte its pass wrote (megabytes for a big compaction), finished journals
    are never deleted, and every job asks for the unfinished ones."""
    try:
        with path.open("rb") as handle:
            handle.seek(max(0, handle.seek(0, 2) - _TAIL_BYTES))
            tail = whole_lines(handle.read())
        event = json.loads(tail.rstrip(b"\n").rpartition(b"\n")[2])
    except (OSError, ValueError):
        return False  # read whole, and said unreadable there if it is
    return isinstance(event, dict) and event.get("finished") is True


def unfinished_journals(directory: Path, pass_name: str) -> list[PassJournal]:
    if not directory.is_dir():
        return []
    journals = [load_journal(p, pass_name) for p in sorted(directory.glob("*.jsonl"), key=journal_order)
                if not closed(p)]
    return [j for j in journals if not j.finished]


def planned_checksums(steps: list[Step]) -> dict[str, set[str]]:
    """Every checksum a path holds at some point of the plan: a file with one of them was
    written by this plan, not by someone else."""
    found: dict[str, set[str]] = {}
    for step in steps:
        for op in step.ops:
            if isinstance(op, FileWrite):
                found.setdefault(op.path, set()).add(op.after)
            elif isinstance(op, FileMove):
                found.setdefault(op.target, set()).add(op.sha256)
            elif isinstance(op, TwinAppend) and op.planned:
                found.setdefault(op.path, set()).add(op.planned)
    return found
