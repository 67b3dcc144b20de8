"""A full disk at any byte of any store write, for the ENOSPC tests and the sweep benchmark.

``record_writes`` lists every write store/fs.py makes in an uninterrupted run (the file and its
length); ``full_disk_at(call, offset)`` lets the writes before ``call`` land, cuts write ``call``
after ``offset`` bytes (a short write) and fails it and every later write with ENOSPC, as a disk
that stays full until space is freed. ``whole_store_problems`` says what a store left by such a
fault must never show: a ledger line cut off, a journal that cannot be read.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from distilld.engine.journal import load_journal
from distilld.engine.passes.gc.manifest import load_manifest
from distilld.engine.passes.migration.checklist import migration_dirs
from distilld.store import fs
from distilld.store.ledger import Ledger
from distilld.store.local import GC_MANIFESTS_DIR, RESTORE_JOURNALS_DIR
from distilld.store.paths import LEDGER

COMPACTION_JOURNALS = "data/compact-journals"
# The append-only or journal files whose every byte is faulted, by kind.
KINDS: dict[str, tuple[str, ...]] = {
    "ledger": (LEDGER,),
    "restore journal": (RESTORE_JOURNALS_DIR + "/",),
    "compaction journal": (COMPACTION_JOURNALS + "/",),
    "gc manifest": (GC_MANIFESTS_DIR + "/",),
    "PLAN.md": ("/PLAN.md", ".PLAN.md.distilld-tmp"),
}


@dataclass(frozen=True)
class Write:
    path: str  # relative to the store (a temp file under its own name)
    size: int

    @property
    def in_place(self) -> bool:
        """An append to the file itself, not a temp file renamed over it."""
        return ".distilld-tmp." not in self.path

    @property
    def kind(self) -> str | None:
        for kind, marks in KINDS.items():
            if any(mark in "/" + self.path for mark in marks):
                return kind
        return None


def _path_of(fd: int) -> str:
    return os.readlink(f"/proc/self/fd/{fd}")


@dataclass
class _Recorder:
    root: str
    writes: list[Write] = field(default_factory=list)


@contextmanager
def record_writes(root: Path) -> Iterator[list[Write]]:
    """Every ``fs`` write made in the block, in order."""
    real = fs._write_all
    recorder = _Recorder(os.path.realpath(root))

    def recording(fd: int, data: bytes) -> None:
        recorder.writes.append(Write(os.path.relpath(_path_of(fd), recorder.root), len(data)))
        real(fd, data)

    fs._write_all = recording  # type: ignore[assignment]
    try:
        yield recorder.writes
    finally:
        fs._write_all = real  # type: ignore[assignment]


@contextmanager
def full_disk_at(call: int, offset: int) -> Iterator[None]:
    """Write number ``call`` (0-based) lands ``offset`` bytes, then the disk is full."""
    real_all, real_some = fs._write_all, fs._write_some
    seen = [0]

    def faulty(fd: int, data: bytes) -> None:
        index = seen[0]
        seen[0] += 1
        if index < call:
            real_all(fd, data)
            return
        if index == call and offset:
            real_some(fd, memoryview(data)[:offset])  # the short write a full disk makes
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    fs._write_all = faulty  # type: ignore[assignment]
    try:
        yield
    finally:
        fs._write_all = real_all  # type: ignore[assignment]


# An atomic write (a temp file renamed over its target) is faulted at every byte up to this size;
# past it, at every byte of its first and last EDGE bytes and every STRIDE-th between: its temp
# file goes whatever the byte, which these points show, and a 40 KB journal head would take
# hours byte by byte on a shared machine. In-place appends are faulted at every byte, always.
EVERY_BYTE_UP_TO = 1024
EDGE = 256
STRIDE = 61


def _offsets(write: Write, every_byte: bool) -> list[int]:
    size = write.size
    if not every_byte:
        return sorted({0, 1, size // 2, size - 1} & set(range(size)))
    if write.in_place or size <= EVERY_BYTE_UP_TO:
        return list(range(size))
    return sorted({*range(EDGE), *range(EDGE, size - EDGE, STRIDE), *range(size - EDGE, size)})


def fault_points(writes: list[Write], every_byte: bool, per_kind: int = 2) -> list[tuple[int, int, str]]:
    """(call, offset, kind) for the writes of the faulted kinds: every byte of each (see
    EVERY_BYTE_UP_TO), or (fast) the first, second, middle and last byte of the first
    ``per_kind`` writes of each kind."""
    points: list[tuple[int, int, str]] = []
    taken: dict[str, int] = {}
    for call, write in enumerate(writes):
        kind = write.kind
        if kind is None or write.size == 0:
            continue
        if not every_byte:
            if taken.get(kind, 0) >= per_kind:
                continue
            taken[kind] = taken.get(kind, 0) + 1
        points += [(call, offset, kind) for offset in _offsets(write, every_byte)]
    return points


def whole_store_problems(root: Path) -> list[str]:
    """A cut ledger line, a ledger line that does not parse, or a journal that cannot be read."""
    problems: list[str] = []
    ledger_path = root / LEDGER
    if ledger_path.exists():
        raw = ledger_path.read_bytes()
        if raw and not raw.endswith(b"\n"):
            problems.append(f"{LEDGER} ends in a torn line: {raw[-80:]!r}")
        ledger = Ledger(raw)
        problems += [f"{LEDGER}: {p.message}" for line in ledger.lines for p in line.problems]
    for directory, pass_name in ((root / RESTORE_JOURNALS_DIR, "restore"), (root / COMPACTION_JOURNALS, "compaction")):
        for path in sorted(directory.glob("*.jsonl")) if directory.is_dir() else []:
            try:
                load_journal(path, pass_name)
            except Exception as error:  # noqa: BLE001 - any failure to read is the finding
                problems.append(str(error))
    manifests = root / GC_MANIFESTS_DIR
    for path in sorted(manifests.glob("*.json")) if manifests.is_dir() else []:
        try:
            load_manifest(path)
        except Exception as error:  # noqa: BLE001
            problems.append(str(error))
    for migration in migration_dirs(root):
        if migration.plan_md.exists():
            try:
                migration.marks()
                migration.writes()
            except Exception as error:  # noqa: BLE001
                problems.append(f"{migration.plan_md}: {error}")
    return problems


def tree(root: Path) -> dict[str, bytes]:
    """The store's files outside data/ (its journals), the lock and its .status."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and not p.relative_to(root).as_posix().startswith(("data/", ".lock", ".status", ".git/"))}
