"""`distilld budget`: the store against its caps, with token estimates and the debt figure."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

from ..policy import Policy
from ..store.budget import BudgetReport, measure_budget
from ..store.paths import SPINE
from ..store.readable import unreadable_reason
from ..store.snapshot import take_snapshot


def run_budget(store: Path, policy: Policy, today: date) -> BudgetReport:
    report = measure_budget(take_snapshot(store), policy.limits, today)
    report.spine_unreadable = unreadable_reason(store.expanduser() / SPINE)
    return report


def _margin(value: int, cap: int) -> str:
    left = cap - value
    return f"{left} left" if left >= 0 else f"{-left} OVER"


def render_text(report: BudgetReport) -> str:
    limits = report.limits
    if report.spine_unreadable:
        out = [f"SPINE.md: unreadable: {report.spine_unreadable}; its lines and bytes are not counted"]
    elif not report.spine_present:
        out = ["SPINE.md: missing"]
    else:
        out = [
            f"SPINE.md: {report.spine_lines} lines of {limits.spine.max_lines} "
            f"({_margin(report.spine_lines, limits.spine.max_lines)}; compaction target {limits.spine.compact_at_lines})",
            f"SPINE.md: {report.spine_bytes} bytes of {limits.spine.max_bytes} "
            f"({_margin(report.spine_bytes, limits.spine.max_bytes)}; compaction target {limits.spine.compact_at_bytes})",
            f"estimated tokens per session: ~{report.tokens_estimate} (bytes/4), "
            f"up to ~{report.tokens_upper_estimate} (chars/3.2) -- estimates, not a tokenizer count",
        ]
    out.append(f"entries over {limits.spine.entry_max_bytes} bytes: {len(report.entries_over)}")
    out += [f"    - line {e.line}: {e.bytes} bytes: {e.start}..." for e in report.entries_over]
    out.append(f"tier files over {limits.tier_file.max_lines} lines or {limits.tier_file.max_bytes} bytes: {len(report.files_over)}")
    out += [f"    - {f.path}: {f.lines} lines, {f.bytes} bytes" for f in report.files_over]
    if report.oversize_exempt:
        out.append(f"oversize exemptions: {len(report.oversize_exempt)}")
        out += [f"    - {path}: {reason}" for path, reason in report.oversize_exempt]
    out.append(f"project files past their staleness threshold: {len(report.stale_projects)}")
    out += [f"    - {s.path}: last activity {s.stamp}, {s.days} days (threshold {s.threshold})"
            for s in report.stale_projects]
    if report.unsafe_names:
        out.append(f"file names no pass will archive, restore or catalog: {len(report.unsafe_names)}")
        out += [f"    - {path!r}: {reason}" for path, reason in report.unsafe_names]
    parts = report.debt_parts
    out.append(  # the parts first, each in its unit; the sum (mixed units) is the format's trend figure
        f"debt: SPINE {parts['spine_bytes_over']} bytes over its cap; {parts['entries_over']} entries, "
        f"{parts['files_over']} files over a cap; {parts['stale_projects']} stale projects; "
        f"{parts['oversize_exemptions']} oversize exemptions (debt figure {report.debt}: their sum, a trend)"
    )
    return "\n".join(out) + "\n"


def render_json(report: BudgetReport) -> str:
    return json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n"
