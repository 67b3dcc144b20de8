"""The one executor: the operations every pass plans, and their idempotent execution.

A planner computes every write in advance: the bytes a file gets, and the checksum of the
bytes it replaces. Carrying a step out again after a crash is then safe: a file already holding
the planned bytes is left alone, a file holding the bytes the plan expected is written, and
anything else means someone changed the file meanwhile, so the run stops there.

Three operations are derived from the file as it is when they run, because the format fixes
what their journal holds (a gc manifest names moves, not SPINE bytes) or because they must be
stamped when they are written: a ledger line, a SPINE pointer removed or added, evidence lines
appended to a twin. Each knows from the file itself whether it is done.

Every operation is followed by its write boundary (crashpoints.py), so the crash tests can
stop any pass after any write.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ..crashpoints import crashpoint
from ..errors import StoreRefused
from ..store import fs
from ..store.evidence import twin_after
from ..store.ledger import LEDGER_HEADER, Ledger, archive_event, ledger_stamp, restore_event
from ..store.paths import LEDGER, SPINE
from ..store.spine import Spine, add_entry, find_entry, remove_pointer
from ..store.text import decode, sha256_hex, whole_lines
from ..store.tierfile import append_index_detail, set_frontmatter


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
class FileRemove:
    """Remove ``path``, which must hold the bytes of checksum ``before`` (a rollback taking back a
    file its pass created); done when it is absent."""

    path: str
    before: str


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


@dataclass
class LedgerAppend:
    """Append one ledger event for ``tier_path``, stamped as it is written and never earlier
    than the newest line; done once the ledger's last event for the path is this one."""

    tier_path: str
    event: str  # "archive" or "restore"
    sha256: str | None
    reason: str
    sha256_norm: str = ""
    spine_entry: str = ""
    modified: bool = False

    def line(self, stamp: str) -> str:
        if self.event == "archive":
            return archive_event(stamp, self.tier_path, self.sha256 or "", self.sha256_norm, self.reason,
                                 self.spine_entry)
        return restore_event(stamp, self.tier_path, self.reason, self.sha256, self.modified)

    def done_in(self, ledger: Ledger | None) -> bool:
        last = ledger.last_event_by_path.get(self.tier_path) if ledger else None
        if last is None:
            return False
        if self.event == "archive":
            return last.is_archive and last.value("sha256") == self.sha256
        return last.is_restore and last.value("reason") == self.reason


@dataclass
class SpineEdit:
    """Remove the SPINE pointer to ``path`` (``entry`` empty), or add ``entry`` for it; done when
    the SPINE already says so."""

    path: str
    entry: str = ""
    entry_cap: int | None = None

    def result(self, current: bytes) -> bytes | None:
        """The SPINE's new bytes, or None when there is nothing to do."""
        spine = Spine(current)
        if not self.entry:
            removal = remove_pointer(spine, self.path)
            return None if removal is None else removal.text.encode("utf-8", "surrogateescape")
        if find_entry(spine, self.path) is not None:
            return None
        return add_entry(spine, self.entry, self.path, self.entry_cap).encode("utf-8", "surrogateescape")


@dataclass
class FrontmatterEdit:
    """Set and drop frontmatter keys of ``path`` (and keep a whole hook under its Index detail),
    on the file as it is: a restored file's stamp, which an edit made since does not stop."""

    path: str
    fields: dict[str, str]
    drop: list[str]
    index_detail: str = ""
    today: str = ""

    def result(self, current: bytes) -> bytes:
        data = set_frontmatter(current, self.fields, tuple(self.drop))
        if self.index_detail and self.index_detail not in decode(data):
            data = append_index_detail(data, self.index_detail, self.today)
        return data


Op = FileWrite | FileRemove | FileMove | TwinAppend | LedgerAppend | SpineEdit | FrontmatterEdit

# The write boundary after each kind of operation (crashpoints.py).
BOUNDARY: dict[type, str] = {FileWrite: "file-written", FileRemove: "file-restored", FileMove: "file-moved",
                             TwinAppend: "file-written",
                             LedgerAppend: "ledger-appended", SpineEdit: "spine-edited",
                             FrontmatterEdit: "file-stamped"}


@dataclass
class Step:
    title: str
    ops: list[Op] = field(default_factory=list)
    done: bool = False



# -- carrying out ----------------------------------------------------------------------------

def _sha(path: Path) -> str | None:
    data = _read(path)
    return None if data is None else sha256_hex(data)


class Pacer:
    """After every file: a lock heartbeat and a durability barrier, at most once per second.

    The lock's epoch counts whole seconds and goes stale after minutes, so a second heartbeat
    within the same second would only rewrite the same line (milliseconds of fsync per file);
    and the planned writes need no fsync each, because the journal holds their bytes: a write a
    power cut loses is done again on resume. The first tick always beats.
    """

    def __init__(self, heartbeat: Callable[[], None], interval: float = 1.0, barrier: bool = True) -> None:
        # interval 0: a heartbeat after every file (the gc and restore order of the format);
        # barrier False: the executor writes durably already, so no sync is needed
        self.heartbeat = heartbeat
        self.interval = interval
        self.barrier = barrier
        self.last: float | None = None

    def tick(self) -> None:
        now = time.monotonic()
        if self.last is None or now - self.last >= self.interval:
            self.flush()

    def flush(self) -> None:
        if self.barrier:
            fs.sync_barrier()
        self.heartbeat()
        self.last = time.monotonic()


def take_ledger(root: Path) -> Ledger | None:
    try:
        # A torn final line is a write that never finished: no decision is built on it.
        return Ledger(whole_lines((root / LEDGER).read_bytes()))
    except FileNotFoundError:
        return None


def append_ledger(ctx: StampedRoot, line_for: Callable[[str], str]) -> None:
    """Append one ledger line, stamped never earlier than the newest line already there (the
    reverts' ledger lines, which are decided as they go)."""
    stamp = ledger_stamp(take_ledger(ctx.root), ctx.now_stamp())
    fs.append_line(ctx.root / LEDGER, line_for(stamp), LEDGER_HEADER)


class StampedRoot(Protocol):
    root: Path

    def now_stamp(self) -> str: ...


def move_state(root: Path, move: FileMove) -> str:
    """"pending", "done", or what makes the move impossible as planned. A move killed between
    its link and its unlink (one file under two names) is finished first: its old name goes."""
    fs.finish_interrupted_move(root / move.source, root / move.target)
    source, target = _sha(root / move.source), _sha(root / move.target)
    if source is None and target == move.sha256:
        return "done"
    if source == move.sha256 and target is None:
        return "pending"
    why = (f"{root / move.source}: cannot move it to {move.target} as planned (source {source or 'absent'}, "
           f"target {target or 'absent'}, planned {move.sha256}); stopped")
    if source is not None and target is None:  # edited after the plan: the journal cannot go on by itself
        why += (f". It was changed after the pass planned the move. To finish: copy it aside, put back the "
                f"bytes the plan names (`git checkout -- {move.source}` in a git store, if its last commit "
                f"holds them), run the command again, then carry your change over to {move.target}")
    return why


def _read(path: Path) -> bytes | None:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


EDIT_ATTEMPTS = 3  # a file changed while its edit was flushed: edited again from it as it is now


def _changed_since_planned(root: Path, op: FileWrite, current: str | None) -> str:
    state = "absent" if current is None else f"sha256 {current}"
    expected = "absent" if op.before is None else f"sha256 {op.before}"
    return (f"{root / op.path}: changed since the plan was made ({state}, the plan expects {expected}); "
            "stopped before writing it, so that change is kept. A compaction undoes its own writes and plans "
            "again by itself; for a migration, `distilld migrate --revert` puts the backup back and keeps later "
            "changes aside; otherwise compare the file with git (`git diff`) and run the command again")


class Executor:
    """Carries out a pass's steps in order, each operation idempotent, and paces the lock's
    heartbeat. ``durable`` writes each file to disk before the next operation, for passes whose
    journal holds no bytes to write again (gc, restore); ``on_write`` hears of every file written."""

    def __init__(self, root: Path, pacer: Pacer, now_stamp: Callable[[], str], durable: bool = False,
                 on_write: Callable[[str, str], None] | None = None) -> None:
        self.root, self.pacer, self.now_stamp = root, pacer, now_stamp
        self.durable, self.on_write = durable, on_write

    def run(self, step: Step) -> list[tuple[str, str]]:
        """Carry out a step's operations in order, from the first one after the last that is
        done: a later operation may change what an earlier one left (a restored file is stamped
        after its move), so a resumed step goes on from where it was cut. The moves still to
        make are checked first: no ledger line is written for a move that cannot be made."""
        ops = step.ops[self.resume_point(step):]
        for op in ops:
            if isinstance(op, FileMove):
                state = move_state(self.root, op)
                if state not in ("pending", "done"):
                    raise PlanStopped(state)
        written: list[tuple[str, str]] = []
        for op in ops:
            done = self.carry_out(op)
            crashpoint(BOUNDARY[type(op)])
            for path, checksum in done:
                if self.on_write is not None:
                    self.on_write(path, checksum)
            written += done
            self.pacer.tick()
        return written

    def resume_point(self, step: Step) -> int:
        """The index after the last exact operation of the step that is done (0: none is). Only
        an exact write or move is evidence that the step got that far: a derived operation can
        be "done" before the step began (a file that never had a SPINE pointer), and so can a
        write that changes nothing."""
        for index in reversed(range(len(step.ops))):
            op = step.ops[index]
            if isinstance(op, FileMove) and move_state(self.root, op) == "done":
                return index + 1
            if isinstance(op, FileWrite) and op.before != op.after and _sha(self.root / op.path) == op.after:
                return index + 1
        return 0

    def _edit(self, relative: str, edit: Callable[[bytes | None], bytes | None]) -> list[tuple[str, str]]:
        """An edit of a file as it is (a stamp, a SPINE pointer): made again from the file as it
        is now when a lockless writer changed it while the edited bytes were being flushed."""
        path = self.root / relative
        for _ in range(EDIT_ATTEMPTS):
            raw = _read(path)
            edited = edit(raw)
            if edited is None:
                return []
            try:
                fs.atomic_write(path, edited, durable=self.durable, unchanged=lambda: _read(path) == raw)
            except fs.ChangedMeanwhile:
                continue
            return [(relative, sha256_hex(edited))]
        raise PlanStopped(f"{path}: changed by another program {EDIT_ATTEMPTS} times while it was being edited; "
                          "stopped, so its changes are kept: run the command again")

    def carry_out(self, op: Op) -> list[tuple[str, str]]:
        """Do ``op`` unless it is done; the (path, checksum) of every file it wrote or moved."""
        root = self.root
        if isinstance(op, FileWrite):
            current = _sha(root / op.path)
            if current == op.after:
                return []
            if current != op.before:
                raise PlanStopped(_changed_since_planned(root, op, current))
            try:
                fs.atomic_write(root / op.path, op.data, durable=self.durable,
                                unchanged=lambda: _sha(root / op.path) == op.before)
            except fs.ChangedMeanwhile:
                raise PlanStopped(_changed_since_planned(root, op, _sha(root / op.path))) from None
            return [(op.path, op.after)]
        if isinstance(op, FileRemove):
            current = _sha(root / op.path)
            if current is None:
                return []
            if current != op.before:
                raise PlanStopped(f"{root / op.path}: changed since it was planned to be removed (sha256 "
                                  f"{current}, the plan expects {op.before}); stopped, so that change is kept")
            fs.remove(root / op.path)
            return [(op.path, "")]
        if isinstance(op, FileMove):
            state = move_state(root, op)
            if state == "done":
                return []
            if state != "pending":
                raise PlanStopped(state)
            fs.move_exact(root / op.source, root / op.target)
            if _sha(root / op.target) != op.sha256:
                raise PlanStopped(f"{root / op.target}: its checksum after the move differs from the planned "
                                  f"{op.sha256}; stopped. Compare it with the ledger before anything else.")
            return [(op.target, op.sha256)]
        if isinstance(op, LedgerAppend):
            ledger = take_ledger(root)
            if op.done_in(ledger):
                return []
            fs.append_line(root / LEDGER, op.line(ledger_stamp(ledger, self.now_stamp())), LEDGER_HEADER)
            return [(LEDGER, _sha(root / LEDGER) or "")]
        if isinstance(op, FrontmatterEdit):
            def stamp(unstamped: bytes | None) -> bytes | None:
                if unstamped is None:
                    raise PlanStopped(f"{root / op.path} is missing; stopped before stamping it (restore it from "
                                      "git or a backup, then run the command again)")
                stamped = op.result(unstamped)
                return None if stamped == unstamped else stamped

            return self._edit(op.path, stamp)
        if isinstance(op, SpineEdit):
            def point(spine: bytes | None) -> bytes | None:
                if spine is None:
                    if not op.entry:
                        return None  # no SPINE, no pointer to remove
                    raise PlanStopped(f"{root / SPINE} is missing; stopped before adding the entry for {op.path} "
                                      "(restore it from git or a backup, then run the command again)")
                return op.result(spine)

            return self._edit(SPINE, point)
        twin = op  # evidence lines appended to a twin

        def append(raw: bytes | None) -> bytes | None:
            appended = twin.result(raw)
            return None if appended == raw else appended

        return self._edit(op.path, append)

