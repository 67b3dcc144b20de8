"""A registered pass that has a planner and no action of its own: its preview (planned without the
lock, nothing written) and its apply (the one driver, engine/driver.py, under the lock). Both the
command (cli/pass_cmd.py) and the daemon's job (runtime/pass_job.py) call ``run_driven_pass``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from ..engine.apply import JournalRun
from ..engine.context import PreviewInputs
from ..engine.driver import drive
from ..engine.guard import refuse_unless_settled
from ..errors import StoreRefused
from ..policy import Policy
from ..registry import PassEntry
from ..store.snapshot import Snapshot, take_snapshot
from .passes import locked_pass, refuse_conflict_markers, refuse_unreadable_text, require_store_folder


@dataclass
class DrivenReport:
    name: str
    mode: str  # "preview" or "apply"
    steps: list[str] = field(default_factory=list)  # the titles of the steps planned
    outcome: JournalRun | None = None
    recovery: JournalRun | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(run is None or run.ok for run in (self.outcome, self.recovery))

    @property
    def changed(self) -> list[str]:
        return sorted({path for run in (self.recovery, self.outcome) if run is not None for path, _ in run.written})

    def commit_message(self) -> tuple[str, list[str]]:
        """The subject and body of the pass's commit, the same from the command line and the daemon."""
        count = len(self.changed)
        return (f"distilld: {self.name} ({len(self.steps)} steps, {count} file{'' if count == 1 else 's'} written)",
                [f"{self.name}: {title}" for title in self.steps])

    def to_dict(self) -> dict[str, Any]:
        return {"pass": self.name, "mode": self.mode, "ok": self.ok, "steps": self.steps, "notes": self.notes,
                "written": self.changed,
                "self_check": [f.to_dict() for run in (self.recovery, self.outcome) if run is not None
                               for f in run.self_check],
                "rolled_back": None if self.outcome is None else self.outcome.rolled_back}


def _settled(name: str) -> Callable[[Snapshot], None]:
    def refuse(snapshot: Snapshot) -> None:
        refuse_unless_settled(snapshot, StoreRefused, f"before the {name}",
                              "migrate it first: `distilld migrate`, then `distilld migrate --apply`")
    return refuse


def run_driven_pass(store: Path, entry: PassEntry, policy: Policy, clock: Callable[[], datetime],
                    wait: float = 0, apply: bool = True) -> DrivenReport:
    planner = entry.load_planner()
    if not apply:
        root = store.expanduser().resolve()
        require_store_folder(root)
        refuse_unreadable_text(root)
        refuse_conflict_markers(root)
        snapshot = take_snapshot(root)
        _settled(entry.name)(snapshot)
        plan = planner(snapshot, PreviewInputs(policy.limits, clock))
        return DrivenReport(entry.name, "preview", [step.title for step in plan.steps])
    with locked_pass(store, policy, clock, wait) as ctx:
        driven = drive(ctx, entry.name, entry.journals, planner, refuse=_settled(entry.name),
                       refused_as=StoreRefused)
        return DrivenReport(entry.name, "apply", [step.title for step in driven.plan.steps], driven.outcome,
                            driven.recovery, driven.notes)


def render_text(report: DrivenReport) -> str:
    out = [f"note: {note}" for note in report.notes]
    heading = f"{report.name} preview (nothing changed)" if report.mode == "preview" else f"{report.name}"
    out.append(f"{heading}: {len(report.steps)} steps" + ("" if report.steps else " (nothing to do)"))
    out += [f"    - {title}" for title in report.steps]
    if report.outcome is not None and report.outcome.journal is not None:
        out.append(f"journal {report.outcome.journal}; {len(report.outcome.written)} files written")
        if report.outcome.self_check:
            out.append("self-check FAILED: the pass was rolled back, the store is as it was")
            out += [f"    - [{f.group}] {f.message}" for f in report.outcome.self_check]
        elif report.outcome.rolled_back:
            out.append(f"rolled back: {report.outcome.rolled_back}")
        else:
            out.append("self-check passed (C1-C3, C4 against the store before the pass)")
    return "\n".join(out) + "\n"


def render_json(report: DrivenReport) -> str:
    return json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n"
