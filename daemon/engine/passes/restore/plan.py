"""Planning a restore (STORE-FORMAT.md 4.5): which archived files come back (a split family
comes back whole), with which SPINE entry, and the steps that do it. Pure: a snapshot in, steps out."""

from __future__ import annotations

from dataclasses import dataclass

from ....errors import DistilldError
from ....store.hooks import entry_within_cap
from ....store.limits import Limits
from ....store.paths import LEGACY_PREFIX, SPINE, archived_path, contained, is_legacy, strip_archive
from ....store.safety import unsafe_name_reason
from ....store.snapshot import Snapshot
from ....store.spine import room_problem
from ....store.text import unescape_free_text
from ....store.tierfile import append_index_detail, set_frontmatter
from ....store.findings import Finding
from ...context import BUDGET_CODES, PlanInputs
from ...executor import FileMove, FileWrite, FrontmatterEdit, LedgerAppend, SpineEdit, Step


class RestoreRefused(DistilldError):
    """The restore cannot be done; nothing was changed."""


@dataclass
class RestoreMember:
    path: str  # the tier path X it returns to
    source: str  # archive/X, or the legacy file for a legacy restore (a copy)
    event: str  # "restore", "restore (modified)", or "legacy copy"
    sha256: str  # checksum observed in the archive
    drift: bool  # differs from the ledger only by recall_count
    spine_entry: str  # the entry to add (already within the entry cap), "" to add none
    index_detail: str  # the whole saved hook, when the entry had to be shortened


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



def legacy_copy_bytes(member: RestoreMember, archived: bytes, today: str) -> bytes:
    """A legacy archive file as its copy comes back: stamped, its archive keys dropped, and the
    whole saved hook under Index detail when its entry had to be shortened."""
    data = set_frontmatter(archived, {"restored_from": member.source, "last_updated": today},
                           ("archived_on", "reason", "recall_count", "archived_from"))
    return append_index_detail(data, member.index_detail, today) if member.index_detail else data


def member_steps(member: RestoreMember, today: str, entry_cap: int, archived: bytes | None) -> list[Step]:
    """A member's steps: the ledger line and the byte-exact move (one step, so the move is checked
    before the line is written), then the stamp, then the SPINE entry. The stamp and the entry
    are made on the files as they are when they run, so an edit made meanwhile (by the
    distiller, after a kill) is kept."""
    steps = []
    if member.event == "legacy copy":
        if archived is not None:
            steps.append(Step(f"copy {member.source} to {member.path}",
                              [FileWrite(member.path, None, legacy_copy_bytes(member, archived, today))]))
    else:
        steps.append(Step(f"bring {member.source} back to {member.path}", [
            LedgerAppend(member.path, "restore", member.sha256, "user request",
                         modified=member.event == "restore (modified)"),
            FileMove(member.source, member.path, member.sha256)]))
        steps.append(Step(f"stamp {member.path}", [FrontmatterEdit(
            member.path, {"last_updated": today}, ["recall_count"] if member.drift else [], member.index_detail,
            today)]))
    if member.spine_entry:
        steps.append(Step(f"point the SPINE at {member.path}", [SpineEdit(member.path, member.spine_entry, entry_cap)]))
    return steps


@dataclass
class RestorePlan:
    """What a restore brings back (a split family comes back whole) and the steps that do it;
    ``done`` says why there is nothing to do (the file is back already)."""

    members: list[RestoreMember]
    steps: list[Step]
    done: str = ""
    back: str = ""  # the tier path found back already

    def tolerates(self, finding: Finding) -> bool:
        """A restored file over its caps is reported, not refused: the person asked for it back
        as it was (the next compaction splits it)."""
        return finding.code in BUDGET_CODES and finding.path in {m.path for m in self.members}


def plan(snapshot: Snapshot, ctx: PlanInputs, *, given: str) -> RestorePlan:
    """The pass's planner (``given``, the path asked for, is bound before the pass plans)."""
    done = already_restored(snapshot, given)
    if done:
        return RestorePlan([], [], done, strip_archive(given))
    members = plan_restore(snapshot, given, ctx.limits)
    steps = restore_steps(snapshot, members, ctx.now().date().isoformat(), ctx.limits.spine.entry_max_bytes)
    return RestorePlan(members, steps)


def already_restored(snapshot: Snapshot, given: str) -> str:
    """Why ``given`` needs no restore: it is active, not archived, and the ledger's last event for
    it is a restore (one that a kill interrupted and the recovery finished, or an earlier one).
    Asking again is then answered as done, not refused."""
    tier_path = strip_archive(given)
    if not contained(tier_path, "tier") or not snapshot.exists(tier_path) \
            or archived_path(tier_path) in snapshot.archive_paths or snapshot.ledger is None:
        return ""
    last = snapshot.ledger.last_event_by_path.get(tier_path)
    if last is None or not last.is_restore:
        return ""
    return f"{tier_path} is back already (the ledger's last event for it is a restore); nothing to do"


def restore_steps(snapshot: Snapshot, members: list[RestoreMember], today: str, entry_cap: int) -> list[Step]:
    if SPINE not in snapshot.contents:
        raise RestoreRefused(f"{snapshot.root}/SPINE.md is missing; nothing restored")
    return [step for member in members
            for step in member_steps(member, today, entry_cap, snapshot.contents.get(member.source))]
