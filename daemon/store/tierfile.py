"""Knowledge files: frontmatter, activity stamps, markers, protected blocks (STORE-FORMAT.md 1.4).

The same reading applies to tier files, archived files and evidence twins; each is a
``KnowledgeFile`` over its raw bytes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from .text import (
    decode,
    dominant_ending,
    encode,
    escape_free_text,
    lines_with_endings,
    sha256_hex,
    sha256_norm_hex,
    split_lines,
    trim,
)

STAMP_IN_FILE_RE = re.compile(r"last_(?:validated|updated): *([0-9]{4}-[0-9]{2}-[0-9]{2})")
# Searched over whole texts: like grep, a marker never spans a line break.
NON_NEGOTIABLE_RE = re.compile(r"\[NON-NEGOTIABLE[^\]\n]*\]")
DIRECTIVE_RE = re.compile(r"\[DIRECTIVE[^\]\n]*\]")
# Protected markers plus the retrieval markers of Step 1d: lines that must never be lost.
MARKER_RE = re.compile(
    r"\[(?:NON-NEGOTIABLE|DIRECTIVE|UPDATED|DEPRECATED|CORRECTED|IMPORTANT|CONTEXT|PROVISIONAL)[^\]]*\]"
)
HEADING_RE = re.compile(r"^(#+) ")
CONTINUATION_RE = re.compile(r"^[ \t]+[^ \t]")
FENCE = "---"


@dataclass(frozen=True)
class Frontmatter:
    """The lines between the opening ``---`` and the next ``---`` (or the end of the file)."""

    lines: tuple[str, ...]
    closed: bool

    def value(self, key: str) -> str | None:
        """The checker's ``fm_value``: first ``key:`` line, key and following blanks removed.

        No quote handling and no trailing-space trim, exactly like the reference parser.
        """
        prefix = key + ":"
        for line in self.lines:
            if line.startswith(prefix):
                return line[len(prefix):].lstrip(" \t")
        return None

    def has(self, key: str) -> bool:
        return self.value(key) is not None


NO_FRONTMATTER = Frontmatter(lines=(), closed=False)


def parse_frontmatter(lines: list[str]) -> tuple[Frontmatter | None, int]:
    """Frontmatter (or None) and the index of the first body line."""
    if not lines or lines[0] != FENCE:
        return None, 0
    for index in range(1, len(lines)):
        if lines[index] == FENCE:
            return Frontmatter(tuple(lines[1:index]), closed=True), index + 1
    return Frontmatter(tuple(lines[1:]), closed=False), len(lines)


def parse_inline_list(value: str) -> list[str] | None:
    """Items of ``[a.md, b.md]``; None when the value is not an inline list."""
    if len(value) < 2 or not (value.startswith("[") and value.endswith("]")):
        return None
    items = (item.strip(" \t") for item in value[1:-1].split(","))
    return [item for item in items if item]


def protected_line_indexes(lines: list[str]) -> list[int]:
    """Indexes of the lines that belong to a marked heading section, a marked bullet block, or
    carry a marker.

    A marked heading's section runs to the next heading of equal or higher level; a marked
    ``- `` bullet travels with its indented continuation lines (STORE-FORMAT.md 1.4, 3.5 item 9).
    """
    selected: list[int] = []
    section_level = 0
    in_block = False
    for index, line in enumerate(lines):
        heading = HEADING_RE.match(line)
        if heading:
            level = len(heading.group(1))
            if section_level and level <= section_level:
                section_level = 0
            if MARKER_RE.search(line):
                section_level = level
                in_block = False
                selected.append(index)
                continue
        if section_level:
            selected.append(index)
            continue
        if line.startswith("- ") and MARKER_RE.search(line):
            in_block = True
            selected.append(index)
            continue
        if in_block and CONTINUATION_RE.match(line):
            selected.append(index)
            continue
        in_block = False
        if MARKER_RE.search(line):
            selected.append(index)
    return selected


def select_protected_lines(lines: list[str]) -> list[str]:
    """The protected and marker lines themselves (see ``protected_line_indexes``)."""
    return [lines[index] for index in protected_line_indexes(lines)]


FENCE_LINE_RE = re.compile(r"^---$", re.MULTILINE)
FIRST_HEADING_RE = re.compile(r"^#[^\n]*", re.MULTILINE)
DASH_LINE_RE = re.compile(r"^- ", re.MULTILINE)
PINNED_LINE_RE = re.compile(r"^lifecycle: pinned", re.MULTILINE)


@dataclass(frozen=True)
class _Facts:
    """What the checks read from a file, taken in one pass over its text."""

    line_count: int
    frontmatter: Frontmatter | None
    body_start: int
    newest_stamp: str | None
    first_heading: str | None
    non_negotiable: bool
    directives: int
    dash_lines: int
    pinned_line: bool  # some line starts "lifecycle: pinned": what the lossless check protects


def _read_facts(text: str) -> _Facts:
    flat = text.replace("\r", "")
    line_count = flat.count("\n") + (1 if flat and not flat.endswith("\n") else 0)
    frontmatter: Frontmatter | None = None
    body_start = 0
    if flat == FENCE or flat.startswith(FENCE + "\n"):
        fence = FENCE_LINE_RE.search(flat, len(FENCE) + 1)
        block = flat[len(FENCE) + 1:fence.start() if fence else len(flat)]
        head = block.split("\n")
        if head and head[-1] == "":
            head.pop()
        frontmatter = Frontmatter(tuple(head), closed=fence is not None)
        body_start = len(head) + (2 if fence else 1)
    stamps = STAMP_IN_FILE_RE.findall(flat)
    heading = FIRST_HEADING_RE.search(flat)
    return _Facts(
        line_count=line_count,
        frontmatter=frontmatter,
        body_start=body_start,
        newest_stamp=max(stamps) if stamps else None,
        first_heading=heading.group(0) if heading else None,
        non_negotiable=NON_NEGOTIABLE_RE.search(text) is not None,
        directives=len(DIRECTIVE_RE.findall(text)),
        dash_lines=len(DASH_LINE_RE.findall(flat)),
        pinned_line=PINNED_LINE_RE.search(flat) is not None,
    )


class KnowledgeFile:
    """One Markdown file of the store, read as raw bytes."""

    def __init__(self, path: str, raw: bytes) -> None:
        self.path = path
        self.raw = raw

    @property
    def text(self) -> str:
        # Decoded on demand and not kept: a 10,000-file store would otherwise hold every file
        # three times (bytes, text, lines). What the checks need is kept in ``_facts``.
        return decode(self.raw)

    @cached_property
    def lines(self) -> list[str]:
        return split_lines(self.text)

    @cached_property
    def _facts(self) -> _Facts:
        return _read_facts(self.text)

    @property
    def size(self) -> int:
        return len(self.raw)

    @property
    def line_count(self) -> int:
        return self._facts.line_count

    @property
    def frontmatter(self) -> Frontmatter:
        found = self._facts.frontmatter
        return found if found is not None else NO_FRONTMATTER

    @property
    def has_frontmatter(self) -> bool:
        return self._facts.frontmatter is not None

    @property
    def body_lines(self) -> list[str]:
        return self.lines[self._facts.body_start:]

    def fm(self, key: str) -> str | None:
        return self.frontmatter.value(key)

    @property
    def newest_stamp(self) -> str | None:
        """The activity stamp: the newest ``last_validated:``/``last_updated:`` date anywhere."""
        return self._facts.newest_stamp

    @property
    def pinned(self) -> bool:
        """Pinned as the catalog and C2 read it: the frontmatter value is exactly ``pinned``."""
        return self.fm("lifecycle") == "pinned"

    @property
    def looks_pinned(self) -> bool:
        """Pinned by any reading (a trailing blank, or a ``lifecycle: pinned`` line anywhere):
        the lifecycle never moves such a file, since C4 would count the move as a loss."""
        return self.pinned or self._facts.pinned_line

    @property
    def oversize_reason(self) -> str | None:
        return self.fm("oversize")

    @property
    def split_from(self) -> str | None:
        return self.fm("split_from")

    @cached_property
    def scope(self) -> str:
        """The catalog's second column: ``scope:``, else the first heading, else ``(no scope)``."""
        value = self.fm("scope") or trim((self._facts.first_heading or "").lstrip("#"))
        return escape_free_text(value) if value else "(no scope)"

    @property
    def has_non_negotiable(self) -> bool:
        return self._facts.non_negotiable

    @property
    def directive_count(self) -> int:
        return self._facts.directives

    @cached_property
    def sha256(self) -> str:
        return sha256_hex(self.raw)

    @cached_property
    def sha256_norm(self) -> str:
        return sha256_norm_hex(self.raw)

    @cached_property
    def protected_lines(self) -> list[str]:
        return select_protected_lines(self.lines)

    def dash_entry_count(self) -> int:
        """Lines starting ``- ``: the catalog's entry count for an evidence twin."""
        return self._facts.dash_lines


# -- edits (pure: bytes in, bytes out; every other line and ending kept) --------------------

INDEX_DETAIL = "## Index detail (moved from SPINE {date})"


def set_frontmatter(raw: bytes, updates: dict[str, str], drop: tuple[str, ...]) -> bytes:
    """Set keys in (or add) the frontmatter, drop others; every other line and ending kept."""
    text = decode(raw)
    ending = dominant_ending(text)
    lines = lines_with_endings(text)
    clean = [line.rstrip("\r\n") for line in lines]
    found, body_start = parse_frontmatter([c.replace("\r", "") for c in clean])
    if found is None or not found.closed:
        block = "---" + ending + "".join(f"{k}: {v}{ending}" for k, v in updates.items()) + "---" + ending
        return encode(block + text)
    head = lines[1:body_start - 1]
    kept: list[str] = []
    pending = dict(updates)
    for line in head:
        key = line.split(":", 1)[0]
        if key in drop:
            continue
        if key in pending and line.startswith(key + ":"):
            kept.append(f"{key}: {pending.pop(key)}{ending}")
            continue
        kept.append(line)
    kept += [f"{k}: {v}{ending}" for k, v in pending.items()]
    return encode("".join([lines[0], *kept, *lines[body_start - 1:]]))


def append_index_detail(raw: bytes, hook: str, today: str) -> bytes:
    text = decode(raw)
    ending = dominant_ending(text)
    if text and not text.endswith("\n"):
        text += ending
    return encode(text + ending + INDEX_DETAIL.format(date=today) + ending + ending + hook + ending)


def append_index_details(raw: bytes, hooks: list[str], today: str) -> bytes:
    """One ``## Index detail`` section holding several whole hooks, a blank line between them."""
    text = decode(raw)
    ending = dominant_ending(text)
    if text and not text.endswith("\n"):
        text += ending
    body = (ending + ending).join(hooks)
    return encode(text + ending + INDEX_DETAIL.format(date=today) + ending + ending + body + ending)
