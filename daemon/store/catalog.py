"""CATALOG.md: the canonical rebuild and the reading of rows (STORE-FORMAT.md 1.8).

The rebuild is a pure function of a snapshot and a clock reading, so the same store at the
same instant always gives the same bytes.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from datetime import datetime
from functools import cached_property
from typing import NamedTuple

from .paths import is_legacy
from .safety import breaks_a_row
from .snapshot import Snapshot
from .spine import hook_of_entry
from .stamps import STAMP_PATTERN, format_utc, full_stamp, stamp_later
from .text import decode, escape_free_text, rtrim, split_lines

TITLE = "# Knowledge catalog"
COMMENT = "<!-- Complete inventory, rebuilt by /distill. Not loaded at session start. rebuilt: {stamp} -->"
REBUILT_RE = re.compile(r"rebuilt: (" + STAMP_PATTERN + ")")
ROW_PATH_RE = re.compile(r"^- ([^|]*) \|")
KNOWN_SEGMENT_RE = re.compile(
    r"^(?:validated |archived |reason: |from |hook: |pinned$|legacy$|oversize(?:: |$)|[0-9]+ entries$)"
)


def active_row(snapshot: Snapshot, path: str) -> str:
    file = snapshot.knowledge(path)
    row = f"- {path} | {file.scope}"
    if file.newest_stamp:
        row += f" | validated {file.newest_stamp}"
    if file.pinned:
        row += " | pinned"
    reason = file.oversize_reason
    if reason is not None:
        row += f" | oversize: {escape_free_text(reason)}" if reason else " | oversize"
    return row


def archived_row(snapshot: Snapshot, path: str) -> str:
    file = snapshot.knowledge(path)
    row = f"- {path} | {file.scope}"
    if is_legacy(path):
        return row + " | legacy"
    event = snapshot.ledger.last_archive_line(path) if snapshot.ledger else None
    if event is None or event.stamp is None:
        return row  # pending adoption: the checker flags it, the catalog does not hide it
    row += f" | archived {event.stamp[:10]}"
    reason = event.value("reason")
    if reason:
        row += f" | reason: {reason}"
    row += f" | from {event.value('from') or ''}"
    row += f" | hook: {rtrim(hook_of_entry(event.value('spine-entry') or ''))}"
    return row


def evidence_row(snapshot: Snapshot, path: str) -> str:
    file = snapshot.knowledge(path)
    return f"- {path} | for {file.fm('evidence_for') or ''} | {file.dash_entry_count()} entries"


def rebuilt_stamp(snapshot: Snapshot, now: datetime) -> str:
    """``now`` in UTC, but never earlier than the newest ledger event."""
    stamp = format_utc(now)
    newest = snapshot.ledger.newest_stamp if snapshot.ledger else None
    if newest and stamp_later(newest, stamp):
        return full_stamp(newest)
    return stamp


ROW_MAKERS: dict[str, Callable[[Snapshot, str], str]] = {
    "active": active_row, "archived": archived_row, "evidence": evidence_row}


def render_catalog(snapshot: Snapshot, now: datetime,
                   row: Callable[[str, str], str] | None = None) -> str:
    """The canonical CATALOG.md for this snapshot, stamped with ``now`` (or the newest event).
    ``row(kind, path)`` makes one row (a caller may keep rows between renderings); by default,
    the ``ROW_MAKERS`` of that kind on this snapshot."""
    make = row if row is not None else (lambda kind, path: ROW_MAKERS[kind](snapshot, path))
    parts = [TITLE, "", COMMENT.format(stamp=rebuilt_stamp(snapshot, now))]
    # A name that would break its row (a line break, ' | ') is left out; check reports it.
    for kind, paths in (("active", snapshot.tier_paths), ("archived", snapshot.archive_paths),
                        ("evidence", snapshot.evidence_paths)):
        parts += ["", f"## {kind}", *(make(kind, p) for p in paths if not breaks_a_row(p))]
    return "\n".join(parts) + "\n"


class CatalogRow(NamedTuple):
    line: str
    path: str | None  # text between "- " and the first " |", when the row has one


class Catalog:
    """A CATALOG.md as written, hand-made or rebuilt."""

    def __init__(self, raw: bytes) -> None:
        self.raw = raw

    @cached_property
    def lines(self) -> list[str]:
        return split_lines(decode(self.raw))

    @cached_property
    def row_lines(self) -> list[str]:
        """Every line starting ``- ``: the rows, well formed or not."""
        return [line for line in self.lines if line.startswith("- ")]

    @cached_property
    def rows(self) -> list[CatalogRow]:
        rows: list[CatalogRow] = []
        for line in self.row_lines:
            match = ROW_PATH_RE.match(line)
            rows.append(CatalogRow(line, match.group(1) if match else None))
        return rows

    @cached_property
    def rebuilt(self) -> str | None:
        for line in self.lines:
            match = REBUILT_RE.search(line)
            if match:
                return match.group(1)
        return None

    @cached_property
    def _row_by_path(self) -> dict[str, str]:
        # The checker's catalog_row(p) is the first line containing "- <p> |" anywhere. For a p
        # without " |", the " |" that ends it is the first one after its "- ": so index, for each
        # "- " in a line, the text up to the next " |", and each lookup is exact.
        found: dict[str, str] = {}
        for line in self.lines:
            start = line.find("- ")
            while start != -1:
                end = line.find(" |", start + 2)
                if end == -1:
                    break  # no later "- " has a " |" after it either
                found.setdefault(line[start + 2:end], line)
                start = line.find("- ", start + 1)
        return found

    def row_for(self, path: str) -> str | None:
        if " |" in path:  # never a key of the index: look for it as the checker does
            needle = f"- {path} |"
            return next((line for line in self.lines if needle in line), None)
        return self._row_by_path.get(path)

    @property
    def listed_paths(self) -> list[str]:
        return [match.group(1) for match in map(ROW_PATH_RE.match, self.row_lines) if match is not None]

    def stamp_masked(self) -> str:
        """The text with its ``rebuilt:`` stamp blanked, to compare content across rebuilds."""
        return REBUILT_RE.sub("rebuilt: -", decode(self.raw).replace("\r", ""), count=1)


# The regex's alternatives that are plain prefixes: most segments are told by these alone.
KNOWN_PREFIXES = ("validated ", "archived ", "reason: ", "from ", "hook: ", "oversize: ")


def is_known_segment(segment: str) -> bool:
    return segment.startswith(KNOWN_PREFIXES) or KNOWN_SEGMENT_RE.match(segment) is not None
