"""The health report as a terminal summary (every line within 80 columns, wrapped between words,
about 40 rows), and as JSON with every figure."""

from __future__ import annotations

import json
import textwrap

from ..store.health_blocks import BOUNDS
from ..store.health_model import Figure, HealthReport, Section


def show(figure: Figure) -> str:
    """A figure's value for a person: thousands separated, estimates with ~, unknown as unknown."""
    if figure.value is None:
        return "unknown"
    value = figure.value
    if isinstance(value, float):
        text = f"{value:,.1f}" if figure.unit != "x" else f"{value:.2f}"
    elif isinstance(value, int):
        text = f"{value:,}"
    else:
        text = value
    if figure.unit in ("%", "x"):
        text += figure.unit
    if figure.key.startswith("growth") and isinstance(value, (int, float)) and value > 0:
        text = "+" + text
    elif figure.unit in ("B", "days"):
        text += " " + figure.unit
    return ("~" if figure.estimate else "") + text


class _Lines:
    """Collects a section's lines and the reasons behind its unknown figures."""

    def __init__(self, section: Section) -> None:
        self.section = section
        self.out: list[str] = []

    def v(self, key: str) -> str:
        return show(self.section.figure(key))

    def label(self, key: str, subject: str) -> str:
        """A figure's label without its subject: "over 400 B" of "entries over 400 B"."""
        return self.section.figure(key).label.removeprefix(subject + " ")

    def line(self, text: str) -> None:
        self.out.append("  " + text)

    def done(self) -> list[str]:
        reasons = sorted({f.unknown for f in self.section.figures if f.unknown})
        return [self.section.title, *self.out, *[f"  unknown: {why}" for why in reasons[:2]]]


def _index(s: _Lines) -> None:
    if s.section.figure("spine_bytes").value is None:
        return
    s.line(f"SPINE.md {s.v('spine_bytes')} ({s.v('spine_bytes_vs_cap')} the byte cap), {s.v('spine_lines')} lines; "
           f"{s.v('entries')} entries, {s.v('links')} links")
    s.line(f"entries: median {s.v('entry_median_bytes')}, longest {s.v('entry_longest_bytes')}; "
           f"{s.v('entries_over_cap')} {s.label('entries_over_cap', 'entries')}, "
           f"{s.v('entries_short')} {s.label('entries_short', 'entries')}")
    s.line(f"tokens per session {s.v('tokens_per_session')} (bytes/4) to {s.v('tokens_per_session_chars')} "
           f"(chars/3.2)")
    s.line(f"with {s.v('helpers')} helpers {s.v('tokens_with_helpers')} (each helper reloads the index)")


def _growth(s: _Lines) -> None:
    if s.section.figure("growth_spine_bytes_pct").value is None:
        return
    s.line(f"since {s.v('since')}: SPINE {s.v('spine_bytes_then')} -> {s.v('spine_bytes_now')} "
           f"({s.v('growth_spine_bytes_pct')}); entries {s.v('entries_then')} -> {s.v('entries_now')}; "
           f"links {s.v('links_then')} -> {s.v('links_now')}")
    s.line(f"tier files {s.v('tier_files_then')} -> {s.v('tier_files_now')}; knowledge "
           f"{s.v('knowledge_bytes_then')} -> {s.v('knowledge_bytes_now')}; debt {s.v('debt_then')} -> "
           f"{s.v('debt_now')} ({s.v('spine_commits')} commits touched SPINE.md)")


def _tiers(s: _Lines) -> None:
    s.line(f"{s.v('files')} files, {s.v('over_any_cap')} over a cap ({s.v('over_byte_cap')} over the byte cap, "
           f"{s.v('over_line_cap')} over the line cap), {s.v('oversize_exempt')} oversize; median "
           f"{s.v('median_blocks')} blocks per file")
    s.line("dated history share: " + ", ".join(
        f"{b.replace('_', ' ')} {s.v('history_share_' + b)}" for b in BOUNDS))
    s.line("over a cap, none/strict/generous/very generous moved: "
           f"{s.v('over_any_cap')} / " + " / ".join(s.v(f"over_cap_after_{b}") for b in BOUNDS))
    s.line(f"splits needed {s.v('splits_estimate_none_moved')} / "
           + " / ".join(s.v(f"splits_estimate_{b}") for b in BOUNDS)
           + f"; the planner makes {s.v('splits_planned_none_moved')} / "
           + " / ".join(s.v(f"splits_planned_{b}") for b in BOUNDS))


def _lifecycle(s: _Lines) -> None:
    s.line(f"{s.v('project_files')} project files, {s.v('named_elsewhere')} named by path in another file, "
           f"{s.v('undated')} undated")
    s.line(f"{s.v('past_threshold')} past their threshold: {s.v('exempt')} exempt; current rule (read_with "
           f"blocks): {s.v('blocked')} blocked, {s.v('movable')} movable")
    s.line(f"    older rule (any mention blocks): {s.v('blocked_older_rule')} blocked, "
           f"{s.v('movable_older_rule')} movable")
    flat = [f.key.removeprefix("past_flat_") for f in s.section.figures if f.key.startswith("past_flat_")]
    if flat:  # the policy's lifecycle.report_flat_days
        s.line("; ".join(f"flat {days} days: {s.v(f'past_flat_{days}')} past ({s.v(f'movable_flat_{days}')} movable)"
                         for days in flat))
    s.line(f"store age {s.v('store_age_days')}; median {s.v('median_days_since_confirmed')} since "
           f"last confirmation; oldest {s.v('oldest_days')} ({s.v('oldest_path')})")


def _links(s: _Lines) -> None:
    s.line(f"broken index links {s.v('broken_index_links')}; active files missing from the index "
           f"{s.v('unindexed_files')}; cross-references {s.v('cross_references')} "
           f"({s.v('broken_cross_references')} broken, {s.v('archive_references')} resolve into the archive)")


def _archive(s: _Lines) -> None:
    s.line(f"{s.v('archived_files')} archived; legacy {s.v('legacy_flat')} flat, {s.v('legacy_nested')} nested; "
           f"{s.v('pending_adoption')} pending adoption")
    s.line(f"ledger: {s.v('ledger_archive')} archive, {s.v('ledger_restore')} restore, "
           f"{s.v('ledger_restore_modified')} restore (modified); {s.v('moves_never_completed')} never completed")


def _distilld(s: _Lines) -> None:
    ops = ", ".join(f"{i['operation']} {i['commits']}" for i in s.section.items.get("commits_by_operation", []))
    s.line(f"since {s.v('managed_since')}: {s.v('commits')} commits in {s.v('passes')} passes"
           + (f" ({ops})" if ops else ""))
    s.line(f"{s.v('entries_shortened')} entries shortened, {s.v('files_split')} files split, "
           f"{s.v('files_archived')} archived; the SPINE lost {s.v('spine_bytes_lost')} "
           f"({s.v('tokens_saved_per_session')} tokens per session)")
    s.line(f"activity log: {s.v('activity_lines')} lines, {s.v('activity_first')} to {s.v('activity_last')}")


RENDERERS = {"index_cost": _index, "growth": _growth, "tier_files": _tiers, "lifecycle": _lifecycle,
             "links": _links, "archive": _archive, "distilld": _distilld}


def render_text(report: HealthReport) -> str:
    out: list[str] = []
    for section in report.sections:
        lines = _Lines(section)
        RENDERERS[section.key](lines)
        out += lines.done()
    out.append("~ marks an estimate; `--json` and `--html FILE` say how each figure is counted.")
    # the heading names the store's path: kept whole on its line, never broken
    heading = f"report {report.today} (layout {report.layout}): {report.store}"
    if len(heading) > WIDTH:  # a long path goes on a line of its own, whole
        heading = f"report {report.today} (layout {report.layout}):\n{report.store}"
    return "\n".join([heading, *(wrapped for line in out for wrapped in _wrap(line))]) + "\n"


WIDTH = 80  # a terminal's width: a line the terminal wraps breaks words ("oversi/ze")


def _wrap(line: str) -> list[str]:
    """One line within WIDTH columns, broken between words; continuations indented under it. A
    path longer than the line is left whole, never cut."""
    if len(line) <= WIDTH:
        return [line]
    indent = " " * (len(line) - len(line.lstrip(" ")) + 2)
    return textwrap.wrap(line, WIDTH, subsequent_indent=indent, break_long_words=False, break_on_hyphens=False)


def render_json(report: HealthReport) -> str:
    return json.dumps(report.to_dict(), indent=2, ensure_ascii=False) + "\n"
