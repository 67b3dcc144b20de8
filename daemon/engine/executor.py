"""Planned file operations and their idempotent execution (compaction and migration).

A planner computes every write in advance: the bytes a file gets, and the checksum of the
bytes it replaces. Carrying a step out again after a crash is then safe: a file already holding
the planned bytes is left alone, a file holding the bytes the plan expected is written, and
anything else means someone changed the file meanwhile, so the run stops there.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import StoreRefused
from ..store import fs
from ..store.evidence import twin_after
from ..store.text import decode, encode, sha256_hex
from .crash import crashpoint


class PlanStopped(StoreRefused):
    """A file is not as the plan expects; nothing more was changed."""


@dataclass
class FileWrite:
    """Give ``path`` the bytes ``data``; ``before`` is the checksum it must have (None: absent).
    ``previous`` holds the bytes it replaces, where a pass journals them to be able to undo it."""

    path: str
    before: str | None
    data: bytes
    previous: bytes | None = None

    @property
    def after(self) -> str:
        return sha256_hex(self.data)


@dataclass
class FileMove:
    """Move a file byte for byte (legacy adoption); ``sha256`` is its checksum."""

    source: str
    target: str
    sha256: str


@dataclass
class TwinAppend:
    """Append evidence lines to a twin, idempotent by count against the twin as planned."""

    path: str
    header: str  # the header of a twin that does not exist yet
    lines: list[str]
    base: dict[str, int]  # how often each planned line was in the twin when planned
    ending: str = "\n"
    planned: str = ""  # the checksum the twin has once appended to, as planned

    def result(self, current: bytes | None) -> bytes:
        return twin_after(current, self.header, self.lines, Counter(self.base), self.ending)


Op = FileWrite | FileMove | TwinAppend


@dataclass
class Step:
    title: str
    ops: list[Op] = field(default_factory=list)
    done: bool = False

    def paths(self) -> list[str]:
        out: list[str] = []
        for op in self.ops:
            out += [op.source, op.target] if isinstance(op, FileMove) else [op.path]
        return out


# -- carrying out ----------------------------------------------------------------------------

def _sha(path: Path) -> str | None:
    try:
        return sha256_hex(path.read_bytes())
    except FileNotFoundError:
        return None


class Pacer:
    """After every file: a lock heartbeat and a durability barrier, at most once per second.

    The lock's epoch counts whole seconds and goes stale after minutes, so a second heartbeat
    within the same second would only rewrite the same line (milliseconds of fsync per file);
    and the planned writes need no fsync each, because the journal holds their bytes: a write a
    power cut loses is done again on resume. The first tick always beats.
    """

    def __init__(self, heartbeat: Callable[[], None], interval: float = 1.0) -> None:
        self.heartbeat = heartbeat
        self.interval = interval
        self.last: float | None = None

    def tick(self) -> None:
        now = time.monotonic()
        if self.last is None or now - self.last >= self.interval:
            self.flush()

    def flush(self) -> None:
        fs.sync_barrier()
        self.heartbeat()
        self.last = time.monotonic()


def carry_out(root: Path, op: Op) -> list[tuple[str, str]]:
    """Do ``op`` unless it is done; the (path, checksum) of every file it wrote or moved."""
    if isinstance(op, FileWrite):
        current = _sha(root / op.path)
        if current == op.after:
            return []
        if current != op.before:
            state = "absent" if current is None else f"sha256 {current}"
            expected = "absent" if op.before is None else f"sha256 {op.before}"
            raise PlanStopped(f"{root / op.path}: changed since the plan was made ({state}, the plan "
                              f"expects {expected}); stopped before writing it. The interrupted pass "
                              "cannot finish over that change (a compaction undoes its own writes and plans "
                              "again; a migration: `distilld migrate --revert` puts the backup back and keeps "
                              "later changes aside)")
        fs.atomic_write(root / op.path, op.data, durable=False)
        return [(op.path, op.after)]
    if isinstance(op, FileMove):
        source, target = _sha(root / op.source), _sha(root / op.target)
        if source is None and target == op.sha256:
            return []
        if source != op.sha256 or target is not None:
            raise PlanStopped(f"{root / op.source}: cannot move it to {op.target} as planned (source "
                              f"{source or 'absent'}, target {target or 'absent'}, planned {op.sha256}); "
                              "stopped")
        fs.move_exact(root / op.source, root / op.target)
        return [(op.target, op.sha256)]
    path = root / op.path
    current_raw = path.read_bytes() if path.exists() else None
    data = op.result(current_raw)
    if current_raw == data:
        return []
    fs.atomic_write(path, data, durable=False)
    return [(op.path, sha256_hex(data))]


def run_step(root: Path, step: Step, pacer: Pacer,
             record: Callable[[str, str], None] | None = None) -> list[tuple[str, str]]:
    """Carry out a step's operations in order; record and pace after every file."""
    written: list[tuple[str, str]] = []
    for op in step.ops:
        done = carry_out(root, op)
        crashpoint("file-written")
        for path, checksum in done:
            if record is not None:
                record(path, checksum)
        written += done
        pacer.tick()
    return written


# -- serialising (the journal keeps the planned bytes, so a resume needs nothing else) --------

def op_to_json(op: Op) -> dict[str, Any]:
    if isinstance(op, FileWrite):
        found = {"write": op.path, "before": op.before, "data": decode(op.data)}
        return found if op.previous is None else {**found, "previous": decode(op.previous)}
    if isinstance(op, FileMove):
        return {"move": op.source, "to": op.target, "sha256": op.sha256}
    return {"twin": op.path, "header": op.header, "lines": op.lines, "base": op.base, "ending": op.ending,
            "planned": op.planned}


def op_from_json(data: dict[str, Any]) -> Op:
    if "write" in data:
        previous = data.get("previous")
        return FileWrite(str(data["write"]), data.get("before"), encode(str(data["data"])),
                         None if previous is None else encode(str(previous)))
    if "move" in data:
        return FileMove(str(data["move"]), str(data["to"]), str(data["sha256"]))
    return TwinAppend(str(data["twin"]), str(data["header"]), [str(x) for x in data["lines"]],
                      {str(k): int(v) for k, v in dict(data["base"]).items()}, str(data["ending"]),
                      str(data.get("planned", "")))


def step_to_json(step: Step) -> dict[str, Any]:
    return {"title": step.title, "done": step.done, "ops": [op_to_json(op) for op in step.ops]}


def step_from_json(data: dict[str, Any]) -> Step:
    return Step(str(data["title"]), [op_from_json(o) for o in data["ops"]], bool(data.get("done", False)))


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
            elif op.planned:
                found.setdefault(op.path, set()).add(op.planned)
    return found
