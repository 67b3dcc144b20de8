"""Plans: what a pass would do, as pure data. Preview renders a plan; apply executes it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ....store.text import shown
from ...executor import FileMove, LedgerAppend, Op, SpineEdit, Step


def archive_step(source: str, target: str, sha256: str, sha256_norm: str, reason: str, spine_entry: str,
                 done: bool = False) -> Step:
    """Archiving one file, as operations of the one executor: the ledger line, the byte-exact
    move, the SPINE pointer removed."""
    ops: list[Op] = [LedgerAppend(source, "archive", sha256, reason, sha256_norm, spine_entry),
                     FileMove(source, target, sha256), SpineEdit(source)]
    return Step(f"archive {source} -> {target}", ops, done)


@dataclass(frozen=True)
class Move:
    """Archive one tier file: ``source`` -> ``target``, with what the ledger line will say."""

    source: str
    target: str
    sha256: str
    sha256_norm: str
    spine_entry: str  # unescaped; the ledger escapes it
    reason: str
    stamp: str  # the activity stamp that made it stale
    age_days: int
    threshold_days: int
    directives: int  # [DIRECTIVE…] markers the file carries (the report must state them)
    referrers: tuple[str, ...] = ()  # active files that mention it in prose
    family: tuple[str, ...] = ()  # the split family it moves with (itself included)


@dataclass(frozen=True)
class Skip:
    path: str
    status: str  # "exempt", "blocked" or "ineligible"
    reason: str


@dataclass
class GcPlan:
    now: str
    moves: list[Move] = field(default_factory=list)
    skipped: list[Skip] = field(default_factory=list)
    spine_lines_before: int = 0
    spine_bytes_before: int = 0
    spine_lines_after: int = 0
    spine_bytes_after: int = 0
    spine_changes: list[str] = field(default_factory=list)  # human lines: removed / edited entries
    notes: list[str] = field(default_factory=list)

    @property
    def steps(self) -> list[Step]:
        return [archive_step(m.source, m.target, m.sha256, m.sha256_norm, m.reason, m.spine_entry) for m in self.moves]

    def by_status(self, status: str) -> list[Skip]:
        return [s for s in self.skipped if s.status == status]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def render_gc_plan(plan: GcPlan, heading: str = "gc preview (nothing changed)") -> str:
    out = [heading]
    out += [f"note: {shown(n)}" for n in plan.notes]
    out.append(f"moves: {len(plan.moves)}")
    for move in plan.moves:
        # the reason gives the days and the threshold already (they were said twice: issue 27)
        line = f"    - archive {shown(move.source)} -> {shown(move.target)} ({shown(move.reason)}; last activity {move.stamp})"
        if move.directives:
            line += f" [carries {move.directives} [DIRECTIVE] marker{'s' if move.directives != 1 else ''}]"
        out.append(line)
        if move.referrers:
            out.append(f"      referred to in prose by: {', '.join(shown(r) for r in move.referrers)} "
                       f"(readers will look in {shown(move.target)})")
    for status in ("exempt", "blocked", "ineligible"):
        items = plan.by_status(status)
        out.append(f"{status}: {len(items)}")
        out += [f"    - {shown(s.path)}: {shown(s.reason)}" for s in items]
    if plan.spine_changes:
        out.append("SPINE changes:")
        out += [f"    {shown(c)}" for c in plan.spine_changes]
    out.append(f"SPINE: {plan.spine_lines_before} -> {plan.spine_lines_after} lines, "
               f"{plan.spine_bytes_before} -> {plan.spine_bytes_after} bytes")
    return "\n".join(out) + "\n"
