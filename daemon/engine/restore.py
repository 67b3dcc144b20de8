"""restore PATH (STORE-FORMAT.md 4.5): bring an archived file, or its split family, back.

A journal in data/restore-journals/ is written before the first write; ``recover_restores``
rolls an interrupted restore forward. The ledger line always precedes the move.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

from ..errors import DistilldError, StoreRefused
from ..store import fs
from ..store.catalog import render_catalog
from ..store.findings import Finding
from ..store.hooks import entry_within_cap
from ..store.ledger import restore_event
from ..store.limits import Limits
from ..store.local import RESTORE_JOURNALS_DIR
from ..store.paths import (
    CATALOG,
    LEGACY_PREFIX,
    SPINE,
    archived_path,
    contained,
    is_legacy,
    strip_archive,
)
from ..store.safety import unsafe_name_reason
from ..store.snapshot import Snapshot, take_snapshot
from ..store.spine import Spine, add_entry, find_entry, room_problem
from ..store.text import decode, encode, sha256_hex, unescape_free_text
from ..store.tierfile import append_index_detail, set_frontmatter
from .context import PassContext
from .crash import crashpoint
from .gc import append_ledger, take_ledger
from .journal import unique_journal_path


class RestoreRefused(DistilldError):
    """The restore cannot be done; nothing was changed."""


class RestoreStopped(StoreRefused):
    """An interrupted restore met a state it cannot explain; nothing more was changed."""


@dataclass
class RestoreMember:
    path: str  # the tier path X it returns to
    source: str  # archive/X, or the legacy file for a legacy restore (a copy)
    event: str  # "restore", "restore (modified)", or "legacy copy"
    sha256: str  # checksum observed in the archive
    drift: bool  # differs from the ledger only by recall_count
    spine_entry: str  # the entry to add (already within the entry cap), "" to add none
    index_detail: str  # the whole saved hook, when the entry had to be shortened
    steps: list[str] = field(default_factory=list)


@dataclass
class RestoreJournal:
    path: Path
    today: str
    members: list[RestoreMember]
    finished: bool = False

    def save(self) -> None:
        payload = {"today": self.today, "members": [asdict(m) for m in self.members], "finished": self.finished}
        # ASCII JSON: a stray non-UTF-8 byte in an entry is escaped and reads back exactly.
        fs.atomic_write(self.path, (json.dumps(payload, indent=2) + "\n").encode())

    @classmethod
    def load(cls, path: Path) -> "RestoreJournal":
        data: dict[str, Any] = json.loads(path.read_text("utf-8"))
        return cls(path, data["today"], [RestoreMember(**m) for m in data["members"]], bool(data["finished"]))


@dataclass
class RestoreOutcome:
    restored: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    self_check: list[Finding] = field(default_factory=list)
    still_over_budget: list[Finding] = field(default_factory=list)  # breaches the store had before

    @property
    def ok(self) -> bool:
        return not self.self_check


# -- planning ---------------------------------------------------------------------------------

def _family(snapshot: Snapshot, archived: str) -> list[str]:
    """The archived split family of ``archived`` (parent first), each as an archive path."""
    members = {archived}
    changed = True
    while changed:
        changed = False
        for path in snapshot.archive_paths:
            if path in members or is_legacy(path):
                continue
            parent = snapshot.knowledge(path).split_from or ""
            if archived_path(parent) in members:
                members.add(path)
                changed = True
        for path in list(members):
            parent = snapshot.knowledge(path).split_from or ""
            if parent and contained(parent, "tier") and archived_path(parent) in snapshot.archive_paths \
                    and archived_path(parent) not in members:
                members.add(archived_path(parent))
                changed = True
    return sorted(members, key=lambda p: (bool(snapshot.knowledge(p).split_from), p))


def plan_restore(snapshot: Snapshot, given: str, limits: Limits) -> list[RestoreMember]:
    spine_limits = limits.spine
    entry_cap, entry_target = spine_limits.entry_max_bytes, spine_limits.entry_target_bytes
    spine_max_lines, spine_max_bytes = spine_limits.max_lines, spine_limits.max_bytes
    path = given
    unsafe = unsafe_name_reason(path)
    if unsafe:
        raise RestoreRefused(f"{given!r}: the name cannot be written to the ledger unchanged ({unsafe}); "
                             "rename the archived file first; nothing restored")
    if path.startswith(LEGACY_PREFIX) or (path.startswith("archive/") and is_legacy(path)):
        if not contained(path, "store") or path not in snapshot.archive_paths:
            raise RestoreRefused(f"{given}: no such legacy archive file; `distilld catalog --print` lists them")
        copy = [_plan_legacy(snapshot, path, None, entry_cap, entry_target)]
        _check_spine_room(snapshot, copy, spine_max_lines, spine_max_bytes, entry_cap)
        return copy
    tier_path = strip_archive(path)
    if not contained(tier_path, "tier"):
        raise RestoreRefused(f"{given}: not a contained tier path (like projects/x.md); nothing restored")
    archived = archived_path(tier_path)
    if archived not in snapshot.archive_paths:
        legacy = LEGACY_PREFIX + archived
        if legacy in snapshot.archive_paths:
            copy = [_plan_legacy(snapshot, legacy, tier_path, entry_cap, entry_target)]
            _check_spine_room(snapshot, copy, spine_max_lines, spine_max_bytes, entry_cap)
            return copy
        raise RestoreRefused(f"{archived}: no such archived file; `distilld catalog --print` lists the archive")
    ledger = snapshot.ledger
    members: list[RestoreMember] = []
    for member in _family(snapshot, archived):
        x = strip_archive(member)
        if snapshot.exists(x):
            raise RestoreRefused(f"{x} already exists; restoring {member} would overwrite it. Nothing restored.")
        last = ledger.last_event_by_path.get(x) if ledger else None
        line = ledger.last_archive_line(member) if ledger else None
        if last is None or not last.is_archive or line is None:
            raise RestoreRefused(f"{member}: the ledger's last event for {x} is not an archive; nothing restored")
        file = snapshot.knowledge(member)
        drift = False
        event = "restore"
        if file.sha256 != line.value("sha256"):
            if line.value("sha256-norm") == file.sha256_norm:
                drift = True
            else:
                event = "restore (modified)"
        saved = unescape_free_text(line.value("spine-entry") or "")
        entry, detail = entry_within_cap(saved, x, file.pinned, entry_cap, entry_target) if saved else ("", "")
        members.append(RestoreMember(x, member, event, file.sha256, drift, entry, detail))
    _check_spine_room(snapshot, members, spine_max_lines, spine_max_bytes, entry_cap)
    return members


def _plan_legacy(snapshot: Snapshot, legacy: str, tier_path: str | None, entry_cap: int,
                 entry_target: int) -> RestoreMember:
    file = snapshot.knowledge(legacy)
    target = tier_path or (file.fm("archived_from") or "").strip()
    if not contained(target, "tier"):
        raise RestoreRefused(f"{legacy}: legacy restore needs a target tier path (archived_from: is "
                             f"{target or 'missing'}); pass it as projects/x.md")
    if snapshot.exists(target) or snapshot.exists(archived_path(target)):
        raise RestoreRefused(f"{target} (or {archived_path(target)}) already exists; nothing restored")
    title = file.scope if file.scope != "(no scope)" else target.rsplit("/", 1)[-1][:-3]
    entry = f"- [{title}]({target}) \u2014 restored from the legacy archive {legacy}. Read when this topic comes up."
    entry, detail = entry_within_cap(entry, target, file.pinned, entry_cap, entry_target)
    return RestoreMember(target, legacy, "legacy copy", file.sha256, False, entry, detail)


def _check_spine_room(snapshot: Snapshot, members: list[RestoreMember], max_lines: int, max_bytes: int,
                      entry_cap: int) -> None:
    spine = snapshot.spine
    if spine is None:
        raise RestoreRefused(f"{snapshot.root}/SPINE.md is missing; nothing restored")
    problem = room_problem(spine, [(m.spine_entry, m.path) for m in members], max_lines, max_bytes, entry_cap)
    if problem:
        raise RestoreRefused(f"{problem}. Nothing restored.")


# -- carrying it out --------------------------------------------------------------------------

def _restore_member(ctx: PassContext, journal: RestoreJournal, member: RestoreMember) -> None:
    root = ctx.root
    x, source = root / member.path, root / member.source
    if member.event == "legacy copy":
        if "copied" not in member.steps:
            if not x.exists():
                file_raw = source.read_bytes()
                data = set_frontmatter(file_raw, {"restored_from": member.source, "last_updated": journal.today},
                                        ("archived_on", "reason", "recall_count", "archived_from"))
                if member.index_detail:
                    data = append_index_detail(data, member.index_detail, journal.today)
                fs.atomic_write(x, data)
            crashpoint("file-moved")
            _mark(journal, member, "copied")
    else:
        if "moved" not in member.steps:
            fs.finish_interrupted_move(source, x)
            _check_explained(member, source, x)
        if "ledger" not in member.steps:
            ledger = take_ledger(root)
            last = ledger.last_event_by_path.get(member.path) if ledger else None
            if last is None or not last.is_restore:
                line = partial(restore_event, tier_path=member.path, reason="user request",
                               sha256=member.sha256, modified=member.event == "restore (modified)")
                append_ledger(ctx, line)
                ctx.heartbeat()
            crashpoint("ledger-appended")
            _mark(journal, member, "ledger")
        if "moved" not in member.steps:
            if source.exists() and not x.exists():
                fs.move_exact(source, x)
                ctx.heartbeat()
            crashpoint("file-moved")
            _mark(journal, member, "moved")
        if "stamped" not in member.steps:
            data = set_frontmatter(x.read_bytes(), {"last_updated": journal.today},
                                    ("recall_count",) if member.drift else ())
            if member.index_detail and member.index_detail not in decode(data):
                data = append_index_detail(data, member.index_detail, journal.today)
            fs.atomic_write(x, data)
            ctx.heartbeat()
            crashpoint("file-stamped")
            _mark(journal, member, "stamped")
    if "spine" not in member.steps:
        spine = Spine(_read(root / SPINE))
        if member.spine_entry and find_entry(spine, member.path) is None:
            added = add_entry(spine, member.spine_entry, member.path, ctx.limits.spine.entry_max_bytes)
            fs.atomic_write(root / SPINE, encode(added))
            ctx.heartbeat()
        crashpoint("spine-edited")
        _mark(journal, member, "spine")


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise RestoreStopped(f"{path} is missing; stopped before writing it (restore it from git or a backup, "
                             "then run the command again)") from None


def _sha_of(path: Path) -> str | None:
    try:
        return sha256_hex(path.read_bytes())
    except FileNotFoundError:
        return None


def _check_explained(member: RestoreMember, source: Path, x: Path) -> None:
    """Before the move: the archived file as planned and nothing at X, or the move already made.
    Anything else (a stub an old client re-created at X, a vanished archive) stops the run."""
    source_sha, x_sha = _sha_of(source), _sha_of(x)
    if source_sha == member.sha256 and x_sha is None:
        return
    if source_sha is None and x_sha == member.sha256:
        return
    raise RestoreStopped(
        f"cannot restore {member.path}: {member.source} sha {source_sha or 'absent'}, {member.path} sha "
        f"{x_sha or 'absent'}, journal sha {member.sha256}. Nothing more was changed; compare the files "
        "with the ledger before running it again."
    )


def _mark(journal: RestoreJournal, member: RestoreMember, step: str) -> None:
    member.steps.append(step)
    journal.save()
    crashpoint("journal-marked")


def _finish(ctx: PassContext, journal: RestoreJournal) -> list[Finding]:
    fs.write_text_keeping_endings(ctx.root / CATALOG, render_catalog(take_snapshot(ctx.root), ctx.now()))
    ctx.heartbeat()
    crashpoint("catalog-written")
    journal.finished = True
    journal.save()
    ctx.heartbeat()
    return ctx.self_check()


def apply_restore(ctx: PassContext, members: list[RestoreMember]) -> RestoreOutcome:
    today = ctx.now().date().isoformat()
    path = unique_journal_path(ctx.root / RESTORE_JOURNALS_DIR, ctx.now())
    journal = RestoreJournal(path, today, members)
    journal.save()
    crashpoint("journal-written")
    outcome = RestoreOutcome()
    for member in members:
        _restore_member(ctx, journal, member)
        outcome.restored.append(member.path)
        if member.drift:
            outcome.notes.append(f"{member.path}: differed from its ledger checksum only by recall_count; "
                                 "the recall_count line was removed")
        if member.event == "restore (modified)":
            outcome.notes.append(f"{member.path}: archived bytes differ from the ledger checksum; "
                                 "restored anyway as 'restore (modified)'")
        if member.index_detail:
            outcome.notes.append(f"{member.path}: its saved SPINE entry was over the cap; a short entry was "
                                 "written and the whole hook appended under Index detail")
    outcome.self_check = _finish(ctx, journal)
    outcome.still_over_budget = ctx.still_over_budget
    return outcome


def unfinished_restores(root: Path) -> list[RestoreJournal]:
    directory = root / RESTORE_JOURNALS_DIR
    if not directory.is_dir():
        return []
    journals = []
    for path in sorted(directory.glob("*.json")):
        try:
            journal = RestoreJournal.load(path)
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise RestoreRefused(f"{path}: unreadable restore journal ({error}); check it by hand") from None
        if not journal.finished:
            journals.append(journal)
    return journals


def recover_restores(ctx: PassContext) -> RestoreOutcome:
    """Roll every interrupted restore forward, step by step, each step idempotent."""
    outcome = RestoreOutcome()
    for journal in unfinished_restores(ctx.root):
        for member in journal.members:
            _restore_member(ctx, journal, member)
            outcome.restored.append(member.path)
        outcome.self_check = _finish(ctx, journal)
    return outcome
