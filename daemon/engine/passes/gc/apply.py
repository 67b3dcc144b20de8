"""gc apply, recovery and revert (STORE-FORMAT.md 4.4): the plan carried out, crash-safe.

Order of every move: manifest (before the first move), ledger line, byte-exact move, checksum
verified, SPINE pointer removed, done flag, heartbeat. A crash anywhere leaves a manifest that
``recover_gc`` completes, or stops on, without guessing. The pass runs on the one pass driver
(engine/driver.py) with the manifest as its journal format (``ManifestFormat``); its recovery
and revert are its own, as the format fixes them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from ....crashpoints import crashpoint
from ....errors import StoreRefused
from ....store import fs
from ....store.findings import Finding
from ....store.hooks import entry_within_cap
from ....store.local import GC_LOG, GC_MANIFESTS_DIR
from ....store.paths import SPINE, archived_path, contained
from ....store.snapshot import Snapshot
from ....store.spine import Spine, find_entry, room_problem
from ....store.text import sha256_hex, sha256_norm_hex
from ....store.tierfile import append_index_detail
from .. import Pass, Recovered
from ...context import PassContext
from ...executor import Executor, FileMove, FileWrite, LedgerAppend, Op, Pacer, PlanStopped, SpineEdit, Step, take_ledger
from ...apply import JournalRun, carry_out_steps
from ...carrying import Carrying
from ...driver import apply_journalled
from ...finish import SelfChecked, finish_pass
from ...guard import refuse_unless_settled
from .manifest import (
    Manifest,
    ManifestMove,
    all_manifests,
    load_manifest,
    new_manifest,
    unfinished_manifests,
)
from .model import GcPlan


PASS_NAME = "gc"
NEVER_COMPLETED = "move never completed"  # the reason of the line that records an abandoned move


class GcRefused(StoreRefused):
    """gc may not run on this store now; the message says what to do first."""


class RecoveryStopped(StoreRefused):
    """Recovery met a state it cannot explain; nothing more was changed."""


@dataclass
class GcOutcome(SelfChecked):
    manifest: Path | None
    moved: list[str] = field(default_factory=list)
    recovered: list[str] = field(default_factory=list)
    abandoned: list[str] = field(default_factory=list)
    reverted: list[str] = field(default_factory=list)


def refuse_unless_gc_allowed(snapshot: Snapshot) -> None:
    refuse_unless_settled(snapshot, GcRefused, "before gc or restore", "migrate it before gc or restore",
                          "migrate --finish / --revert")


# -- small write steps shared by apply, recovery and revert ---------------------------------

def _sha(path: Path) -> str | None:
    try:
        return sha256_hex(path.read_bytes())
    except FileNotFoundError:
        return None


def log_blocked(ctx: PassContext, plan: GcPlan) -> None:
    """gc's local log names every move blocked this pass (data/, never committed)."""
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

def _executor(ctx: PassContext) -> Executor:
    # the format's order: each write on disk, and the lock's heartbeat, before the next
    return Executor(ctx.root, Pacer(ctx.heartbeat, interval=0, barrier=False), ctx.now_stamp, durable=True)


def _archive_one(ctx: PassContext, manifest: Manifest, index: int) -> None:
    """The move's step through the one executor (ledger line, move, SPINE edit), then its flag."""
    try:
        _executor(ctx).run(manifest.moves[index].step())
    except PlanStopped as stopped:
        raise RecoveryStopped(str(stopped)) from None
    manifest.mark(index)
    ctx.heartbeat()


def _finish(ctx: PassContext, manifest: Manifest, before: Snapshot | None) -> list[Finding]:
    def close() -> None:
        manifest.finished = True
        manifest.save()
    return finish_pass(ctx, before, close)


class ManifestFormat:
    """gc's journal for the one pass driver: the manifest the store format fixes, saved before
    the first move, each move's done flag set once its ledger line, move and SPINE edit are on
    disk. A move that meets a file other than planned stops the pass (it is only ever rolled
    forward, by ``recover_gc``)."""

    def refuse(self, ctx: PassContext, made: GcPlan) -> None:
        for move in _manifest_moves(made):  # all of them first: a split family moves whole or not at all
            _check_move_still_valid(ctx, move)

    def start(self, ctx: PassContext, name: str, journals: str, made: GcPlan) -> Manifest:
        manifest = new_manifest(ctx.root, ctx.now_stamp(), ctx.now(), _manifest_moves(made))
        for move in manifest.moves:  # again, at the last moment before the first write
            _check_move_still_valid(ctx, move)
        manifest.save()
        ctx.heartbeat()
        crashpoint("manifest-written")
        return manifest

    def carry(self, ctx: PassContext, manifest: Manifest, before: Snapshot, carrying: Carrying) -> JournalRun:
        run = JournalRun(manifest.path)
        try:
            run.written = carry_out_steps(_executor(ctx), manifest)
        except PlanStopped as stopped:
            raise RecoveryStopped(str(stopped)) from None
        run.steps_done = [step.title for step in manifest.steps]
        run.self_check = _finish(ctx, manifest, before)
        run.still_over_budget = ctx.still_over_budget
        return run


def _manifest_moves(plan: GcPlan) -> list[ManifestMove]:
    return [ManifestMove(m.source, m.target, m.sha256, m.sha256_norm, m.spine_entry, m.reason) for m in plan.moves]


# Rolled only forward (its ledger lines stay), each write on disk before the next, held to C4.
GC_CARRYING = Carrying(rolls_back=False, durable=True, journal_format=ManifestFormat())


def gc_outcome(plan: GcPlan, run: JournalRun) -> GcOutcome:
    """What a driven gc pass did, as its report says it."""
    outcome = GcOutcome(run.journal, [move.source for move in plan.moves] if run.journal else [])
    outcome.self_check, outcome.still_over_budget = run.self_check, run.still_over_budget
    return outcome


def apply_gc(ctx: PassContext, plan: GcPlan, before: Snapshot) -> GcOutcome:
    """Carry out a plan made from ``before`` (taken under the same lock), as the driver does."""
    outcome = gc_outcome(plan, apply_journalled(ctx, PASS_NAME, GC_MANIFESTS_DIR, plan, before, GcRefused,
                                                "archived", GC_CARRYING))
    log_blocked(ctx, plan)
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
        for index, move in enumerate(manifest.moves):
            if move.done or move.abandoned:
                continue
            _recover_move(ctx, manifest, index, outcome)
        outcome.self_check = _finish(ctx, manifest, None)
        outcome.still_over_budget = ctx.still_over_budget
    return outcome


def _recover_move(ctx: PassContext, manifest: Manifest, index: int, outcome: GcOutcome) -> None:
    move = manifest.moves[index]
    check_contained(move, manifest.path)
    fs.finish_interrupted_move(ctx.root / move.source, ctx.root / move.target)
    source_sha = _sha(ctx.root / move.source)
    target_sha = _sha(ctx.root / move.target)
    ledger = take_ledger(ctx.root)
    last = ledger.last_event_by_path.get(move.source) if ledger else None
    ledgered = last is not None and last.is_archive and last.value("sha256") == move.sha256
    # killed after the line that records a move that never completed, before its flag
    abandoned_line = last is not None and last.is_restore and last.value("reason") == NEVER_COMPLETED
    if source_sha == move.sha256 and target_sha is None or source_sha is None and target_sha == move.sha256:
        if source_sha is None and not ledgered:
            raise RecoveryStopped(f"{move.target} is archived but the ledger has no line for it; stopped")
        _archive_one(ctx, manifest, index)  # what is done already is seen as done
        outcome.recovered.append(move.source)
    elif (ledgered or abandoned_line) and source_sha != move.sha256 and target_sha is None:
        _executor(ctx).run(Step(f"record {move.source} as never moved",
                                [LedgerAppend(move.source, "restore", None, NEVER_COMPLETED)]))
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
    for index in reversed(range(len(manifest.moves))):
        move = manifest.moves[index]
        if not move.done or move.abandoned or move.reverted:
            continue
        try:
            _executor(ctx).run(_revert_step(ctx, move, reason))
        except PlanStopped as stopped:
            raise RecoveryStopped(str(stopped)) from None
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


def _revert_step(ctx: PassContext, move: ManifestMove, reason: str) -> Step:
    """Undoing one move, from the files as they are now: the restore line (unless restored
    meanwhile), the move back, the whole hook kept in the file when its entry must be shorter,
    and the SPINE entry."""
    source, target = ctx.root / move.source, ctx.root / move.target
    fs.finish_interrupted_move(target, source)
    if source.exists() and target.exists():  # re-created since, even after this revert's ledger line
        raise RecoveryStopped(f"cannot revert {move.source}: expected it in {move.target} only")
    ledger = take_ledger(ctx.root)
    last = ledger.last_event_by_path.get(move.source) if ledger else None
    # Restored meanwhile (by this revert before a crash, or by a user's restore): only the
    # SPINE entry and the flag remain to be seen to.
    already = last is not None and last.is_restore and (
        last.value("reason") == reason or (source.exists() and not target.exists()))
    archived_sha = _sha(target)
    if archived_sha is None and not source.exists():
        raise RecoveryStopped(f"cannot revert {move.source}: neither it nor {move.target} exists")
    # From here the file is in exactly one of the two places: archived (archived_sha) or back.
    ops: list[Op] = []
    if not already:
        if archived_sha is None:  # back in its place, yet with no restore line: not by a restore
            raise RecoveryStopped(f"cannot revert {move.source}: expected it in {move.target} only")
        modified = archived_sha != move.sha256 and sha256_norm_hex(target.read_bytes()) != move.sha256_norm
        ops.append(LedgerAppend(move.source, "restore", archived_sha, reason, modified=modified))
    if archived_sha is not None:
        ops.append(FileMove(move.target, move.source, archived_sha))
    if move.spine_entry and find_entry(Spine((ctx.root / SPINE).read_bytes()), move.source) is None:
        entry, detail = _entry_for(ctx, move)
        if detail:  # the saved entry is over the cap: a short entry, and the whole hook kept in the file
            raw = (target if archived_sha is not None else source).read_bytes()
            if detail not in raw.decode("utf-8", "surrogateescape"):
                data = append_index_detail(raw, detail, ctx.now().date().isoformat())
                ops.append(FileWrite(move.source, sha256_hex(raw), data))
        ops.append(SpineEdit(move.source, entry, ctx.limits.spine.entry_max_bytes))
    return Step(f"revert {move.source}", ops)


def _recover(ctx: PassContext) -> Recovered:
    outcome = recover_gc(ctx)
    return Recovered([f"finished an interrupted gc pass: archived {p}" for p in outcome.recovered]
                     + [f"finished an interrupted revert: restored {p}" for p in outcome.reverted]
                     + [f"recorded a gc move that never completed: {p}" for p in outcome.abandoned], outcome)


PASS = Pass(PASS_NAME, lambda root: [m.path for m in unfinished_manifests(root)], _recover)
