"""`distilld restore PATH`: bring an archived file (or its split family) back."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from functools import partial
from pathlib import Path

from ..engine.driver import drive
from ..engine.passes.gc.apply import refuse_unless_gc_allowed
from ..engine.passes.restore.apply import PASS_NAME, RESTORE_CARRYING, RestoreOutcome, restore_outcome
from ..engine.passes.restore.plan import RestoreRefused
from ..engine.passes.restore.plan import plan as restore_planner
from ..policy import Policy
from ..store.local import RESTORE_JOURNALS_DIR
from .passes import locked_pass
from .report import self_check_lines


def run_restore(store: Path, path: str, policy: Policy, clock: Callable[[], datetime],
                wait: float = 0) -> RestoreOutcome:
    """Finish whatever a killed pass left (reported as notes), then restore ``path`` on the one
    pass driver. A restore of ``path`` that a kill interrupted is finished by the recovery; the
    plan then finds the file back already and says so."""
    with locked_pass(store, policy, clock, wait) as ctx:
        driven = drive(ctx, PASS_NAME, RESTORE_JOURNALS_DIR, partial(restore_planner, given=path),
                       refuse=refuse_unless_gc_allowed, refused_as=RestoreRefused, what="restored",
                       carrying=RESTORE_CARRYING)
        return restore_outcome(driven)


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
