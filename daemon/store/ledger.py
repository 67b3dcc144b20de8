"""archive/LEDGER.md: the strict event grammar (STORE-FORMAT.md 1.7).

Parsing keeps every value exactly as written (``\\|`` escapes included); callers unescape
free text only where they re-use it as text.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from typing import NamedTuple

from .paths import ARCHIVE_PREFIX, contained
from .safety import unsafe_name_reason
from .stamps import STAMP_PATTERN, full_stamp, has_time, newest, stamp_later
from .text import (
    decode,
    dominant_ending,
    encode,
    escape_free_text,
    lines_with_endings,
    rtrim,
    split_lines,
    shown,
    split_segments,
    whole_lines,
)

EVENT_RE = re.compile(r"^- (" + STAMP_PATTERN + r") ")
EVENTS: tuple[str, ...] = ("archive", "restore", "restore (modified)")
RESTORE_EVENTS: tuple[str, ...] = ("restore", "restore (modified)")
KEYS: tuple[str, ...] = ("from", "to", "sha256", "sha256-norm", "reason", "spine-entry")


class LedgerProblem(NamedTuple):
    code: str
    message: str


@dataclass
class LedgerLine:
    """One ``- `` line of the ledger, whether or not it parses."""

    number: int  # 1-based line number in the file
    text: str
    stamp: str | None = None
    event: str | None = None
    fields: dict[str, str] = field(default_factory=dict)
    problems: list[LedgerProblem] = field(default_factory=list)

    @property
    def is_event(self) -> bool:
        return self.stamp is not None

    @property
    def is_archive(self) -> bool:
        return self.event == "archive"

    @property
    def is_restore(self) -> bool:
        return self.event in RESTORE_EVENTS

    def value(self, key: str) -> str | None:
        return self.fields.get(key)

    @property
    def state_key(self) -> str | None:
        """The tier path whose state this line decides: ``to`` minus ``archive/`` for an archive."""
        target = self.fields.get("to")
        if target is None or self.event not in EVENTS:
            return None
        if self.is_archive:
            return target[len(ARCHIVE_PREFIX):] if target.startswith(ARCHIVE_PREFIX) else target
        return target


def _starts_archive(text: str) -> bool:
    match = EVENT_RE.match(text)
    return match is not None and text.startswith("archive ", match.end())


def parse_line(number: int, text: str) -> LedgerLine:
    line = LedgerLine(number, text)
    match = EVENT_RE.match(text)
    if not match:
        line.problems.append(LedgerProblem("ledger-malformed", "no leading date"))
        return line
    line.stamp = match.group(1)
    head, _, _ = text[match.end():].partition(" |")
    line.event = head
    if head not in EVENTS:
        line.problems.append(LedgerProblem("ledger-unknown-event", f"unknown ledger event '{head}'"))
    for segment in split_segments(text)[1:]:
        key, sep, value = segment.partition(": ")
        if not sep or key not in KEYS or key in line.fields:
            line.problems.append(LedgerProblem("ledger-unescaped-pipe", segment))
            continue
        line.fields[key] = rtrim(value)
    return line


class Ledger:
    """A parsed ledger; ``lines`` holds every ``- `` line in file order."""

    def __init__(self, raw: bytes) -> None:
        self.raw = raw

    @cached_property
    def text_lines(self) -> list[str]:
        return split_lines(decode(self.raw))

    @cached_property
    def lines(self) -> list[LedgerLine]:
        return [
            parse_line(number, text)
            for number, text in enumerate(self.text_lines, start=1)
            if text.startswith("- ")
        ]

    @cached_property
    def events(self) -> list[LedgerLine]:
        return [line for line in self.lines if line.is_event]

    @cached_property
    def newest_stamp(self) -> str | None:
        return newest([line.stamp for line in self.events if line.stamp])

    @cached_property
    def last_event_by_path(self) -> dict[str, LedgerLine]:
        """State = the last known event per tier-contained path, in file order."""
        state: dict[str, LedgerLine] = {}
        for line in self.events:
            key = line.state_key
            if key is not None and contained(key, "tier"):
                state[key] = line
        return state

    @cached_property
    def _last_archive_by_target(self) -> dict[str, LedgerLine]:
        # The checker's test is the substring `| to: A |` on an archive line. Index every
        # candidate A (each `| to: ` start paired with each later ` |`) so lookups stay exact.
        found: dict[str, LedgerLine] = {}
        for line in self.events:
            if not _starts_archive(line.text):
                continue
            text = line.text
            start = text.find("| to: ")
            while start != -1:
                value_start = start + len("| to: ")
                end = text.find(" |", value_start)
                while end != -1:
                    found[text[value_start:end]] = line
                    end = text.find(" |", end + 1)
                start = text.find("| to: ", start + 1)
        return found

    def last_archive_line(self, archive_path: str) -> LedgerLine | None:
        """The last ``archive`` event whose line contains ``| to: <archive_path> |``."""
        return self._last_archive_by_target.get(archive_path)


# -- the ledger only grows ------------------------------------------------------------------

@lru_cache(maxsize=4)  # a merge's three trees and the follow pass; a parsed ledger is ~10x its bytes
def parsed_ledger(raw: bytes) -> Ledger:
    """The parsed ledger of these bytes, shared: the trees of a merge (and the snapshots of a
    pass) hold the same ledger, and parsing it is the costly part. A Ledger is read only: nothing
    may change one, or its lines, since every snapshot with the same bytes holds the same one."""
    return Ledger(raw)


@lru_cache(maxsize=4)  # one pass compares the same ledger with its kept copy and HEAD's, several times
def _line_counts(raw: bytes) -> Counter[bytes]:
    """Shared: read only (``-`` between two counts makes a new one)."""
    return Counter(line.rstrip(b"\r") for line in raw.split(b"\n") if line.startswith(b"- "))


def lost_lines(before: bytes, now: bytes) -> list[str]:
    """The ``- `` lines of an earlier copy of the ledger that ``now`` no longer holds, as often as
    they went missing; a changed line counts as lost. Compared as multisets, CR-blind: a merge
    sorts another machine's lines in between ours, and that is growth, not loss (the order
    itself is C2's to check)."""
    # A torn final line of the earlier copy (no line break) was never written: not a loss.
    missing = _line_counts(whole_lines(before)) - _line_counts(now)
    return [line.decode("utf-8", "surrogateescape") for line in missing.elements()]


# -- writing -------------------------------------------------------------------------------

LEDGER_HEADER = (
    "# Archive ledger\n\n"
    "<!-- Append-only. One line per archive move or restore, written BEFORE the move. "
    "Synced with the knowledge set. Never rewrite past lines. -->\n\n"
)


def ledger_stamp(ledger: Ledger | None, now_stamp: str) -> str:
    """The stamp for a new line: now, unless the ledger already holds a later one.

    Another machine's clock may run ahead; taking its stamp keeps the ledger in date order.
    """
    newest_stamp = ledger.newest_stamp if ledger else None
    if newest_stamp is None:
        return now_stamp
    if stamp_later(newest_stamp, now_stamp):
        return full_stamp(newest_stamp)
    return now_stamp


class UnwritableLedgerValue(ValueError):
    """A value that would not read back from the ledger as written (a line break splits the
    line, for good: the ledger is append-only)."""


def _writable(path: str, *values: str) -> None:
    reason = unsafe_name_reason(path)
    if reason:
        raise UnwritableLedgerValue(f"{shown(path)}: refusing to write it into archive/LEDGER.md: {reason}")
    for value in values:
        if "\n" in value or "\r" in value:
            raise UnwritableLedgerValue(f"refusing a ledger value holding a line break: {value[:70]!r}")


def archive_event(
    stamp: str, tier_path: str, sha256: str, sha256_norm: str, reason: str, spine_entry: str
) -> str:
    """An ``archive`` line; free text is escaped and ``spine-entry`` comes last."""
    _writable(tier_path, stamp, sha256, sha256_norm, reason, spine_entry)
    return (
        f"- {stamp} archive | from: {tier_path} | to: {ARCHIVE_PREFIX}{tier_path}"
        f" | sha256: {sha256} | sha256-norm: {sha256_norm}"
        f" | reason: {escape_free_text(reason)} | spine-entry: {escape_free_text(spine_entry)}"
    )


def restore_event(stamp: str, tier_path: str, reason: str, sha256: str | None, modified: bool = False) -> str:
    """A ``restore`` (or ``restore (modified)``) line; no checksum for a move never completed."""
    _writable(tier_path, stamp, reason, sha256 or "")
    event = "restore (modified)" if modified else "restore"
    checksum = f" | sha256: {sha256}" if sha256 else ""
    return (
        f"- {stamp} {event} | from: {ARCHIVE_PREFIX}{tier_path} | to: {tier_path}{checksum}"
        f" | reason: {escape_free_text(reason)}"
    )


# -- merging two machines' copies (STORE-FORMAT.md 1.7, 5) -----------------------------------

def _ledger_parts(raw: bytes) -> tuple[list[str], list[list[str]]]:
    """The header (lines before the first ``- `` line) and the blocks: each ``- `` line with the
    non-event lines that follow it, so nothing between events is dropped or detached."""
    header: list[str] = []
    blocks: list[list[str]] = []
    for line in lines_with_endings(decode(raw)):
        if line.replace("\r", "").startswith("- "):
            blocks.append([line])
        elif blocks:
            blocks[-1].append(line)
        else:
            header.append(line)
    return header, blocks


def _bare(line: str) -> str:
    return line.rstrip("\r\n")


def _sort_keys(blocks: list[list[str]]) -> list[tuple[str, str]]:
    """A key per block that never goes down within one side.

    A timed stamp is its instant; a date-only stamp (or a line without one) takes the key of
    the line above it when that is later, so sorting never moves a line above its own side's
    predecessor: each side's order, and with it "the last line per path decides", survives.
    """
    keys: list[tuple[str, str]] = []
    previous = ("", "")
    for block in blocks:
        match = EVENT_RE.match(block[0].replace("\r", ""))  # CR-blind, as a block is found
        if match:
            stamp = match.group(1)
            own = (stamp[:10], full_stamp(stamp)[11:19] if has_time(stamp) else "")
            previous = max(previous, own)
        keys.append(previous)
    return keys


def merge_ledgers(ours: bytes, theirs: bytes, base: bytes | None = None) -> bytes:
    """Two copies of an append-only ledger as one: the union of their lines, an exact duplicate
    kept once, stable-sorted by stamp (ties keep ours first). ``base`` is accepted for the
    three-way call shape but not needed: nothing is ever removed from a ledger, so a line on
    either side stays. Line endings are kept line by line."""
    if ours == theirs or not theirs:
        return ours
    if not ours:
        return theirs
    our_header, our_blocks = _ledger_parts(ours)
    their_header, their_blocks = _ledger_parts(theirs)
    present = {_bare(line) for line in our_header}
    header = our_header + [line for line in their_header if _bare(line).strip() and _bare(line) not in present]
    # Multiset union: a block appears as often as on the side that has it most often.
    seen: dict[tuple[str, ...], int] = {}
    for block in our_blocks:
        key = tuple(_bare(line) for line in block)
        seen[key] = seen.get(key, 0) + 1
    keyed = list(zip(_sort_keys(our_blocks), our_blocks, strict=True))
    for sort_key, block in zip(_sort_keys(their_blocks), their_blocks, strict=True):
        key = tuple(_bare(line) for line in block)
        if seen.get(key, 0) > 0:
            seen[key] -= 1
            continue
        keyed.append((sort_key, block))
    keyed.sort(key=lambda item: item[0])  # stable: ours before theirs on equal keys
    lines = header + [line for _, block in keyed for line in block]
    ending = dominant_ending(decode(ours))
    out = [line if line.endswith("\n") else line + ending for line in lines[:-1]]
    out += lines[-1:]
    return encode("".join(out))
