"""`distilld restore PATH`: bring an archived file (or its split family) back."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from ..engine.compact import recover_compaction, unfinished_journals
from ..engine.gc import recover_gc, refuse_unless_gc_allowed
from ..engine.journal import unfinished_manifests
from ..engine.restore import RestoreOutcome, apply_restore, plan_restore, recover_restores
from ..policy import Policy
from ..store.paths import strip_archive
from ..store.snapshot import take_snapshot
from .passes import locked_pass
from .report import self_check_lines


def run_restore(store: Path, path: str, policy: Policy, clock: Callable[[], datetime],
                wait: float = 0) -> RestoreOutcome:
    """Finish whatever a killed pass left (reported as notes), then restore ``path``."""
    with locked_pass(store, policy, clock, wait) as ctx:
        refuse_unless_gc_allowed(take_snapshot(ctx.root))
        notes: list[str] = []
        resumed = recover_restores(ctx)
        if resumed.restored:
            notes.append(f"finished an interrupted restore of {', '.join(resumed.restored)}")
            if strip_archive(path) in resumed.restored:
                resumed.notes = notes + resumed.notes
                return resumed  # this very restore was interrupted; finishing it was the whole job
        if unfinished_manifests(ctx.root):
            recovered = recover_gc(ctx)
            notes += [f"finished an interrupted gc pass: archived {p}" for p in recovered.recovered]
            notes += [f"finished an interrupted revert: restored {p}" for p in recovered.reverted]
            notes += [f"recorded a gc move that never completed: {p}" for p in recovered.abandoned]
        if unfinished_journals(ctx.root):  # a killed compaction's planned writes go first too
            finished = recover_compaction(ctx)
            notes.append(f"finished an interrupted compaction ({len(finished.steps_done)} steps)")
        members = plan_restore(take_snapshot(ctx.root), path, policy.spine.entry_max_bytes,
                               policy.spine.entry_target_bytes, policy.spine.max_lines, policy.spine.max_bytes)
        outcome = apply_restore(ctx, members)
        outcome.notes = notes + outcome.notes
        return outcome


def render_text(outcome: RestoreOutcome) -> str:
    out = [f"restored {p}" for p in outcome.restored]
    out += [f"note: {n}" for n in outcome.notes]
    out += self_check_lines(outcome.self_check, outcome.still_over_budget, "C1-C3")
    return "\n".join(out) + "\n"


def render_json(outcome: RestoreOutcome) -> str:
    payload = {
        "restored": outcome.restored,
        "notes": outcome.notes,
        "ok": outcome.ok,
        "self_check": [f.to_dict() for f in outcome.self_check],
        "still_over_budget": [f.to_dict() for f in outcome.still_over_budget],
    }
    return json.dumps(payload, indent=2, ensure_ascii=False) + "\n"
