"""`distilld gc`: the lifecycle pass (preview, apply with recovery first, revert)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ..engine.context import PassContext, PreviewInputs
from ..engine.driver import drive
from ..engine.passes.gc.apply import (
    GC_CARRYING,
    PASS_NAME,
    GcOutcome,
    GcRefused,
    gc_outcome,
    log_blocked,
    refuse_unless_gc_allowed,
    resolve_manifest,
    revert_gc,
)
from ..engine.passes.gc.plan import plan as gc_planner
from ..engine.passes.gc.manifest import all_manifests, unfinished_manifests
from ..engine.passes.gc.model import GcPlan, render_gc_plan
from ..engine.recovery import finish_interrupted
from ..policy import Policy
from ..store.local import GC_MANIFESTS_DIR, lifecycle_enabled
from ..store.snapshot import take_snapshot
from .passes import locked_pass, refuse_conflict_markers
from .report import self_check_lines


@dataclass
class GcReport:
    mode: str
    plan: GcPlan | None = None
    outcome: GcOutcome | None = None
    recovery: GcOutcome | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def archived(self) -> list[str]:
        """Every file this pass archived: those an interrupted pass left, then its own moves."""
        return [path for outcome in (self.recovery, self.outcome) if outcome is not None
                for path in (*outcome.recovered, *outcome.moved)]

    def commit_message(self) -> tuple[str, list[str]]:
        """The subject and body of the pass's commit, the same from the command line and the daemon."""
        count = len(self.archived)
        return (f"distilld: lifecycle archived {count} file{'' if count == 1 else 's'}",
                [f"archived {path}" for path in self.archived])

    @property
    def ok(self) -> bool:
        return all(o is None or o.ok for o in (self.outcome, self.recovery))

    def to_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "ok": self.ok,
            "plan": self.plan.to_dict() if self.plan else None,
            "outcome": _outcome_dict(self.outcome),
            "recovery": _outcome_dict(self.recovery),
            "notes": self.notes,
        }


def _outcome_dict(outcome: GcOutcome | None) -> dict[str, Any] | None:
    if outcome is None:
        return None
    data = asdict(outcome)
    data["manifest"] = str(outcome.manifest) if outcome.manifest else None
    data["self_check"] = [f.to_dict() for f in outcome.self_check]
    data["still_over_budget"] = [f.to_dict() for f in outcome.still_over_budget]
    return data


def preview_gc(store: Path, policy: Policy, now: datetime) -> GcReport:
    snapshot = take_snapshot(store)
    refuse_unless_gc_allowed(snapshot)
    refuse_conflict_markers(snapshot.root)
    report = GcReport("preview", gc_planner(snapshot, PreviewInputs(policy.limits, lambda: now)))
    for manifest in unfinished_manifests(snapshot.root):
        report.notes.append(f"unfinished manifest {manifest.path}: --apply recovers it first")
    return report


def run_gc_apply(store: Path, policy: Policy, clock: Callable[[], datetime], wait: float = 0,
                 scheduled: bool = False) -> GcReport:
    """Apply gc. A scheduled run needs the store's local .lifecycle to say ``enabled``; a user's
    explicit ``gc --apply`` is consent for that run."""
    if scheduled and not lifecycle_enabled(store.expanduser()):
        return GcReport("apply", notes=["lifecycle is disabled for this store (.lifecycle); moved nothing"])
    with locked_pass(store, policy, clock, wait) as ctx:
        driven = drive(ctx, PASS_NAME, GC_MANIFESTS_DIR, gc_planner, refuse=refuse_unless_gc_allowed,
                       refused_as=GcRefused, what="archived", carrying=GC_CARRYING)
        log_blocked(ctx, driven.plan)
        # the gc recovery itself is shown as the report's recovery, the others' as notes
        return GcReport("apply", driven.plan, gc_outcome(driven.plan, driven.outcome),
                        driven.resumed.outcome(PASS_NAME, GcOutcome), driven.resumed.notes_besides(PASS_NAME))


def _finish_interrupted(ctx: PassContext, report: GcReport) -> bool:
    """What a killed pass left is finished first, and said; whether there was any."""
    resumed = finish_interrupted(ctx)
    report.recovery = resumed.outcome("gc", GcOutcome)
    report.notes += resumed.notes_besides("gc")  # the gc recovery itself is shown as report.recovery
    return bool(resumed.outcomes)


def run_gc_revert(store: Path, policy: Policy, clock: Callable[[], datetime], manifest: str | None,
                  wait: float = 0) -> GcReport:
    with locked_pass(store, policy, clock, wait) as ctx:
        refuse_unless_gc_allowed(take_snapshot(ctx.root))
        report = GcReport("revert")
        _finish_interrupted(ctx, report)
        if manifest is None and not all_manifests(ctx.root):
            # nothing went wrong: no pass has moved anything here yet (exit 0, not a refusal)
            report.notes.append("nothing to revert: no gc pass has archived anything in this store "
                                "(data/gc-manifests/ is empty)")
            return report
        chosen = resolve_manifest(ctx.root, manifest)
        if chosen.reverted:
            report.notes.append(f"{chosen.path} is already reverted; nothing to do")
            return report
        report.outcome = revert_gc(ctx, chosen)
        if report.outcome.reverted:
            # A revert puts files back as they were, stamps included (unlike a restore).
            report.notes.append("reverted files keep their old activity stamps, so the next gc plans them "
                                "again; pin them, or use `distilld restore`, to keep them active")
        return report


def _render_outcome(title: str, outcome: GcOutcome) -> list[str]:
    out = [f"{title}: manifest {outcome.manifest or '(none)'}"]
    out += [f"    archived {p}" for p in outcome.moved]
    out += [f"    recovered {p}" for p in outcome.recovered]
    out += [f"    move never completed, recorded as restored: {p}" for p in outcome.abandoned]
    out += [f"    restored {p}" for p in outcome.reverted]
    checked = "C1-C3, C4 against the store before the pass" if outcome.moved else "C1-C3"
    out += self_check_lines(outcome.self_check, outcome.still_over_budget, checked)
    return out


def render_text(report: GcReport) -> str:
    out: list[str] = [f"note: {n}" for n in report.notes]
    if report.recovery:
        out += _render_outcome("recovery", report.recovery)
    if report.plan is not None:
        heading = "gc preview (nothing changed)" if report.mode == "preview" else "gc plan"
        out.append(render_gc_plan(report.plan, heading).rstrip("\n"))
    if report.outcome:
        out += _render_outcome(report.mode, report.outcome)
    return "\n".join(out) + "\n"


def render_json(report: GcReport) -> str:
    return json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n"
