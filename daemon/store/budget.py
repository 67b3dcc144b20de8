"""Budgets: where the store stands against its caps, and the debt figure of Step 5.

Pure: a snapshot, the caps and targets, and ``today`` in; numbers out.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import date
from typing import Any

from .lifecycle import activity, exemption, is_candidate
from .limits import Limits
from .paths import SPINE
from .safety import unsafe_names
from .snapshot import Snapshot
from .text import clip, decode


@dataclass(frozen=True)
class OverEntry:
    line: int  # 1-based line of the entry's first line in SPINE.md
    bytes: int
    start: str


@dataclass(frozen=True)
class OverFile:
    path: str
    lines: int
    bytes: int
    over_lines: bool
    over_bytes: bool


@dataclass(frozen=True)
class StaleProject:
    path: str
    stamp: str
    days: int
    threshold: int


@dataclass
class BudgetReport:
    spine_present: bool
    spine_lines: int
    spine_bytes: int
    spine_chars: int
    limits: Limits
    entries_over: list[OverEntry] = field(default_factory=list)
    files_over: list[OverFile] = field(default_factory=list)
    oversize_exempt: list[tuple[str, str]] = field(default_factory=list)
    stale_projects: list[StaleProject] = field(default_factory=list)
    spine_unreadable: str | None = None  # why SPINE.md cannot be read as text: no figure is counted
    unsafe_names: list[tuple[str, str]] = field(default_factory=list)  # (path, why no pass records it)

    @property
    def tokens_estimate(self) -> int:
        """Bytes / 4: the usual estimate of what the SPINE costs every session."""
        return round(self.spine_bytes / 4)

    @property
    def tokens_upper_estimate(self) -> int:
        """Characters / 3.2: an upper estimate for text heavy in punctuation and non-ASCII."""
        return round(self.spine_chars / 3.2)

    @property
    def spine_bytes_over(self) -> int:
        return max(0, self.spine_bytes - self.limits.spine.max_bytes)

    @property
    def debt(self) -> int:
        """Step 5's debt: bytes over the SPINE cap + entries over + files over + stale projects
        + oversize exemptions. Mixed units by design: it is a trend figure, zero when healthy."""
        return (
            self.spine_bytes_over
            + len(self.entries_over)
            + len(self.files_over)
            + len(self.stale_projects)
            + len(self.oversize_exempt)
        )

    @property
    def debt_parts(self) -> dict[str, int]:
        """The debt's parts, each in its own unit (the sum adds bytes to counts: issue 27)."""
        return {"spine_bytes_over": self.spine_bytes_over, "entries_over": len(self.entries_over),
                "files_over": len(self.files_over), "stale_projects": len(self.stale_projects),
                "oversize_exemptions": len(self.oversize_exempt)}

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data.update(
            limits=_limits_document(self.limits),
            tokens_estimate=self.tokens_estimate,
            tokens_upper_estimate=self.tokens_upper_estimate,
            spine_bytes_over=self.spine_bytes_over,
            debt=self.debt,
            debt_parts=self.debt_parts,
        )
        return data


def _limits_document(limits: Limits) -> dict[str, Any]:
    """The limits as `budget --json` has always named them."""
    spine, tier_file, lifecycle = limits.spine, limits.tier_file, limits.lifecycle
    return {"spine_max_lines": spine.max_lines, "spine_max_bytes": spine.max_bytes,
            "entry_max_bytes": spine.entry_max_bytes, "spine_compact_lines": spine.compact_at_lines,
            "spine_compact_bytes": spine.compact_at_bytes, "file_max_lines": tier_file.max_lines,
            "file_max_bytes": tier_file.max_bytes, "staleness_days": lifecycle.staleness_threshold_days,
            "candidate_dirs": lifecycle.candidate_dirs}


def measure_budget(snapshot: Snapshot, limits: Limits, today: date) -> BudgetReport:
    spine = snapshot.spine
    raw = snapshot.contents.get(SPINE, b"")
    report = BudgetReport(
        spine_present=spine is not None,
        spine_lines=spine.line_count if spine else 0,
        spine_bytes=len(raw),
        spine_chars=len(decode(raw)),
        limits=limits,
    )
    if spine is not None:
        for entry in spine.entries:
            if entry.byte_len > limits.spine.entry_max_bytes:
                report.entries_over.append(OverEntry(entry.line_index + 1, entry.byte_len, clip(entry.joined, 60)))
    for path in snapshot.tier_paths:
        file = snapshot.knowledge(path)
        reason = file.oversize_reason
        over_lines = file.line_count > limits.tier_file.max_lines
        over_bytes = reason is None and file.size > limits.tier_file.max_bytes
        if over_lines or over_bytes:
            report.files_over.append(OverFile(path, file.line_count, file.size, over_lines, over_bytes))
        if reason is not None:
            report.oversize_exempt.append((path, reason))
        if not is_candidate(path, limits.lifecycle.candidate_dirs) or exemption(file) is not None:
            continue  # pinned and [NON-NEGOTIABLE] files never age out, so they are not debt
        seen = activity(file, today, limits.lifecycle.staleness_threshold_days)
        if seen is not None and seen.stale:
            report.stale_projects.append(StaleProject(path, seen.stamp, seen.age_days, seen.threshold_days))
    report.unsafe_names = [(u.path, u.reason) for u in unsafe_names(sorted(snapshot.contents))]
    return report
