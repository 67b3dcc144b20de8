"""What a compaction did, in plain words: one activity line per thing done, and a summary for
status.json and the pass's commit message."""

from __future__ import annotations

from dataclasses import dataclass, field

from ..actions.compaction import CompactionReport

# Files over a cap the pass could not fix, named one line each up to this many: every pass says them
# again, and a big store over its caps had thousands, which cost a one-shot run more than its git
# work and rotated the activity log's history away. `distilld compact` lists them all.
LISTED_OVER_CAP = 20


@dataclass
class CompactionResult:
    ok: bool
    summary: str
    lines: list[str] = field(default_factory=list)  # one activity line per thing done
    changed: list[str] = field(default_factory=list)

    def commit_message(self) -> tuple[str, list[str]]:
        """The subject and body of the pass's commit, the same from the command line and the daemon."""
        return f"distilld: compaction ({self.summary})", self.lines


def describe_compaction(report: CompactionReport) -> CompactionResult:
    """Plain words for a compaction report: one line per thing done, and a summary."""
    lines: list[str] = []
    plan, outcome, recovery = report.plan, report.outcome, report.recovery
    if recovery is not None and recovery.journal is not None:
        lines.append(f"finished an interrupted compaction ({len(recovery.written)} files written)")
    written = [path for path, _ in (outcome.written if outcome else [])]
    summary = "; ".join(report.notes) or "nothing to compact"
    rolled_back = getattr(outcome, "rolled_back", None)
    if rolled_back:  # the store is as it was (and any foreign edit kept): nothing was compacted
        lines.append(f"compaction rolled back ({rolled_back})")
        written = []
    if plan is not None and plan.steps and outcome is not None and written:
        (lines_before, bytes_before), (lines_after, bytes_after) = plan.spine_before, plan.spine_after
        parts = []
        if (lines_before, bytes_before) != (lines_after, bytes_after):
            parts.append(f"SPINE.md {lines_before} -> {lines_after} lines, {bytes_before} -> {bytes_after} bytes")
            lines.append(f"compacted SPINE.md: {lines_before} -> {lines_after} lines, {bytes_before} -> "
                         f"{bytes_after} bytes ({len(plan.cut)} entries shortened, {len(plan.merged)} merged; "
                         "each whole hook kept in its file's Index detail)")
        for split in plan.splits:
            lines.append(f"split {split.path} into {', '.join(split.children)} (over its caps)")
        if plan.splits:
            parts.append(f"{len(plan.splits)} files split")
        summary = "; ".join(parts) or f"{len(written)} files rewritten"
    listed, unlisted = report.over_caps[:LISTED_OVER_CAP], report.over_caps[LISTED_OVER_CAP:]
    for failure in listed:  # the unit that cannot be cut, its size against the room, what to do
        lines.append(f"compaction could not fix: {'; '.join(failure.problems)}: {' '.join(failure.why)}")
    if unlisted:
        lines.append(f"compaction could not fix {len(unlisted)} more files over a cap (`distilld compact` "
                     "lists every one)")
    if report.over_caps:
        summary += f"; still over a cap: {', '.join(f.path for f in listed)}"
        summary += f" and {len(unlisted)} more" if unlisted else ""
    failed = [f.message for o in (outcome, recovery) if o is not None for f in o.self_check]
    if failed:
        lines.append(f"compaction self-check failed: {'; '.join(failed[:3])}")
        summary = f"self-check failed: {failed[0]}"
    changed = sorted(set(written) | {path for path, _ in (recovery.written if recovery else [])})
    return CompactionResult(report.pass_ok, summary, lines, changed)
