"""`distilld compact`: SPINE compaction and file splitting (preview, or apply with recovery first).

``run_compaction`` is also the scheduled pass the daemon calls.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ..engine.apply import JournalRun
from ..engine.context import PreviewInputs
from ..engine.driver import drive
from ..engine.passes.compaction.advice import CapFailure, cap_failures
from ..engine.passes.compaction.apply import (
    COMPACTION_JOURNALS_DIR,
    PASS_NAME,
    CompactionRefused,
    compaction_journals,
    refuse_unless_compaction_allowed,
)
from ..engine.passes.compaction.plan import CompactionPlan
from ..engine.passes.compaction.plan import plan as compaction_planner
from ..policy import Policy
from ..store.paths import SPINE
from ..store.snapshot import planned_snapshot, take_snapshot
from ..store.text import clip
from .passes import locked_pass, refuse_conflict_markers, refuse_unreadable_text, require_store_folder

@dataclass
class CompactionReport:
    mode: str  # "preview" or "apply"
    plan: CompactionPlan | None = None
    outcome: JournalRun | None = None
    recovery: JournalRun | None = None
    notes: list[str] = field(default_factory=list)
    # The caps the store fails once the pass is done (or would fail, in a preview), each with the
    # unit that could not be cut and what a person can do.
    over_caps: list[CapFailure] = field(default_factory=list)

    @property
    def pass_ok(self) -> bool:
        """The pass itself did what it planned: its self-check found nothing it caused."""
        return all(o is None or o.ok for o in (self.outcome, self.recovery))

    @property
    def ok(self) -> bool:
        """The pass is ok and leaves a store within its caps (the exit code: 0, else 1)."""
        return self.pass_ok and not self.over_caps

    def to_dict(self) -> dict[str, Any]:
        plan = self.plan
        return {
            "mode": self.mode,
            "ok": self.ok,
            "pass_ok": self.pass_ok,
            "over_caps": [f.to_dict() for f in self.over_caps],
            "notes": self.notes,
            "plan": None if plan is None else {
                "spine_before": {"lines": plan.spine_before[0], "bytes": plan.spine_before[1]},
                "spine_after": {"lines": plan.spine_after[0], "bytes": plan.spine_after[1]},
                "entries_cut": len(plan.cut),
                "entries_merged": len(plan.merged),
                "files_split": len(plan.splits),
                "children_created": plan.children,
                "pieces_over_target": plan.pieces_over_target,
                "level": plan.level,
                "hook_floor": plan.floor,
                "changes": [asdict(c) for c in plan.changes],
                "splits": [asdict(s) for s in plan.splits],
                "unsplittable": plan.unsplittable,
                "debt": plan.debt,
                "breaches": plan.breaches,
                "steps": [s.title for s in plan.steps],
            },
            "outcome": _outcome_dict(self.outcome),
            "recovery": _outcome_dict(self.recovery),
        }


def _outcome_dict(outcome: JournalRun | None) -> dict[str, Any] | None:
    if outcome is None:
        return None
    return {
        "journal": str(outcome.journal) if outcome.journal else None,
        "steps_done": outcome.steps_done,
        "written": [{"path": p, "sha256": s} for p, s in outcome.written],
        "self_check": [f.to_dict() for f in outcome.self_check],
        "still_over_budget": [f.to_dict() for f in outcome.still_over_budget],
        "rolled_back": outcome.rolled_back,
        "restored": outcome.restored,
        "kept": outcome.kept,
    }


def preview_compaction(store: Path, policy: Policy, now: datetime) -> CompactionReport:
    snapshot = take_snapshot(store)
    refuse_unless_compaction_allowed(snapshot)
    report = CompactionReport("preview", compaction_planner(snapshot, PreviewInputs(policy.limits, lambda: now)))
    assert report.plan is not None
    report.over_caps = cap_failures(planned_snapshot(snapshot, report.plan.files), policy.limits,
                                    report.plan.breaches)
    for journal in compaction_journals(snapshot.root):
        report.notes.append(f"unfinished compaction {journal.path}: --apply finishes it first")
    return report


def run_compaction(store: Path, policy: Policy, clock: Callable[[], datetime], wait: float = 0,
                apply: bool = True) -> CompactionReport:
    """The compaction pass: a preview (``apply=False``, no lock, nothing written), or under the
    lock: interrupted work recovered first, then the plan made and carried out."""
    if not apply:
        root = store.expanduser().resolve()
        require_store_folder(root)
        refuse_unreadable_text(root)  # a preview parses the SPINE too: junk is refused, not guessed at
        refuse_conflict_markers(root)
        return preview_compaction(store, policy, clock())
    with locked_pass(store, policy, clock, wait) as ctx:
        driven = drive(ctx, PASS_NAME, COMPACTION_JOURNALS_DIR, compaction_planner,
                       refuse=refuse_unless_compaction_allowed, refused_as=CompactionRefused, what="compacted")
        plan = driven.plan
        report = CompactionReport("apply", plan, driven.outcome, driven.recovery, driven.notes)
        if not plan.steps:
            report.notes.append("nothing to compact: the SPINE and every tier file are within their targets"
                                if not (plan.debt or plan.breaches or plan.unsplittable)
                                else "nothing more can be done mechanically")
        # the pass wrote nothing and rolled nothing back: what it planned from is the store as it is
        after = take_snapshot(ctx.root) if driven.wrote or driven.before is None else driven.before
        report.over_caps = cap_failures(after, policy.limits, plan.breaches)
        return report


def render_plan(plan: CompactionPlan, heading: str, over_caps: list[CapFailure] | None = None) -> list[str]:
    """The plan in plain lines; what ``over_caps`` explains (a file left over a cap, and why) is
    said once, there, not also here."""
    explained = {f.path for f in over_caps or []}
    said = {line for f in over_caps or [] for line in f.why}
    out = [heading]
    (lb, bb), (la, ba) = plan.spine_before, plan.spine_after
    out.append(f"SPINE: {lb} -> {la} lines, {bb} -> {ba} bytes")
    out.append(f"entries shortened: {len(plan.cut)}; merged into multi-pointer lines: {len(plan.merged)}"
               + (f" (entries over {plan.level} bytes cut to it)" if plan.cut else ""))
    if plan.changes and plan.floor_lowered:
        out.append(f"note: the pointer groups leave room for only {plan.floor}+ bytes of some hooks")
    for change in plan.changes:
        out.append(f"    - {change.kind} {', '.join(change.paths[:3])}{' …' if len(change.paths) > 3 else ''}: "
                   f"{len(change.before.encode())} -> {len(change.after.encode())} bytes; whole hook to "
                   f"{change.target}")
        if change.after:
            out.append(f"      {clip(change.after, 160)}")
    out.append(f"files split: {len(plan.splits)} ({plan.children} new files; "
               f"{plan.pieces_over_target} pieces end over the compaction target)")
    for split in plan.splits:
        why = " (over its caps after Index detail)" if split.after_index_detail else ""
        out.append(f"    - {split.path} -> {', '.join(split.children)}{why}")
    for problem in plan.unsplittable:
        if problem not in said:
            out.append(f"cannot split: {problem}")
    for item in plan.debt:
        if not (item.endswith(" is still over its caps") and item.split(" ", 1)[0] in explained):
            out.append(f"debt: {item}")
    for item in plan.breaches:
        if not (SPINE in explained and (item.startswith(SPINE) or item in said)):
            out.append(f"over a hard cap: {item}")
    return out


def _render_outcome(title: str, outcome: JournalRun, explained: bool = False) -> list[str]:
    out = [(f"{title}: journal {outcome.journal or '(none)'}; {len(outcome.steps_done)} steps, "
            f"{len(outcome.written)} files written")]
    if outcome.self_check:
        out.append("self-check FAILED:" + (" the pass was rolled back, the store is as it was"
                                           if outcome.rolled_back else ""))
        out += [f"    - [{f.group}] {f.message}" for f in outcome.self_check]
    elif outcome.rolled_back:
        out.append(f"rolled back: {outcome.rolled_back}")
    elif outcome.journal is not None:
        out.append("self-check passed (C1-C3, C4 against the store before the pass)")
    if outcome.still_over_budget and not explained:  # else listed with their reasons below
        out.append(f"still over budget from before this pass ({len(outcome.still_over_budget)}):")
        out += [f"    - [{f.group}] {f.message}" for f in outcome.still_over_budget[:10]]
    return out


def render_text(report: CompactionReport) -> str:
    out: list[str] = [f"note: {n}" for n in report.notes]
    if report.recovery:
        out += _render_outcome("recovered an interrupted compaction", report.recovery)
    if report.plan is not None:
        heading = "compact preview (nothing changed)" if report.mode == "preview" else "compact plan"
        out += render_plan(report.plan, heading, report.over_caps)
    if report.outcome:
        out += _render_outcome("compact", report.outcome, bool(report.over_caps))
    if report.over_caps:
        out.append(("the compacted store would still fail its caps" if report.mode == "preview" else
                    "the store still fails its caps") + " (exit 1); what cannot be cut, and what you can do:")
        for failure in report.over_caps:
            out += failure.render()
    return "\n".join(out) + "\n"


def render_json(report: CompactionReport) -> str:
    return json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n"
