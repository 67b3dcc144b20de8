"""`distilld restore PATH`: bring an archived file (or its split family) back."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path

from ..engine.passes.gc.apply import refuse_unless_gc_allowed
from ..engine.recovery import finish_interrupted
from ..engine.passes.restore.apply import RestoreOutcome, apply_restore
from ..engine.passes.restore.plan import plan as restore_planner
from ..policy import Policy
from ..store.paths import strip_archive
from ..store.snapshot import take_snapshot
from .passes import locked_pass
from .report import self_check_lines


def run_restore(store: Path, path: str, policy: Policy, clock: Callable[[], datetime],
                wait: float = 0) -> RestoreOutcome:
    """Finish whatever a killed pass left (reported as notes), then restore ``path``."""
    with locked_pass(store, policy, clock, wait) as ctx:
        allowed = ctx.snapshot()
        refuse_unless_gc_allowed(allowed)
        resumed = finish_interrupted(ctx)
        recovered = resumed.outcome("restore", RestoreOutcome)
        if recovered is not None and strip_archive(path) in recovered.restored:
            recovered.notes = resumed.all_notes + recovered.notes
            return recovered  # this very restore was interrupted; finishing it was the whole job
        notes = resumed.all_notes
        before = take_snapshot(ctx.root) if resumed.outcomes else allowed  # nothing written since that read
        outcome = apply_restore(ctx, restore_planner(before, ctx, given=path), before)
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
