"""The store's health, measured the way the design research measured it. Pure.

A snapshot, the budget limits and ``today`` in; report sections out: the index's cost, the
tier files against their caps (with the three dated-history bounds), the lifecycle, links,
and the archive with its ledger. Growth and what distilld did come from the git history and
the activity log (see ``health_history``).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from datetime import date
from math import ceil

from .cross_refs import references
from .health_blocks import BOUND_LABELS, BOUNDS, FileBlocks
from .health_model import Section, known, maybe, median_of, percent, unknown
from .health_unknowns import NO_SPINE, spine_unknown_reason
from .lifecycle import activity, exemption, is_candidate
from .limits import Limits
from .mentions import path_mentions
from .paths import CATALOG, TIERS, Layout, contained, is_legacy
from .snapshot import Snapshot
from .spine import Spine, SpineEntry
from .split import split_knowledge_file
from .text import decode
from .tierfile import KnowledgeFile, parse_inline_list

SHORT_ENTRY_BYTES = 240
ENTRY_HOW = ("entries are `- [` lines of SPINE.md with their wrapped continuation lines, joined as the "
             "{cap}-byte cap measures them; the catalog line is not counted")


def index_entries(spine: Spine) -> list[SpineEntry]:
    """The SPINE's entries, the catalog line left out."""
    return [entry for entry in spine.entries if not entry.is_catalog_line]


def index_links(spine: Spine) -> list[str]:
    """Unique ``](….md)`` targets on entry lines (C2's extraction), CATALOG.md left out."""
    return [pointer for pointer in spine.pointer_list if pointer != CATALOG]


# -- 1. index cost ------------------------------------------------------------------------------


def index_cost(snapshot: Snapshot, limits: Limits, helpers: int) -> Section:
    section = Section("index_cost", "Index cost")
    spine = snapshot.spine
    reason = spine_unknown_reason(snapshot)
    if spine is None or reason is not None:
        for key, label in (("spine_bytes", "SPINE.md bytes"), ("spine_lines", "SPINE.md lines"),
                           ("entries", "index entries"), ("links", "links in the index")):
            section.add(unknown(key, label, reason or NO_SPINE, "read from SPINE.md"))
        section.notes.append(f"{reason}: what is loaded at session start cannot be measured.")
        return section
    text = decode(spine.raw)
    sizes = [entry.byte_len for entry in index_entries(spine)]
    section.add(known("spine_bytes", "SPINE.md bytes", spine.size,
                      f"raw bytes of SPINE.md (cap {limits.spine.max_bytes:,})", "B"))
    section.add(known("spine_bytes_vs_cap", "SPINE.md bytes against the cap",
                      round(spine.size / limits.spine.max_bytes, 2),
                      f"SPINE.md bytes / {limits.spine.max_bytes:,}", "x"))
    section.add(known("spine_lines", "SPINE.md lines", spine.line_count,
                      f"lines, CR ignored, a last line without a newline counted (cap {limits.spine.max_lines})"))
    entry_how = ENTRY_HOW.format(cap=limits.spine.entry_max_bytes)
    section.add(known("entries", "index entries", len(sizes), entry_how))
    section.add(known("links", "links in the index", len(index_links(spine)),
                      "unique `](….md)` targets on entry lines (C2's extraction), CATALOG.md not counted"))
    section.add(maybe("entry_median_bytes", "median entry", median_of(sizes),
                      entry_how, "the index has no entries", "B"))
    section.add(maybe("entry_longest_bytes", "longest entry", max(sizes) if sizes else None,
                      entry_how, "the index has no entries", "B"))
    section.add(known("entries_over_cap", f"entries over {limits.spine.entry_max_bytes} B",
                      sum(1 for size in sizes if size > limits.spine.entry_max_bytes),
                      f"entries whose joined bytes exceed {limits.spine.entry_max_bytes}"))
    section.add(known("entries_short", f"entries at or under {SHORT_ENTRY_BYTES} B",
                      sum(1 for size in sizes if size <= SHORT_ENTRY_BYTES),
                      f"entries of {SHORT_ENTRY_BYTES} joined bytes or fewer"))
    per_session = round(spine.size / 4)
    section.add(known("tokens_per_session", "tokens per session (bytes ÷ 4)", per_session,
                      "SPINE.md bytes / 4, rounded: the usual estimate, not a tokenizer count",
                      "tokens", estimate=True))
    section.add(known("tokens_per_session_chars", "tokens per session (chars ÷ 3.2)", round(len(text) / 3.2),
                      "SPINE.md characters / 3.2, rounded: an upper estimate for punctuation-heavy text",
                      "tokens", estimate=True))
    section.add(known("helpers", "helper agents", helpers, "given with --helpers (default 0)"))
    section.add(known("tokens_with_helpers", f"tokens for the session and {helpers} helpers",
                      per_session * (1 + helpers),
                      "(1 + helpers) × the bytes ÷ 4 estimate: every helper agent loads the index again",
                      "tokens", estimate=True))
    section.notes.append("Every helper agent a session starts loads SPINE.md again: the index is paid "
                         "once per agent, not once per session (--helpers N shows the cost).")
    section.items["entry_sizes"] = [{"line": entry.line_index + 1, "bytes": entry.byte_len,
                                     "pointers": len(entry.pointers)} for entry in index_entries(spine)]
    return section


# -- 3. tier files ------------------------------------------------------------------------------


@dataclass(frozen=True)
class CapCheck:
    over_lines: bool
    over_bytes: bool

    @property
    def over(self) -> bool:
        return self.over_lines or self.over_bytes


def cap_check(lines: int, size: int, oversize: bool, limits: Limits) -> CapCheck:
    return CapCheck(lines > limits.tier_file.max_lines, not oversize and size > limits.tier_file.max_bytes)


def extra_pieces_estimate(lines: int, size: int, oversize: bool, limits: Limits) -> int:
    """How many split children a file needs at least: ceil(size / cap) − 1 on each cap."""
    by_bytes = 1 if oversize else ceil(size / limits.tier_file.max_bytes)
    return max(1, ceil(lines / limits.tier_file.max_lines), by_bytes) - 1


def _planned_split(path: str, raw: bytes, limits: Limits, taken: set[str]) -> tuple[int, bool]:
    """(children the split planner makes, whether it leaves a piece over a cap)."""
    file = KnowledgeFile(path, raw)
    extra = extra_pieces_estimate(file.line_count, file.size, file.oversize_reason is not None, limits)
    if extra * (len(path) + 8) > limits.spine.max_bytes:  # no SPINE can take its pointers: never split
        return extra, True
    outcome = split_knowledge_file(path, raw, limits.tier_file.max_lines, limits.tier_file.max_bytes, taken.__contains__)
    if outcome is None:
        return 0, cap_check(file.line_count, file.size, file.oversize_reason is not None, limits).over
    return len(outcome.children), bool(outcome.over_cap)


def tier_files(snapshot: Snapshot, limits: Limits) -> Section:
    section = Section("tier_files", "Tier files")
    paths = snapshot.tier_paths
    files = [snapshot.knowledge(path) for path in paths]
    taken = set(paths)
    checks = {f.path: cap_check(f.line_count, f.size, f.oversize_reason is not None, limits) for f in files}
    caps = f"{limits.tier_file.max_lines} lines, {limits.tier_file.max_bytes:,} bytes unless `oversize:`"
    section.add(known("files", "tier files", len(files),
                      f"*.md under {', '.join(TIERS)} (nested archive/ folders not counted)"))
    section.add(known("over_any_cap", "files over a cap", sum(c.over for c in checks.values()),
                      f"files over either cap ({caps})"))
    section.add(known("over_line_cap", "files over the line cap", sum(c.over_lines for c in checks.values()),
                      f"files with more than {limits.tier_file.max_lines} lines"))
    section.add(known("over_byte_cap", "files over the byte cap", sum(c.over_bytes for c in checks.values()),
                      f"files over {limits.tier_file.max_bytes:,} bytes that declare no `oversize:`"))
    section.add(known("oversize_exempt", "oversize exemptions", sum(f.oversize_reason is not None for f in files),
                      "files whose frontmatter declares `oversize:` (exempt from the byte cap only)"))
    read = [FileBlocks.of(f) for f in files]
    section.add(maybe("median_blocks", "median blocks per file", median_of([len(r.blocks) for r in read]),
                      "blocks: a bullet with its indented lines, a paragraph, a table or a code fence; "
                      "headings and blank lines are not blocks", "there are no tier files"))
    total_block_bytes = sum(r.block_bytes() for r in read)
    planner_how = ("children the split planner (store/split.py) makes for the over-cap files, with their "
                   "bytes as they would be")
    estimate_how = "sum over the over-cap files of ceil(size / cap) − 1 on the tighter cap: a lower bound"
    section.add(known("splits_estimate_none_moved", "split files needed, no history moved",
                      sum(extra_pieces_estimate(f.line_count, f.size, f.oversize_reason is not None, limits)
                          for f in files if checks[f.path].over), estimate_how, estimate=True))
    planned = [_planned_split(f.path, f.raw, limits, taken) for f in files if checks[f.path].over]
    section.add(known("splits_planned_none_moved", "split files the planner makes, no history moved",
                      sum(children for children, _ in planned), planner_how))
    section.add(known("unsplittable_none_moved", "files the planner cannot bring under the caps",
                      sum(1 for _, left in planned if left),
                      "over-cap files with a section the planner cannot cut (no history moved)"))
    for bound in BOUNDS:
        _bound_figures(section, bound, read, total_block_bytes, limits, taken, estimate_how, planner_how)
    return section


def _bound_figures(section: Section, bound: str, read: list[FileBlocks], total_block_bytes: int,
                   limits: Limits, taken: set[str], estimate_how: str, planner_how: str) -> None:
    label = BOUND_LABELS[bound]
    moved = sum(r.moved_bytes(bound) for r in read)
    section.add(maybe(f"history_share_{bound}", f"dated history share, {label}", percent(moved, total_block_bytes),
                      "bytes of the blocks this bound counts as dated history / bytes of all blocks; "
                      "[NON-NEGOTIABLE] and [DIRECTIVE] blocks never count", "there are no blocks", "%"))
    still_over = 0
    estimate = 0
    planned = 0
    for r in read:
        file = r.file
        oversize = file.oversize_reason is not None
        if not cap_check(file.line_count, file.size, oversize, limits).over:
            continue
        raw = r.without(bound)
        after = KnowledgeFile(file.path, raw)
        if cap_check(after.line_count, after.size, oversize, limits).over:
            still_over += 1
            estimate += extra_pieces_estimate(after.line_count, after.size, oversize, limits)
            planned += _planned_split(file.path, raw, limits, taken)[0]
    section.add(known(f"over_cap_after_{bound}", f"files still over a cap, {label}", still_over,
                      "over-cap files still over a cap once this bound's blocks moved to evidence"))
    section.add(known(f"splits_estimate_{bound}", f"split files needed, {label}", estimate, estimate_how,
                      estimate=True))
    section.add(known(f"splits_planned_{bound}", f"split files the planner makes, {label}", planned, planner_how))


# -- 4. lifecycle -------------------------------------------------------------------------------


def _families(snapshot: Snapshot) -> dict[str, set[str]]:
    """Each tier file with the files its split_from links it to (parent and children)."""
    family: dict[str, set[str]] = {path: {path} for path in snapshot.tier_paths}
    for path in snapshot.tier_paths:
        parent = snapshot.knowledge(path).split_from
        if parent and parent in family:
            family[path].add(parent)
            family[parent].add(path)
    return family


def mention_index(snapshot: Snapshot, directories: tuple[str, ...]) -> dict[str, set[str]]:
    """Target path -> the other active tier files whose text names it (its split family aside)."""
    family = _families(snapshot)
    named_by: dict[str, set[str]] = {}
    for path in snapshot.tier_paths:
        for target in path_mentions(snapshot.knowledge(path).text, directories):
            if target not in family.get(path, {path}):
                named_by.setdefault(target, set()).add(path)
    return named_by


def read_with_index(snapshot: Snapshot) -> dict[str, set[str]]:
    named_by: dict[str, set[str]] = {}
    for path in snapshot.tier_paths:
        for target in parse_inline_list(snapshot.knowledge(path).fm("read_with") or "") or []:
            if target != path:
                named_by.setdefault(target, set()).add(path)
    return named_by


def lifecycle(snapshot: Snapshot, limits: Limits, today: date, first_commit: date | None) -> Section:
    section = Section("lifecycle", "Lifecycle")
    dirs = limits.lifecycle.candidate_dirs
    projects = [p for p in snapshot.tier_paths if is_candidate(p, dirs)]
    mentions = mention_index(snapshot, dirs)
    read_with = read_with_index(snapshot)
    where = ", ".join(f"{d}/" for d in dirs)
    section.add(known("project_files", "project files", len(projects), f"files directly under {where}"))
    section.add(known("named_elsewhere", "named by path in another file",
                      sum(1 for p in projects if mentions.get(p)),
                      "project files whose path is written in another active tier file (frontmatter or prose; "
                      "the SPINE, catalog, evidence, ledger and its own split family do not count)"))
    undated = [p for p in projects if activity(snapshot.knowledge(p), today, limits.lifecycle.staleness_threshold_days) is None]
    section.add(known("undated", "project files with no activity stamp", len(undated),
                      "no last_updated/last_validated date anywhere: their activity is unknown, not old"))
    past = []
    for path in projects:
        seen = activity(snapshot.knowledge(path), today, limits.lifecycle.staleness_threshold_days)
        if seen is not None and seen.stale:
            past.append((path, seen))
    rows = []
    for path, seen in past:
        file = snapshot.knowledge(path)
        exempt = exemption(file)
        blocked_by = sorted(read_with.get(path, ()))
        named = sorted(mentions.get(path, ()))
        current = "exempt" if exempt else "blocked" if blocked_by else "movable"
        older = "exempt" if exempt else "blocked" if (blocked_by or named) else "movable"
        rows.append({"path": path, "stamp": seen.stamp, "days": seen.age_days, "threshold": seen.threshold_days,
                     "exempt": exempt, "read_with_of": blocked_by, "named_by": named,
                     "current_rule": current, "older_rule": older})
    section.items["past_threshold"] = rows
    section.add(known("past_threshold", "past their own threshold", len(past),
                      f"project files whose newest stamp is older than their staleness_threshold "
                      f"(default {limits.lifecycle.staleness_threshold_days} days) on {today.isoformat()}"))
    section.add(known("exempt", "exempt", sum(1 for r in rows if r["exempt"]),
                      "past threshold, but `lifecycle: pinned` or carrying [NON-NEGOTIABLE]: never archived"))
    section.add(known("blocked", "blocked (current rule)", sum(1 for r in rows if r["current_rule"] == "blocked"),
                      "past threshold, not exempt, named in the read_with of another active tier file"))
    section.add(known("movable", "movable (current rule)", sum(1 for r in rows if r["current_rule"] == "movable"),
                      "past threshold, not exempt, in no other file's read_with (a prose mention does not block)"))
    section.add(known("blocked_older_rule", "blocked (older rule)",
                      sum(1 for r in rows if r["older_rule"] == "blocked"),
                      "past threshold, not exempt, named by path anywhere in another file (what the research measured)"))
    section.add(known("movable_older_rule", "movable (older rule)",
                      sum(1 for r in rows if r["older_rule"] == "movable"),
                      "past threshold, not exempt, named by no other file"))
    for days in limits.lifecycle.report_flat_days:
        flat = [path for path in projects if _older_than(snapshot.knowledge(path), today, days)]
        section.add(known(f"past_flat_{days}", f"past a flat {days}-day threshold", len(flat),
                          f"project files whose newest stamp is more than {days} days old, whatever their own threshold"))
        section.add(known(f"movable_flat_{days}", f"movable with a flat {days}-day threshold",
                          sum(1 for p in flat if exemption(snapshot.knowledge(p)) is None and not read_with.get(p)),
                          "of those, not exempt and in no other file's read_with"))
    _ages(section, snapshot, limits, today, first_commit)
    return section


def _older_than(file: KnowledgeFile, today: date, days: int) -> bool:
    seen = activity(file, today, days)
    return seen is not None and seen.age_days > days


def _ages(section: Section, snapshot: Snapshot, limits: Limits, today: date, first_commit: date | None) -> None:
    section.add(maybe("store_age_days", "store age", (today - first_commit).days if first_commit else None,
                      "days since the store's first git commit", "the store has no git history", "days"))
    ages: list[tuple[int, str]] = []
    for path in snapshot.tier_paths:
        seen = activity(snapshot.knowledge(path), today, limits.lifecycle.staleness_threshold_days)
        if seen is not None:
            ages.append((seen.age_days, path))
    how = "days since each tier file's newest last_updated/last_validated date; undated files left out"
    section.add(maybe("median_days_since_confirmed", "median days since last confirmation",
                      median_of([age for age, _ in ages]), how, "no tier file carries a date", "days"))
    oldest = max(ages) if ages else None
    section.add(maybe("oldest_days", "oldest confirmation", oldest[0] if oldest else None, how,
                      "no tier file carries a date", "days"))
    section.add(maybe("oldest_path", "oldest file", oldest[1] if oldest else None,
                      "the tier file with the oldest newest date", "no tier file carries a date"))


# -- 5. links -----------------------------------------------------------------------------------


def links(snapshot: Snapshot) -> Section:
    section = Section("links", "Links")
    why = spine_unknown_reason(snapshot)
    spine = snapshot.spine if why is None else None
    if spine is None:
        why = why or NO_SPINE
        section.add(unknown("broken_index_links", "broken index links", why, "SPINE pointers to missing files"))
        section.add(unknown("unindexed_files", "active files missing from the index", why,
                            "tier files no SPINE entry points at"))
    else:
        pointers = spine.pointer_list
        broken = [p for p in pointers if contained(p, "spine") and not snapshot.exists(p)]
        uncontained = [p for p in pointers if not contained(p, "spine")]
        section.add(known("broken_index_links", "broken index links", len(broken),
                          "unique SPINE pointers (C2's extraction) to a file that does not exist"))
        section.add(known("uncontained_index_links", "index links that leave the store", len(uncontained),
                          "SPINE pointers D10 refuses (absolute, `..`, outside the tiers)"))
        missing = [p for p in snapshot.tier_paths if p not in spine.pointer_set]
        section.add(known("unindexed_files", "active files missing from the index", len(missing),
                          "tier files no SPINE entry points at (C2)"))
        section.items["broken_index_links"] = [{"path": p} for p in broken]
        section.items["unindexed_files"] = [{"path": p} for p in missing]
    resolved = archived = 0
    broken_refs: list[dict[str, str]] = []
    for ref in references(snapshot):
        if ref.kind == "active":
            resolved += 1
        elif ref.kind in ("archived", "adopted"):
            archived += 1  # readers look in archive/<same path>; adopted ones under archive/legacy/
        else:
            broken_refs.append({"from": ref.source, "to": ref.target})
    how = "paths under the tiers or archive/ written in a tier file's text, one per (file, path)"
    section.add(known("cross_references", "cross-references", resolved + archived + len(broken_refs), how))
    section.add(known("broken_cross_references", "broken cross-references", len(broken_refs),
                      "cross-references to a path that is neither active nor archived"))
    section.add(known("archive_references", "references into the archive that resolve", archived,
                      "cross-references whose target is archived (archive/<path> exists), an archive/ path that exists, "
                      "or one migrate-store adopted (under archive/legacy/)"))
    section.items["broken_cross_references"] = broken_refs
    return section


# -- 6. archive and ledger ---------------------------------------------------------------------


def archive_and_ledger(snapshot: Snapshot) -> Section:
    section = Section("archive", "Archive and ledger")
    archive = snapshot.archive_paths
    flat = [p for p in archive if is_legacy(p) and not p.startswith("archive/legacy/")]
    nested = [p for p in archive if p.startswith("archive/legacy/")]
    ledger = snapshot.ledger
    archived = [p for p in archive if not is_legacy(p)]
    section.add(known("archived_files", "archived files", len(archived), "files under archive/<tier>/ (not legacy)"))
    section.add(known("legacy_flat", "legacy files, flat", len(flat), "*.md directly under archive/ (LEDGER.md aside)"))
    section.add(known("legacy_nested", "legacy files, nested", len(nested), "*.md under archive/legacy/"))
    unledgered = [p for p in archived if ledger is None or ledger.last_archive_line(p) is None]
    section.add(known("pending_adoption", "archives pending adoption",
                      len(snapshot.nested_archive_paths) + len(unledgered),
                      "files in archive folders inside a tier, and archive/<tier>/ files with no ledger archive "
                      "line: migrate-store adopts them as legacy"))
    no_ledger = ("the store has no archive/LEDGER.md" + (" (a pre-1.2 store keeps no record of its archive moves)"
                                                          if snapshot.layout is Layout.UNMIGRATED else ""))
    kinds = Counter(line.event for line in ledger.events) if ledger is not None else Counter()
    how = "event lines of archive/LEDGER.md by their event word"
    for key, event in (("ledger_archive", "archive"), ("ledger_restore", "restore"),
                       ("ledger_restore_modified", "restore (modified)")):
        section.add(maybe(key, f"ledger events: {event}", kinds[event] if ledger is not None else None, how, no_ledger))
    restores = kinds["restore"] + kinds["restore (modified)"]
    section.add(maybe("restores", "restores", restores if ledger is not None else None,
                      "restore and restore (modified) events", no_ledger))
    never = sum(1 for line in ledger.events if line.is_restore and line.value("reason") == "move never completed") \
        if ledger is not None else None
    section.add(maybe("moves_never_completed", "archive moves never completed", never,
                      "restore events with `reason: move never completed` (written by recovery)", no_ledger))
    section.add(maybe("ledger_malformed", "malformed ledger lines",
                      sum(1 for line in ledger.lines if line.problems) if ledger is not None else None,
                      "`- ` lines of the ledger that do not parse (C2 names each)", no_ledger))
    return section
