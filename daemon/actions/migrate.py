"""`distilld migrate`: move a pre-1.2 store to the 1.2 layout (preview, apply, finish, revert)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from ..engine.passes.migration.apply import (
    MigrateOutcome,
    MigrationRefused,
    apply_migration,
    finish_migration,
    preview_migration,
)
from ..engine.passes.migration.revert import revert_migration
from ..engine.recovery import finish_interrupted
from ..errors import DistilldError
from ..exits import INTERRUPTED
from ..policy import Policy
from ..store.local import pending_migrations
from .passes import locked_pass

MODES = ("preview", "apply", "finish", "revert")


def run_migrate(store: Path, policy: Policy, clock: Callable[[], datetime], mode: str = "preview",
                wait: float = 0) -> MigrateOutcome:
    """Every mode runs under the store's lock; only preview writes nothing but its PLAN.md."""
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}")
    root = store.expanduser().resolve()
    if mode == "preview" and root.is_dir() and not os.access(root, os.W_OK):
        # a read-only store can still be previewed: read without the lock, nothing written
        return preview_migration(root, policy, clock(), write_plan=False)
    with locked_pass(store, policy, clock, wait) as ctx:
        if mode == "preview":
            return preview_migration(ctx.root, policy, ctx.now())
        if mode == "apply":
            pending = pending_migrations(ctx.root)
            if pending:  # refused before anything, recovery included, is done
                raise MigrationRefused(f"{pending[0]}: another migration is PENDING; run `distilld migrate "
                                       "--finish` or `--revert` first")
            resumed = finish_interrupted(ctx)
            outcome = apply_migration(ctx, policy)
            outcome.notes = resumed.all_notes + outcome.notes
            return outcome
        if mode == "finish":
            return finish_migration(ctx)
        return revert_migration(ctx)


class MigrationInterrupted(DistilldError):
    """Ctrl-C during a migration: the store is PENDING (or untouched); the message says how to go on."""

    exit_code = INTERRUPTED


def interrupted(store: Path, mode: str) -> MigrationInterrupted:
    pending = pending_migrations(store.expanduser().resolve()) if store.exists() else []
    if pending:
        return MigrationInterrupted(
            f"interrupted: the migration of {store} is PENDING ({pending[0]}); `distilld migrate --finish` "
            "resumes it where it stopped (`distilld migrate --revert` puts the backup back instead)")
    return MigrationInterrupted(f"interrupted during migrate --{mode} before the store was changed; "
                                "run `distilld migrate --apply` again when ready")


def exit_code(outcome: MigrateOutcome) -> int:
    """0 done (or planned), 6 when the plan is REFUSED (nothing may be changed), 1 when the
    self-check failed."""
    if outcome.plan is not None and outcome.plan.refusal:
        return 6
    return 0 if outcome.ok else 1


def render_text(outcome: MigrateOutcome) -> str:
    out = [f"note: {n}" for n in outcome.notes]
    plan = outcome.plan
    if plan is not None:
        out.append(f"kind: {plan.kind}")
        before, after = plan.budget_before, plan.budget_after
        if before and not plan.is_noop:
            out.append(f"SPINE: {before['spine_lines']} -> {after.get('spine_lines')} lines, "
                       f"{before['spine_bytes']} -> {after.get('spine_bytes')} bytes")
            out.append(f"tier files: {before['tier_files']} -> {after.get('tier_files')} "
                       f"(over a cap: {before['tier_files_over_cap']} -> {after.get('tier_files_over_cap')})")
        if plan.compact is not None:
            c = plan.compact
            out.append(f"entries shortened: {len(c.cut)}; merged: {len(c.merged)}; files split: {len(c.splits)} "
                       f"({c.children} new files); legacy archives adopted: {len(plan.adoptions)}; "
                       f"files with evidence moved: {len(plan.evidence)}; lifecycle moves: {len(plan.lifecycle)}; "
                       f"split pieces over the compaction target: {c.pieces_over_target}")
        out += [f"headroom not reached (the SPINE ends above migrate_max_*): {h}" for h in plan.headroom_missed]
        if plan.moved_references:
            out.append(f"references whose file moves ({len(plan.moved_references)}; the prose is kept as written):")
            out += [f"    - {line}" for line in plan.moved_references]
        if plan.refusal:
            out.append("REFUSED; nothing would be changed:")
            out += [f"    - {r}" for r in plan.refusal]
            out += [f"    could do by hand: {s}" for s in plan.suggestions[:30]]
    if outcome.directory is not None:
        label = "plan" if outcome.mode == "preview" else "migration"
        out.append(f"{label}: {outcome.directory}/PLAN.md")
    if outcome.mode != "preview":
        out.append(f"{outcome.mode}: {len(outcome.items_done)} checklist items done, {outcome.written} files written")
    if outcome.kept:
        out.append(f"changed after the backup, kept in kept-after-backup/ ({len(outcome.kept)}):")
        out += [f"    - {p}" for p in outcome.kept]
    if outcome.self_check:
        out.append("self-check FAILED (PENDING stays):")
        out += [f"    - [{f.group}] {f.message}" for f in outcome.self_check[:40]]
        if outcome.over_caps:
            out.append("what cannot be cut, and what you can do:")
            for failure in outcome.over_caps:
                out += failure.render()
    elif outcome.finished:
        out.append("reverted: the store is as it was before the migration (REVERTED written)"
                   if outcome.mode == "revert" else
                   "self-check passed (C1-C3, C4 against the backup); DONE written")
    return "\n".join(out) + "\n"


def render_json(outcome: MigrateOutcome) -> str:
    plan = outcome.plan
    payload: dict[str, Any] = {
        "mode": outcome.mode,
        "ok": outcome.ok,
        "directory": str(outcome.directory) if outcome.directory else None,
        "finished": outcome.finished,
        "items_done": outcome.items_done,
        "files_written": outcome.written,
        "kept_after_backup": outcome.kept,
        "self_check": [f.to_dict() for f in outcome.self_check],
        "over_caps": [f.to_dict() for f in outcome.over_caps],
        "notes": outcome.notes,
        "plan": None if plan is None else {
            "kind": plan.kind,
            "refusal": plan.refusal,
            "suggestions": plan.suggestions,
            "budget_before": plan.budget_before,
            "budget_after": plan.budget_after,
            "adoptions": plan.adoptions,
            "moved_references": plan.moved_references,
            "evidence": plan.evidence,
            "entries_cut": len(plan.compact.cut) if plan.compact else 0,
            "entries_merged": len(plan.compact.merged) if plan.compact else 0,
            "files_split": len(plan.compact.splits) if plan.compact else 0,
            "children_created": plan.compact.children if plan.compact else 0,
            "pieces_over_target": plan.compact.pieces_over_target if plan.compact else 0,
            "headroom_missed": plan.headroom_missed,
            "lifecycle_moves": [m.source for m in plan.lifecycle],
        },
    }
    return json.dumps(payload, indent=2, ensure_ascii=False) + "\n"
