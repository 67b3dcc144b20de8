"""Growth, and what distilld did: report sections from facts read out of the store's git
history and distilld's activity log. Pure: the facts come in as plain data (gitstore/history.py
reads them), figures go out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from .budget import measure_budget
from .health import index_entries, index_links
from .health_model import Section, known, maybe, percent, unknown
from .limits import Limits
from .paths import is_legacy
from .snapshot import snapshot_from_files
from .spine import Spine
from .tierfile import KnowledgeFile

# Commits distilld makes that are not maintenance: the agents' own writes, and adopting a repo.
NOT_MAINTENANCE = ("agent-changes", "adopt")
REWRITING = ("compaction", "migration")  # the operations that shorten entries and split files
WORK_TREE = "work tree"


@dataclass(frozen=True)
class HistoryPoint:
    """The store as one day's last commit touching SPINE.md left it (or as the work tree is)."""

    day: str
    commit: str
    spine_bytes: int | None
    spine_lines: int | None
    entries: int | None
    links: int | None
    tier_files: int
    knowledge_bytes: int
    debt: int

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def measure_point(day: date, commit: str, files: Mapping[str, bytes], limits: Limits,
                  root: Path) -> HistoryPoint:
    """Figures of the store held in ``files`` on ``day`` (``root`` only names the store: the
    budget reads nothing from disk)."""
    snapshot = snapshot_from_files(root, files)
    spine = snapshot.spine
    budget = measure_budget(snapshot, limits, day)
    return HistoryPoint(
        day=day.isoformat(), commit=commit,
        spine_bytes=spine.size if spine else None, spine_lines=spine.line_count if spine else None,
        entries=len(index_entries(spine)) if spine else None, links=len(index_links(spine)) if spine else None,
        tier_files=len(snapshot.tier_paths),
        knowledge_bytes=sum(len(snapshot.contents.get(p, b"")) for p in snapshot.tier_paths),
        debt=budget.debt,
    )


@dataclass(frozen=True)
class OperationCommit:
    """A commit whose message carries distilld's ``Distilld-Operation`` trailer."""

    commit: str
    day: str
    operation: str
    pass_id: str | None
    spine_before: bytes | None  # SPINE.md in the first parent (None: absent)
    spine_after: bytes | None
    added: dict[str, bytes] = field(default_factory=dict)  # paths the commit added, with their bytes


@dataclass
class GitFacts:
    """What the git history says; ``reason`` explains an unavailable history."""

    available: bool
    reason: str | None = None
    first_commit: date | None = None
    commits: int = 0
    spine_commits: int = 0
    points: list[HistoryPoint] = field(default_factory=list)
    operations: list[OperationCommit] = field(default_factory=list)


NO_HISTORY_HOW = "from the store's git history (commits that touched SPINE.md)"


def _baseline(points: list[HistoryPoint], since: date | None) -> tuple[HistoryPoint | None, str]:
    if not points:
        return None, ""
    if since is None:
        return points[0], f"the first commit that touched SPINE.md ({points[0].day})"
    before = [p for p in points if p.day <= since.isoformat()]
    if before:
        return before[-1], f"the store as it was on {since.isoformat()} (commit {before[-1].commit[:7]}, {before[-1].day})"
    return points[0], f"the first commit after {since.isoformat()} that touched SPINE.md ({points[0].day})"


def growth(facts: GitFacts, now: HistoryPoint, since: date | None) -> tuple[Section, list[dict[str, Any]]]:
    section = Section("growth", "Growth")
    why = facts.reason or "no commit touched SPINE.md"
    points = facts.points if facts.available else []
    section.add(maybe("spine_commits", "commits that touched SPINE.md", facts.spine_commits if facts.available else None,
                      "commits whose SPINE.md differs from their first parent's", why))
    base, base_how = _baseline(points, since)
    if base is None:
        for key, label in (("growth_spine_bytes_pct", "SPINE.md bytes growth"), ("entries_then", "entries then"),
                           ("links_then", "links then"), ("debt_then", "debt then")):
            section.add(unknown(key, label, why, NO_HISTORY_HOW))
        section.notes.append(f"Growth is unknown: {why}.")
        return section, [now.to_dict()]
    section.add(known("since", "since", base.day, base_how))
    section.add(maybe("spine_bytes_then", "SPINE.md bytes then", base.spine_bytes, base_how, "no SPINE.md then", "B"))
    section.add(maybe("spine_bytes_now", "SPINE.md bytes now", now.spine_bytes, "the store as it is on disk",
                      "no SPINE.md now", "B"))
    change = (percent(now.spine_bytes - base.spine_bytes, base.spine_bytes)
              if now.spine_bytes is not None and base.spine_bytes else None)
    section.add(maybe("growth_spine_bytes_pct", "SPINE.md bytes growth", change,
                      "(bytes now − bytes then) / bytes then", "SPINE.md is missing at one end", "%"))
    for key, label in (("entries", "entries"), ("links", "links"), ("tier_files", "tier files"),
                       ("knowledge_bytes", "knowledge bytes"), ("debt", "debt")):
        how = {"knowledge_bytes": "bytes of every tier file (evidence and archive aside)",
               "debt": "Step 5's debt: SPINE bytes over the cap + entries over + files over a cap + stale "
                       "projects + oversize exemptions (mixed units: a trend figure)"}.get(key, base_how)
        unit = "B" if key == "knowledge_bytes" else ""
        section.add(maybe(f"{key}_then", f"{label} then", getattr(base, key), how, "no SPINE.md then", unit))
        section.add(maybe(f"{key}_now", f"{label} now", getattr(now, key), "the store as it is on disk",
                          "no SPINE.md now", unit))
    window = [p for p in points if p.day >= base.day]
    series = [p.to_dict() for p in window]
    last = window[-1] if window else None
    if last is None or {**last.to_dict(), "commit": "", "day": ""} != {**now.to_dict(), "commit": "", "day": ""}:
        series.append(now.to_dict())
    return section, series


# -- 7. what distilld did ----------------------------------------------------------------------


def _entry_sizes(raw: bytes | None) -> dict[tuple[str, ...], int]:
    if raw is None:
        return {}
    return {tuple(p.path for p in e.leading_group): e.byte_len for e in Spine(raw).entries if e.leading_group}


def shortened_entries(before: bytes | None, after: bytes | None) -> int:
    """Entries (by their leading pointers; a split child added to a line still counts) that
    came out shorter."""
    old = _entry_sizes(before)
    count = 0
    for group, size in _entry_sizes(after).items():
        previous = old.get(group)
        if previous is None:
            previous = next((s for g, s in old.items() if g and g[0] == group[0]), None)
        if previous is not None and size < previous:
            count += 1
    return count


def what_distilld_did(facts: GitFacts, activity: list[str] | None, activity_why: str) -> Section:
    section = Section("distilld", "What distilld did")
    ops = list(facts.operations) if facts.available else []
    maintenance = [op for op in ops if op.operation not in NOT_MAINTENANCE]
    why = facts.reason or "no commit carries a Distilld-Operation trailer"
    if not ops:
        why = facts.reason or "no commit carries a Distilld-Operation trailer (distilld has not committed here)"
    trailers = "commits whose message carries a `Distilld-Operation:` trailer"
    section.add(maybe("managed_since", "managed since", ops[0].day if ops else None,
                      "the day of the first commit with a Distilld-Operation trailer", why))
    section.add(maybe("commits", "distilld commits", len(ops) if ops else None, trailers, why))
    section.add(maybe("passes", "passes", len({op.pass_id or op.commit for op in ops}) if ops else None,
                      "distinct Distilld-Pass values among those commits", why))
    by_operation = Counter(op.operation for op in ops)
    section.items["commits_by_operation"] = [{"operation": k, "commits": v} for k, v in sorted(by_operation.items())]
    maintenance_how = "over distilld's maintenance commits (agent-changes and adopt commits aside)"
    rewriting = [op for op in maintenance if op.operation in REWRITING]
    shortened = sum(shortened_entries(op.spine_before, op.spine_after) for op in rewriting)
    section.add(maybe("entries_shortened", "entries shortened", shortened if ops else None,
                      "SPINE entries (matched by their leading pointers) that came out shorter, over the "
                      "compaction and migration commits", why))
    split = sum(1 for op in rewriting for path, raw in op.added.items()
                if not path.startswith("archive/") and KnowledgeFile(path, raw).split_from)
    section.add(maybe("files_split", "files split", split if ops else None,
                      "tier files added with a split_from:, over the compaction and migration commits", why))
    archived = sum(1 for op in maintenance for path in op.added
                   if path.startswith("archive/") and path != "archive/LEDGER.md" and not is_legacy(path))
    section.add(maybe("files_archived", "files archived", archived if ops else None,
                      f"archive/<tier>/ files added, {maintenance_how}", why))
    lost = sum((len(op.spine_before) if op.spine_before is not None else 0)
               - (len(op.spine_after) if op.spine_after is not None else 0)
               for op in maintenance)
    section.add(maybe("spine_bytes_lost", "bytes the SPINE lost", lost if ops else None,
                      f"SPINE.md bytes before minus after, summed {maintenance_how}", why, "B"))
    section.add(maybe("tokens_saved_per_session", "tokens saved per session", round(lost / 4) if ops else None,
                      "those bytes / 4: what every session no longer loads", why, "tokens", estimate=True))
    _activity_figures(section, activity, activity_why)
    return section


def _activity_figures(section: Section, lines: list[str] | None, why: str) -> None:
    how = "lines of distilld's activity log on this machine (machine-local; rotated backups not read)"
    section.add(maybe("activity_lines", "activity log lines", len(lines) if lines is not None else None, how, why))
    stamps = [line.split(" ", 1)[0] for line in lines or [] if line[:4].isdigit()]
    section.add(maybe("activity_first", "activity log from", stamps[0] if stamps else None, how,
                      why if lines is None else "the activity log is empty"))
    section.add(maybe("activity_last", "activity log to", stamps[-1] if stamps else None, how,
                      why if lines is None else "the activity log is empty"))
    kinds: Counter[str] = Counter()
    for line in lines or []:
        _, _, message = line.partition("  ")
        word = (message.split(" ", 1)[0] or "?").rstrip(":")
        kinds[word] += 1
    section.items["activity_by_kind"] = [{"kind": k, "lines": v} for k, v in kinds.most_common()]
