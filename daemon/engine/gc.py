"""gc apply, recovery and revert (STORE-FORMAT.md 4.4): the plan carried out, crash-safe.

Order of every move: manifest (before the first move), ledger line, byte-exact move, checksum
verified, SPINE pointer removed, done flag, heartbeat. A crash anywhere leaves a manifest that
``recover_gc`` completes, or stops on, without guessing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from ..errors import StoreRefused
from ..store import fs
from ..store.catalog import render_catalog
from ..store.findings import Finding
from ..store.hooks import entry_within_cap
from ..store.ledger import LEDGER_HEADER, Ledger, archive_event, ledger_stamp, restore_event
from ..store.local import GC_LOG, GC_MANIFESTS_DIR, pending_migrations
from ..store.paths import CATALOG, LEDGER, SPINE, Layout, archived_path, contained
from ..store.snapshot import Snapshot, take_snapshot
from ..store.spine import Spine, add_entry, find_entry, remove_pointer, room_problem
from ..store.text import sha256_hex, sha256_norm_hex
from ..store.tierfile import append_index_detail
from .context import PassContext
from .crash import crashpoint
from .journal import (
    Manifest,
    ManifestMove,
    all_manifests,
    load_manifest,
    new_manifest,
    unfinished_manifests,
)
from .plan import GcPlan


class GcRefused(StoreRefused):
    """gc may not run on this store now; the message says what to do first."""


class RecoveryStopped(StoreRefused):
    """Recovery met a state it cannot explain; nothing more was changed."""


@dataclass
class GcOutcome:
    manifest: Path | None
    moved: list[str] = field(default_factory=list)
    recovered: list[str] = field(default_factory=list)
    abandoned: list[str] = field(default_factory=list)
    reverted: list[str] = field(default_factory=list)
    self_check: list[Finding] = field(default_factory=list)
    still_over_budget: list[Finding] = field(default_factory=list)  # breaches the store had before

    @property
    def ok(self) -> bool:
        return not self.self_check


def refuse_unless_gc_allowed(snapshot: Snapshot) -> None:
    snapshot.require_readable()
    pending = pending_migrations(snapshot.root)
    if pending:
        raise GcRefused(f"{pending[0]}: a store migration is PENDING; finish or revert it "
                        "(migrate --finish / --revert) before gc or restore")
    if snapshot.layout is Layout.UNMIGRATED:
        raise GcRefused(f"{snapshot.root}: pre-1.2 store (no CATALOG.md); migrate it before gc or restore")


# -- small write steps shared by apply, recovery and revert ---------------------------------

def take_ledger(root: Path) -> Ledger | None:
    try:
        return Ledger((root / LEDGER).read_bytes())
    except FileNotFoundError:
        return None


def append_ledger(ctx: PassContext, line_for: Callable[[str], str]) -> None:
    """Append one ledger line, stamped never earlier than the newest line already there."""
    stamp = ledger_stamp(take_ledger(ctx.root), ctx.now_stamp())
    fs.append_line(ctx.root / LEDGER, line_for(stamp), LEDGER_HEADER)


def _remove_spine_pointer(ctx: PassContext, path: str) -> None:
    spine_path = ctx.root / SPINE
    try:
        spine = Spine(spine_path.read_bytes())
    except FileNotFoundError:
        return
    removal = remove_pointer(spine, path)
    if removal is not None:
        fs.atomic_write(spine_path, removal.text.encode("utf-8", "surrogateescape"))


def _sha(path: Path) -> str | None:
    try:
        return sha256_hex(path.read_bytes())
    except FileNotFoundError:
        return None


def _log_blocked(ctx: PassContext, plan: GcPlan) -> None:
    for skip in plan.by_status("blocked"):
        fs.append_line(ctx.root / GC_LOG, json.dumps(
            {"ts": plan.now, "path": skip.path, "status": "blocked", "reason": skip.reason}))
        ctx.heartbeat()


def check_contained(move: ManifestMove, where: Path) -> None:
    """D10 for a manifest's paths, before they are read, moved or written."""
    if not contained(move.source, "tier") or move.target != archived_path(move.source):
        raise RecoveryStopped(f"{where}: move {move.source} -> {move.target} fails path containment "
                              "(a tier path and archive/ + that path); stopped, nothing more was changed")


# -- apply -----------------------------------------------------------------------------------

def _archive_one(ctx: PassContext, manifest: Manifest, move: ManifestMove, ledger_done: bool) -> None:
    source, target = ctx.root / move.source, ctx.root / move.target
    if not ledger_done:
        append_ledger(ctx, lambda stamp: archive_event(
            stamp, move.source, move.sha256, move.sha256_norm, move.reason, move.spine_entry))
        ctx.heartbeat()
        crashpoint("ledger-appended")
    fs.move_exact(source, target)
    ctx.heartbeat()
    crashpoint("file-moved")
    if _sha(target) != move.sha256:
        raise RecoveryStopped(f"{move.target}: checksum after the move differs from the ledger's; "
                              "stopped. Compare it with the ledger line before anything else.")
    _remove_spine_pointer(ctx, move.source)
    ctx.heartbeat()
    crashpoint("spine-edited")
    move.done = True
    manifest.save()
    crashpoint("manifest-marked")
    ctx.heartbeat()


def _finish(ctx: PassContext, manifest: Manifest, before: Snapshot | None) -> list[Finding]:
    snapshot = take_snapshot(ctx.root)
    fs.write_text_keeping_endings(ctx.root / CATALOG, render_catalog(snapshot, ctx.now()))
    ctx.heartbeat()
    crashpoint("catalog-written")
    manifest.finished = True
    manifest.save()
    ctx.heartbeat()
    return ctx.self_check(before)


def apply_gc(ctx: PassContext, plan: GcPlan, before: Snapshot) -> GcOutcome:
    """Carry out a plan made from ``before`` (taken under the same lock)."""
    _log_blocked(ctx, plan)
    if not plan.moves:
        return GcOutcome(None)
    moves = [ManifestMove(m.source, m.target, m.sha256, m.sha256_norm, m.spine_entry, m.reason)
             for m in plan.moves]
    manifest = new_manifest(ctx.root, ctx.now_stamp(), ctx.now(), moves)
    for move in manifest.moves:  # all of them first: a split family moves whole or not at all
        _check_move_still_valid(ctx, move)
    manifest.save()
    ctx.heartbeat()
    crashpoint("manifest-written")
    outcome = GcOutcome(manifest.path)
    for move in manifest.moves:
        _archive_one(ctx, manifest, move, ledger_done=False)
        outcome.moved.append(move.source)
    outcome.self_check = _finish(ctx, manifest, before)
    outcome.still_over_budget = ctx.still_over_budget
    return outcome


def _check_move_still_valid(ctx: PassContext, move: ManifestMove) -> None:
    check_contained(move, ctx.root / "data/gc-manifests")
    if (ctx.root / move.target).exists():
        raise RecoveryStopped(f"{move.target} already exists; stopped before moving {move.source}")
    if _sha(ctx.root / move.source) != move.sha256:
        raise RecoveryStopped(f"{move.source} changed since the plan was made; stopped (run gc again)")


# -- recovery --------------------------------------------------------------------------------

def recover_gc(ctx: PassContext) -> GcOutcome:
    """Complete every unfinished manifest exactly as STORE-FORMAT.md 4.4 says, or stop."""
    outcome = GcOutcome(None)
    for manifest in unfinished_manifests(ctx.root):
        outcome.manifest = manifest.path
        if manifest.reverting:  # an interrupted revert is finished, never half-undone
            finished = revert_gc(ctx, manifest)
            outcome.reverted += finished.reverted
            outcome.self_check = finished.self_check
            continue
        for move in manifest.moves:
            if move.done or move.abandoned:
                continue
            _recover_move(ctx, manifest, move, outcome)
        outcome.self_check = _finish(ctx, manifest, None)
        outcome.still_over_budget = ctx.still_over_budget
    return outcome


def _recover_move(ctx: PassContext, manifest: Manifest, move: ManifestMove, outcome: GcOutcome) -> None:
    check_contained(move, manifest.path)
    fs.finish_interrupted_move(ctx.root / move.source, ctx.root / move.target)
    source_sha = _sha(ctx.root / move.source)
    target_sha = _sha(ctx.root / move.target)
    ledger = take_ledger(ctx.root)
    last = ledger.last_event_by_path.get(move.source) if ledger else None
    ledgered = last is not None and last.is_archive and last.value("sha256") == move.sha256
    if source_sha == move.sha256 and target_sha is None:
        _archive_one(ctx, manifest, move, ledger_done=ledgered)
        outcome.recovered.append(move.source)
    elif source_sha is None and target_sha == move.sha256:
        if not ledgered:
            raise RecoveryStopped(f"{move.target} is archived but the ledger has no line for it; stopped")
        _remove_spine_pointer(ctx, move.source)
        move.done = True
        manifest.save()
        ctx.heartbeat()
        outcome.recovered.append(move.source)
    elif ledgered and source_sha != move.sha256 and target_sha != move.sha256 and target_sha is None:
        append_ledger(ctx, lambda stamp: restore_event(stamp, move.source, "move never completed", None))
        move.abandoned = True
        manifest.save()
        ctx.heartbeat()
        outcome.abandoned.append(move.source)
    else:
        raise RecoveryStopped(
            f"{manifest.path}: cannot recover {move.source}: source sha {source_sha or 'absent'}, "
            f"archived sha {target_sha or 'absent'}, manifest sha {move.sha256}. Nothing more was "
            "changed; compare the files with the ledger (an older client may have re-created a stub)."
        )


# -- revert ----------------------------------------------------------------------------------

def newest_manifest(root: Path) -> Manifest:
    manifests = all_manifests(root)
    if not manifests:
        raise GcRefused(f"{root}: no gc manifest to revert (data/gc-manifests/ is empty)")
    return manifests[-1]


def resolve_manifest(root: Path, given: str | None) -> Manifest:
    """The newest manifest, or the one named: a file name (or path) inside data/gc-manifests/."""
    if given is None:
        return newest_manifest(root)
    directory = (root / GC_MANIFESTS_DIR).resolve()
    for candidate in (Path(given), directory / given, directory / f"{given}.json"):
        resolved = (candidate if candidate.is_absolute() else Path.cwd() / candidate).resolve()
        if resolved.parent == directory and resolved.is_file():
            return load_manifest(resolved)
    raise GcRefused(f"{given}: no such gc manifest; `ls data/gc-manifests/` lists them")


def revert_gc(ctx: PassContext, manifest: Manifest) -> GcOutcome:
    """Undo the done moves of a manifest, newest first, each with a restore line."""
    if manifest.reverted:
        return GcOutcome(manifest.path)  # already undone: nothing to do, nothing to fail
    outcome = GcOutcome(manifest.path)
    reason = f"revert {manifest.name}"
    for move in manifest.moves:
        check_contained(move, manifest.path)
    if not manifest.reverting:
        _check_room_for_revert(ctx, manifest)
        manifest.reverting = True
        manifest.save()
        ctx.heartbeat()
    for move in reversed(manifest.moves):
        if not move.done or move.abandoned or move.reverted:
            continue
        source, target = ctx.root / move.source, ctx.root / move.target
        fs.finish_interrupted_move(target, source)
        ledger = take_ledger(ctx.root)
        last = ledger.last_event_by_path.get(move.source) if ledger else None
        # Restored meanwhile (by this revert before a crash, or by a user's restore): only the
        # SPINE entry and the flag remain to be seen to.
        already = last is not None and last.is_restore and (
            last.value("reason") == reason or (source.exists() and not target.exists()))
        if not already:
            archived_sha = _sha(target)
            if archived_sha is None or source.exists():
                raise RecoveryStopped(f"cannot revert {move.source}: expected it in {move.target} only")
            modified = archived_sha != move.sha256 and sha256_norm_hex(target.read_bytes()) != move.sha256_norm
            line = partial(restore_event, tier_path=move.source, reason=reason, sha256=archived_sha,
                           modified=modified)
            append_ledger(ctx, line)
            ctx.heartbeat()
            crashpoint("ledger-appended")
        if target.exists() and not source.exists():
            fs.move_exact(target, source)
            ctx.heartbeat()
            crashpoint("file-moved")
        elif not source.exists():
            raise RecoveryStopped(f"cannot revert {move.source}: neither it nor {move.target} exists")
        _readd_spine_entry(ctx, move)
        ctx.heartbeat()
        crashpoint("spine-edited")
        move.reverted = True
        manifest.save()
        crashpoint("manifest-marked")
        ctx.heartbeat()
        outcome.reverted.append(move.source)
    manifest.reverted = True
    outcome.self_check = _finish(ctx, manifest, None)
    outcome.still_over_budget = ctx.still_over_budget
    return outcome


def _entry_for(ctx: PassContext, move: ManifestMove) -> tuple[str, str]:
    return entry_within_cap(move.spine_entry, move.source, False, ctx.limits.spine.entry_max_bytes,
                            ctx.limits.spine.entry_target_bytes)


def _check_room_for_revert(ctx: PassContext, manifest: Manifest) -> None:
    """A revert re-adds SPINE entries within the caps, or does not start (D1)."""
    pending = [m for m in reversed(manifest.moves) if m.done and not (m.abandoned or m.reverted) and m.spine_entry]
    spine = Spine((ctx.root / SPINE).read_bytes())
    problem = room_problem(spine, [(_entry_for(ctx, m)[0], m.source) for m in pending],
                           ctx.limits.spine.max_lines, ctx.limits.spine.max_bytes, ctx.limits.spine.entry_max_bytes)
    if problem:
        raise GcRefused(f"cannot revert {manifest.name}: {problem}. Nothing was changed.")


def _readd_spine_entry(ctx: PassContext, move: ManifestMove) -> None:
    spine_path = ctx.root / SPINE
    spine = Spine(spine_path.read_bytes())
    if find_entry(spine, move.source) is not None or not move.spine_entry:
        return
    entry, detail = _entry_for(ctx, move)
    if detail:  # the saved entry is over the cap: a short entry, and the whole hook kept in the file
        source = ctx.root / move.source
        today = ctx.now().date().isoformat()
        if detail not in source.read_bytes().decode("utf-8", "surrogateescape"):
            fs.atomic_write(source, append_index_detail(source.read_bytes(), detail, today))
    added = add_entry(spine, entry, move.source, ctx.limits.spine.entry_max_bytes)
    fs.atomic_write(spine_path, added.encode("utf-8", "surrogateescape"))
